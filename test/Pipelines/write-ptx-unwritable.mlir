// An output directory that cannot be created is a diagnostic, not a crash.
// RUN: rm -rf %t && touch %t
// RUN: not sinkattn-opt %s --sinkattn-write-ptx=output-dir=%t/sub -o /dev/null 2>&1 | FileCheck %s

// CHECK: error: cannot create directory '{{.*}}/sub': Not a directory
module attributes {gpu.container_module} {
  gpu.binary @k [#gpu.object<#nvvm.target<chip = "sm_90a">, assembly = ".entry k()">]
}
