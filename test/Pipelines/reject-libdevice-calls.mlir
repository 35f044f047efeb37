// RUN: sinkattn-opt %s --pass-pipeline='builtin.module(gpu.module(sinkattn-reject-libdevice-calls))' | FileCheck %s

// Calls of functions that are not libdevice's, and of an __nv_ function the
// module defines itself, stay as they are.
// CHECK-LABEL: gpu.module @kernels
// CHECK: llvm.func @helper(f32) -> f32
// CHECK: llvm.func @__nv_own(%{{.*}}: f32) -> f32
// CHECK: llvm.func @k(%[[X:.*]]: f32) -> f32
// CHECK-NEXT: %[[A:.*]] = llvm.call @helper(%[[X]]) : (f32) -> f32
// CHECK-NEXT: %[[B:.*]] = llvm.call @__nv_own(%[[A]]) : (f32) -> f32
// CHECK-NEXT: llvm.return %[[B]] : f32
gpu.module @kernels {
  llvm.func @helper(f32) -> f32
  llvm.func @__nv_own(%x: f32) -> f32 {
    llvm.return %x : f32
  }
  llvm.func @k(%x: f32) -> f32 {
    %a = llvm.call @helper(%x) : (f32) -> f32
    %b = llvm.call @__nv_own(%a) : (f32) -> f32
    llvm.return %b : f32
  }
}
