// RUN: sinkattn-opt %s -split-input-file -verify-diagnostics --pass-pipeline='builtin.module(gpu.module(convert-tile-to-nvgpu))' | FileCheck %s

// A kernel may use the 232448 bytes of shared memory a block may use on
// sm_90: its allocations (231408 bytes), the 1024 bytes of alignment slack
// of the dynamic window and its mbarriers (2 x 8 bytes) reach it exactly.
// CHECK-LABEL: gpu.func @at_the_limit
// CHECK-SAME: sinkattn.dynamic_shared_memory_bytes = 232432
gpu.module @kernels {
  gpu.func @at_the_limit() kernel {
    %a = memref.alloc() : memref<115704xbf16, 3>
    %bars = tile.alloc_barrier [1, 1] : !tile.barriers<2>
    gpu.return
  }
}

// -----

// 16 bytes more are refused at compile time, not by the driver at launch;
// the mbarriers (static shared memory) count against the same limit.
gpu.module @kernels {
  // expected-error @+2 {{'gpu.func' op kernel needs 232464 bytes of shared memory, the GPU allows at most 232448}}
  // expected-note @+1 {{231424 bytes of shared allocations (aligned), 1024 bytes of alignment slack and 16 bytes of mbarriers}}
  gpu.func @above_the_limit() kernel {
    %a = memref.alloc() : memref<512xbf16, 3>
    // expected-note @+1 {{the largest shared allocation takes 230400 bytes}}
    %b = memref.alloc() : memref<900x64xf32, 3>
    %bars = tile.alloc_barrier [1, 1] : !tile.barriers<2>
    gpu.return
  }
}

// -----

// An allocation larger than the limit is refused on its own, before its
// size could overflow a sum.
gpu.module @kernels {
  // expected-error @+1 {{'gpu.func' op kernel needs more than 2^63 bytes of shared memory, the GPU allows at most 232448}}
  gpu.func @huge_allocation() kernel {
    // expected-note @+1 {{this shared allocation alone takes more than 2^63 bytes}}
    %a = memref.alloc() : memref<4294967296x4294967296xf32, 3>
    gpu.return
  }
}
