// RUN: sinkattn-opt %s --tile-warp-specialize --split-input-file -verify-diagnostics | FileCheck %s

// Declining is a remark, not an error: the kernel is left as it was (and
// keeps the ordinary pipelined path).


// CHECK-LABEL: gpu.func @no_block_size
// CHECK-NOT: tile.role
// CHECK: tile.num_stages = 2
module attributes {gpu.container_module} {
  gpu.module @m {
    // expected-remark @+1 {{warp specialization declined: the kernel has no known_block_size, so the consumer thread count is unknown}}
    gpu.func @no_block_size(%A: memref<1024x64xbf16>, %n: index) kernel {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %s = memref.alloc() : memref<64x64xbf16, #gpu.address_space<workgroup>>
      scf.for %i = %c0 to %n step %c1 {
        tile.copy %A[%i, %c0], %s : memref<1024x64xbf16>, memref<64x64xbf16, #gpu.address_space<workgroup>>
      } {tile.num_stages = 2}
      gpu.return
    }
  }
}

// -----

module attributes {gpu.container_module} {
  gpu.module @m {
    // expected-remark @+1 {{warp specialization declined: no pipelined loop (scf.for with tile.num_stages)}}
    gpu.func @no_loop(%A: memref<1024x64xbf16>) kernel attributes {known_block_size = array<i32: 128, 1, 1>} {
      %c0 = arith.constant 0 : index
      %s = memref.alloc() : memref<64x64xbf16, #gpu.address_space<workgroup>>
      tile.copy %A[%c0, %c0], %s : memref<1024x64xbf16>, memref<64x64xbf16, #gpu.address_space<workgroup>>
      gpu.return
    }
  }
}

// -----

module attributes {gpu.container_module} {
  gpu.module @m {
    // expected-remark @+1 {{warp specialization declined: threadIdx.y/z are used (known_block_size is not [C, 1, 1])}}
    gpu.func @two_d(%A: memref<1024x64xbf16>, %n: index) kernel attributes {known_block_size = array<i32: 128, 2, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %s = memref.alloc() : memref<64x64xbf16, #gpu.address_space<workgroup>>
      scf.for %i = %c0 to %n step %c1 {
        tile.copy %A[%i, %c0], %s : memref<1024x64xbf16>, memref<64x64xbf16, #gpu.address_space<workgroup>>
      } {tile.num_stages = 2}
      gpu.return
    }
  }
}

// -----

module attributes {gpu.container_module} {
  gpu.module @m {
    // expected-remark @+1 {{warp specialization declined: the block has 96 threads; warp specialization needs whole warpgroups and at most 896 consumers}}
    gpu.func @partial_warpgroup(%A: memref<1024x64xbf16>, %n: index) kernel attributes {known_block_size = array<i32: 96, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %s = memref.alloc() : memref<64x64xbf16, #gpu.address_space<workgroup>>
      scf.for %i = %c0 to %n step %c1 {
        tile.copy %A[%i, %c0], %s : memref<1024x64xbf16>, memref<64x64xbf16, #gpu.address_space<workgroup>>
      } {tile.num_stages = 2}
      gpu.return
    }
  }
}

// -----

module attributes {gpu.container_module} {
  gpu.module @m {
    // expected-remark @+1 {{warp specialization declined: a copy index depends on a value carried by the loop}}
    gpu.func @carried_index(%A: memref<1024x64xbf16>, %n: index) kernel attributes {known_block_size = array<i32: 128, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %zero = arith.constant 0.0 : f32
      %s = memref.alloc() : memref<64x64xbf16, #gpu.address_space<workgroup>>
      %acc0 = tile.fill %zero : !tile.fragment<64x64xf32>
      %r:2 = scf.for %i = %c0 to %n step %c1 iter_args(%row = %c0, %acc = %acc0) -> (index, !tile.fragment<64x64xf32>) {
        tile.copy %A[%row, %c0], %s : memref<1024x64xbf16>, memref<64x64xbf16, #gpu.address_space<workgroup>>
        %d = tile.gemm %s, %s, %acc : memref<64x64xbf16, #gpu.address_space<workgroup>>, memref<64x64xbf16, #gpu.address_space<workgroup>>, !tile.fragment<64x64xf32>
        %next = arith.addi %row, %c1 : index
        scf.yield %next, %d : index, !tile.fragment<64x64xf32>
      } {tile.num_stages = 2}
      gpu.return
    }
  }
}

// -----

module attributes {gpu.container_module} {
  gpu.module @m {
    // expected-remark @+1 {{warp specialization declined: a buffer the loop fills is also used outside the loop or by an op other than a tile.gemm (synchronous, or async with a tile.gemm_wait in its block that completes it) or a memref.load (directly or through a subview)}}
    gpu.func @buffer_after_loop(%A: memref<1024x64xbf16>, %n: index) kernel attributes {known_block_size = array<i32: 128, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %s = memref.alloc() : memref<64x64xbf16, #gpu.address_space<workgroup>>
      scf.for %i = %c0 to %n step %c1 {
        tile.copy %A[%i, %c0], %s : memref<1024x64xbf16>, memref<64x64xbf16, #gpu.address_space<workgroup>>
      } {tile.num_stages = 2}
      tile.copy %s, %A[%c0, %c0] : memref<64x64xbf16, #gpu.address_space<workgroup>>, memref<1024x64xbf16>
      gpu.return
    }
  }
}

// -----

module attributes {gpu.container_module} {
  gpu.module @m {
    // expected-remark @+1 {{warp specialization declined: the kernel is already warp-specialized}}
    gpu.func @user_written(%A: memref<1024x64xbf16>, %n: index) kernel attributes {known_block_size = array<i32: 128, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %s = memref.alloc() : memref<64x64xbf16, #gpu.address_space<workgroup>>
      nvvm.setmaxregister increase 240
      scf.for %i = %c0 to %n step %c1 {
        tile.copy %A[%i, %c0], %s : memref<1024x64xbf16>, memref<64x64xbf16, #gpu.address_space<workgroup>>
      } {tile.num_stages = 2}
      gpu.return
    }
  }
}

// -----

module attributes {gpu.container_module} {
  gpu.module @m {
    // expected-remark @+1 {{warp specialization declined: the pipelined loop has no TMA producer (no global -> shared tile.copy)}}
    gpu.func @no_producer(%n: index) kernel attributes {known_block_size = array<i32: 128, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      scf.for %i = %c0 to %n step %c1 {
      } {tile.num_stages = 2}
      gpu.return
    }
  }
}

// -----

module attributes {gpu.container_module} {
  gpu.module @m {
    // expected-remark @+1 {{warp specialization declined: a buffer the loop fills is also used outside the loop or by an op other than a tile.gemm (synchronous, or async with a tile.gemm_wait in its block that completes it) or a memref.load (directly or through a subview)}}
    gpu.func @async_reader(%A: memref<1024x64xbf16>, %n: index) kernel attributes {known_block_size = array<i32: 128, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %zero = arith.constant 0.0 : f32
      %s = memref.alloc() : memref<64x64xbf16, #gpu.address_space<workgroup>>
      %acc0 = tile.fill %zero : !tile.fragment<64x64xf32>
      %r = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %acc0) -> (!tile.fragment<64x64xf32>) {
        tile.copy %A[%i, %c0], %s : memref<1024x64xbf16>, memref<64x64xbf16, #gpu.address_space<workgroup>>
        %d = tile.gemm %s, %s, %acc {transpose_b, async} : memref<64x64xbf16, #gpu.address_space<workgroup>>, memref<64x64xbf16, #gpu.address_space<workgroup>>, !tile.fragment<64x64xf32>
        // Waiting with one gemm still pending does not say this one is done.
        %w = tile.gemm_wait %d pending 1 : !tile.fragment<64x64xf32>
        scf.yield %w : !tile.fragment<64x64xf32>
      } {tile.num_stages = 2}
      gpu.return
    }
  }
}

// -----

module attributes {gpu.container_module} {
  gpu.module @m {
    // expected-remark @+1 {{warp specialization declined: a copy index, guard or loop bound depends on the thread (the producer's threads are not the consumers')}}
    gpu.func @thread_index(%A: memref<1024x64xbf16>, %n: index) kernel attributes {known_block_size = array<i32: 128, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %zero = arith.constant 0.0 : f32
      %tid = gpu.thread_id x
      %s = memref.alloc() : memref<64x64xbf16, #gpu.address_space<workgroup>>
      %acc0 = tile.fill %zero : !tile.fragment<64x64xf32>
      %r = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %acc0) -> (!tile.fragment<64x64xf32>) {
        %row = arith.addi %i, %tid : index
        tile.copy %A[%row, %c0], %s : memref<1024x64xbf16>, memref<64x64xbf16, #gpu.address_space<workgroup>>
        %d = tile.gemm %s, %s, %acc {transpose_b} : memref<64x64xbf16, #gpu.address_space<workgroup>>, memref<64x64xbf16, #gpu.address_space<workgroup>>, !tile.fragment<64x64xf32>
        scf.yield %d : !tile.fragment<64x64xf32>
      } {tile.num_stages = 2}
      gpu.return
    }
  }
}

// -----

module attributes {gpu.container_module} {
  gpu.module @m {
    // expected-remark @+1 {{warp specialization declined: the kernel reads the block size or warp numbering, which the producer warpgroup would change}}
    gpu.func @block_dim(%A: memref<1024x64xbf16>, %n: index) kernel attributes {known_block_size = array<i32: 128, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %bd = gpu.block_dim x
      %s = memref.alloc() : memref<64x64xbf16, #gpu.address_space<workgroup>>
      scf.for %i = %c0 to %n step %c1 {
        tile.copy %A[%i, %c0], %s : memref<1024x64xbf16>, memref<64x64xbf16, #gpu.address_space<workgroup>>
      } {tile.num_stages = 2}
      gpu.return
    }
  }
}

// -----

// A loop bound loaded from an argument the kernel also writes: the
// producer could read a different value than the consumers did.
module attributes {gpu.container_module} {
  gpu.module @m {
    // expected-remark @+1 {{warp specialization declined: a copy index or loop bound is computed by 'memref.load', which is not a pure op the producer could repeat}}
    gpu.func @written_bound(%A: memref<1024x64xbf16>, %bounds: memref<2xi32>, %out: memref<64x64xf32>) kernel attributes {known_block_size = array<i32: 128, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %zero = arith.constant 0 : i32
      %n32 = memref.load %bounds[%c0] : memref<2xi32>
      memref.store %zero, %bounds[%c1] : memref<2xi32>
      %n = arith.index_castui %n32 : i32 to index
      %f0 = arith.constant 0.0 : f32
      %s = memref.alloc() : memref<64x64xbf16, #gpu.address_space<workgroup>>
      %init = tile.fill %f0 : !tile.fragment<64x64xf32>
      %res = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %init) -> (!tile.fragment<64x64xf32>) {
        tile.copy %A[%i, %c0], %s : memref<1024x64xbf16>, memref<64x64xbf16, #gpu.address_space<workgroup>>
        %next = tile.gemm %s, %s, %acc {transpose_b} : memref<64x64xbf16, #gpu.address_space<workgroup>>, memref<64x64xbf16, #gpu.address_space<workgroup>>, !tile.fragment<64x64xf32>
        scf.yield %next : !tile.fragment<64x64xf32>
      } {tile.num_stages = 2}
      tile.store %res, %out[%c0, %c0] : !tile.fragment<64x64xf32>, memref<64x64xf32>
      gpu.return
    }
  }
}

// -----

// A loop bound loaded from a global that is not constant: some thread may
// write it, so the producer could read another value than the consumers.
module attributes {gpu.container_module} {
  gpu.module @m {
    memref.global "private" @bounds : memref<2xi32> = dense<[4, 8]>
    // expected-remark @+1 {{warp specialization declined: a copy index or loop bound is computed by 'memref.load', which is not a pure op the producer could repeat}}
    gpu.func @mutable_global_bound(%A: memref<1024x64xbf16>, %out: memref<64x64xf32>) kernel attributes {known_block_size = array<i32: 128, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %bounds = memref.get_global @bounds : memref<2xi32>
      %n32 = memref.load %bounds[%c0] : memref<2xi32>
      %n = arith.index_castui %n32 : i32 to index
      %f0 = arith.constant 0.0 : f32
      %s = memref.alloc() : memref<64x64xbf16, #gpu.address_space<workgroup>>
      %init = tile.fill %f0 : !tile.fragment<64x64xf32>
      %res = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %init) -> (!tile.fragment<64x64xf32>) {
        tile.copy %A[%i, %c0], %s : memref<1024x64xbf16>, memref<64x64xbf16, #gpu.address_space<workgroup>>
        %next = tile.gemm %s, %s, %acc {transpose_b} : memref<64x64xbf16, #gpu.address_space<workgroup>>, memref<64x64xbf16, #gpu.address_space<workgroup>>, !tile.fragment<64x64xf32>
        scf.yield %next : !tile.fragment<64x64xf32>
      } {tile.num_stages = 2}
      tile.store %res, %out[%c0, %c0] : !tile.fragment<64x64xf32>, memref<64x64xf32>
      gpu.return
    }
  }
}

// -----

// A gemm inside a region between an async reader and its wait may or may
// not issue: the wait's `pending 1` cannot be counted on to complete it.
module attributes {gpu.container_module} {
  gpu.module @m {
    // expected-remark @+1 {{warp specialization declined: a buffer the loop fills is also used outside the loop or by an op other than a tile.gemm (synchronous, or async with a tile.gemm_wait in its block that completes it) or a memref.load (directly or through a subview)}}
    gpu.func @gemm_in_region(%A: memref<1024x64xbf16>, %n: index, %flag: i1, %out: memref<64x64xf32>) kernel attributes {known_block_size = array<i32: 128, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %zero = arith.constant 0.0 : f32
      %s = memref.alloc() : memref<64x64xbf16, #gpu.address_space<workgroup>>
      %t = memref.alloc() : memref<64x64xbf16, #gpu.address_space<workgroup>>
      %acc0 = tile.fill %zero : !tile.fragment<64x64xf32>
      %r = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %acc0) -> (!tile.fragment<64x64xf32>) {
        tile.copy %A[%i, %c0], %s : memref<1024x64xbf16>, memref<64x64xbf16, #gpu.address_space<workgroup>>
        %d = tile.gemm %s, %s, %acc {transpose_b, async} : memref<64x64xbf16, #gpu.address_space<workgroup>>, memref<64x64xbf16, #gpu.address_space<workgroup>>, !tile.fragment<64x64xf32>
        %e = scf.if %flag -> (!tile.fragment<64x64xf32>) {
          %g = tile.gemm %t, %t, %acc0 {transpose_b} : memref<64x64xbf16, #gpu.address_space<workgroup>>, memref<64x64xbf16, #gpu.address_space<workgroup>>, !tile.fragment<64x64xf32>
          scf.yield %g : !tile.fragment<64x64xf32>
        } else {
          scf.yield %acc0 : !tile.fragment<64x64xf32>
        }
        %w = tile.gemm_wait %d pending 1 : !tile.fragment<64x64xf32>
        scf.yield %w : !tile.fragment<64x64xf32>
      } {tile.num_stages = 2}
      tile.store %r, %out[%c0, %c0] : !tile.fragment<64x64xf32>, memref<64x64xf32>
      gpu.return
    }
  }
}

// -----

// A synchronous gemm between an async one and its `pending 1` wait: the
// analysis counts only async gemms as issued after it, so it does not rely
// on the synchronous gemm's own wait and declines (conservatively).
module attributes {gpu.container_module} {
  gpu.module @m {
    // expected-remark @+1 {{warp specialization declined: a buffer the loop fills is also used outside the loop or by an op other than a tile.gemm (synchronous, or async with a tile.gemm_wait in its block that completes it) or a memref.load (directly or through a subview)}}
    gpu.func @sync_between(%A: memref<1024x64xbf16>, %n: index, %out: memref<64x64xf32>) kernel attributes {known_block_size = array<i32: 128, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %zero = arith.constant 0.0 : f32
      %s = memref.alloc() : memref<64x64xbf16, #gpu.address_space<workgroup>>
      %t = memref.alloc() : memref<64x64xbf16, #gpu.address_space<workgroup>>
      %acc0 = tile.fill %zero : !tile.fragment<64x64xf32>
      %r = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %acc0) -> (!tile.fragment<64x64xf32>) {
        tile.copy %A[%i, %c0], %s : memref<1024x64xbf16>, memref<64x64xbf16, #gpu.address_space<workgroup>>
        %d = tile.gemm %s, %s, %acc {transpose_b, async} : memref<64x64xbf16, #gpu.address_space<workgroup>>, memref<64x64xbf16, #gpu.address_space<workgroup>>, !tile.fragment<64x64xf32>
        %g = tile.gemm %t, %t, %acc0 {transpose_b} : memref<64x64xbf16, #gpu.address_space<workgroup>>, memref<64x64xbf16, #gpu.address_space<workgroup>>, !tile.fragment<64x64xf32>
        %w = tile.gemm_wait %d pending 1 : !tile.fragment<64x64xf32>
        %sum = tile.map (%w, %g) : (!tile.fragment<64x64xf32>, !tile.fragment<64x64xf32>) -> !tile.fragment<64x64xf32> {
        ^bb0(%ii: index, %jj: index, %x: f32, %y: f32):
          %z = arith.addf %x, %y : f32
          tile.yield %z : f32
        }
        scf.yield %sum : !tile.fragment<64x64xf32>
      } {tile.num_stages = 2}
      tile.store %r, %out[%c0, %c0] : !tile.fragment<64x64xf32>, memref<64x64xf32>
      gpu.return
    }
  }
}
