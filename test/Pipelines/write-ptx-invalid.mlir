// RUN: sinkattn-opt %s -split-input-file -verify-diagnostics --sinkattn-write-ptx=output-dir=%t

module attributes {gpu.container_module} {
  // expected-error @+1 {{object 0 of gpu.binary @cubin is not PTX assembly (compile with format=isa)}}
  gpu.binary @cubin [#gpu.object<#nvvm.target<chip = "sm_90a">, bin = "\7FELF">]
}
