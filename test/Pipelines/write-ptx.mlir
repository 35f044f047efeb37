// sinkattn-write-ptx writes one file per gpu.binary object holding PTX and
// leaves the IR unchanged; a binary with several objects gets numbered files.
// RUN: rm -rf %t && sinkattn-opt %s --sinkattn-write-ptx=output-dir=%t/nested/dir | FileCheck %s --check-prefix=IR
// RUN: FileCheck %s --check-prefix=ONE --input-file=%t/nested/dir/one.ptx
// RUN: FileCheck %s --check-prefix=TWO0 --input-file=%t/nested/dir/two.0.ptx
// RUN: FileCheck %s --check-prefix=TWO1 --input-file=%t/nested/dir/two.1.ptx

// IR: gpu.binary @one
// IR: gpu.binary @two
// ONE: .entry first
// TWO0: .entry second
// TWO1: .entry third

module attributes {gpu.container_module} {
  gpu.binary @one [#gpu.object<#nvvm.target<chip = "sm_90a">, assembly = ".entry first()\0A{\0Aret;\0A}\0A">]
  gpu.binary @two [#gpu.object<#nvvm.target<chip = "sm_90a">, assembly = ".entry second()">,
                   #gpu.object<#nvvm.target<chip = "sm_90">, assembly = ".entry third()">]
}
