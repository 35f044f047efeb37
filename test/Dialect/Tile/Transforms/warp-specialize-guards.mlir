// RUN: sinkattn-opt %s --tile-warp-specialize --split-input-file | FileCheck %s

// A load and its reader under a guard (a block only some iterations
// process): the producer loads, and the consumers wait and arrive, under the
// same condition; both count the iterations that take the guard (a
// loop-carried phase counter) and derive stage and parity from that count,
// so skipped iterations do not advance the pipeline.
// CHECK-LABEL: gpu.func @guarded
// CHECK: tile.alloc_barrier [1, 1] : !tile.barriers<2>
// CHECK: tile.alloc_barrier [128, 128] : !tile.barriers<2>
// Producer.
// CHECK: scf.if
// CHECK:   scf.for %[[PK:.*]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%[[PCOUNT:.*]] = %{{.*}}) -> (index) {
// CHECK:     %[[PTAKE:.*]] = arith.cmpi ult, %[[PK]], %{{.*}} : index
// CHECK:     %[[PINC:.*]] = arith.select %[[PTAKE]], %{{.*}}, %{{.*}} : index
// CHECK:     %[[PNEXT:.*]] = arith.addi %[[PCOUNT]], %[[PINC]] : index
// CHECK:     %[[PSTAGE:.*]] = arith.remui %[[PCOUNT]], %c2
// CHECK:     scf.if %[[PTAKE]] {
// CHECK:       tile.mbarrier_wait_parity
// CHECK:       tile.tma_copy
// CHECK:       tile.mbarrier_arrive
// CHECK:     }
// CHECK:     scf.yield %[[PNEXT]] : index
// CHECK: tile.role = "producer"
// Consumers.
// CHECK: scf.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%{{.*}} = %{{.*}}, %[[CCOUNT:.*]] = %{{.*}}) -> (!tile.fragment<64x64xf32>, index) {
// CHECK:   %[[CSTAGE:.*]] = arith.remui %[[CCOUNT]], %c2
// CHECK:   %[[CROUND:.*]] = arith.divui %[[CCOUNT]], %c2
// CHECK:   %[[CPAR:.*]] = arith.remui %[[CROUND]], %c2
// CHECK:   %[[CTAKE:.*]] = arith.cmpi ult
// CHECK:   scf.if %[[CTAKE]]
// CHECK:     tile.mbarrier_wait_parity %{{.*}}[%{{.*}}], %[[CPAR]]
// CHECK:     tile.gemm
// CHECK:     tile.mbarrier_arrive
// CHECK:   } else {
// CHECK:   %[[CINC:.*]] = arith.select %[[CTAKE]]
// CHECK:   %[[CNEXT:.*]] = arith.addi %[[CCOUNT]], %[[CINC]]
// CHECK:   scf.yield %{{.*}}, %[[CNEXT]]
// CHECK: tile.role = "consumer"
module attributes {gpu.container_module} {
  gpu.module @m {
    gpu.func @guarded(%A: memref<1024x64xbf16>, %D: memref<64x64xf32>, %n: index, %limit: index) kernel
        attributes {known_block_size = array<i32: 128, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %zero = arith.constant 0.0 : f32
      %s = memref.alloc() : memref<64x64xbf16, #gpu.address_space<workgroup>>
      %init = tile.fill %zero : !tile.fragment<64x64xf32>
      %r = scf.for %k = %c0 to %n step %c1 iter_args(%acc = %init) -> (!tile.fragment<64x64xf32>) {
        %take = arith.cmpi ult, %k, %limit : index
        %next = scf.if %take -> (!tile.fragment<64x64xf32>) {
          tile.copy %A[%k, %c0], %s : memref<1024x64xbf16>, memref<64x64xbf16, #gpu.address_space<workgroup>>
          %d = tile.gemm %s, %s, %acc {transpose_b} : memref<64x64xbf16, #gpu.address_space<workgroup>>, memref<64x64xbf16, #gpu.address_space<workgroup>>, !tile.fragment<64x64xf32>
          scf.yield %d : !tile.fragment<64x64xf32>
        } else {
          scf.yield %acc : !tile.fragment<64x64xf32>
        }
        scf.yield %next : !tile.fragment<64x64xf32>
      } {tile.num_stages = 2}
      tile.store %r, %D[%c0, %c0] : !tile.fragment<64x64xf32>, memref<64x64xf32>
      gpu.return
    }
  }
}

// -----

// A guarded tile that the consumers read element by element (memref.load
// inside an scf.if nested in the guard): the wait and the arrive on its
// empty barrier stay under the guard, around the nested reader.
// CHECK-LABEL: gpu.func @guarded_load
// CHECK: tile.role = "producer"
// CHECK: scf.if
// CHECK:   tile.mbarrier_wait_parity
// CHECK-NEXT:   scf.if
// CHECK:     memref.load
// CHECK:   } else {
// CHECK-NEXT:     scf.yield
// CHECK-NEXT:   }
// CHECK-NEXT:   tile.mbarrier_arrive
// CHECK: tile.role = "consumer"
module attributes {gpu.container_module} {
  gpu.module @m {
    gpu.func @guarded_load(%S: memref<1024x64xf32>, %D: memref<1024xf32>, %n: index, %limit: index, %flag: i1) kernel
        attributes {known_block_size = array<i32: 128, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %zero = arith.constant 0.0 : f32
      %s = memref.alloc() : memref<2x64xf32, #gpu.address_space<workgroup>>
      %r = scf.for %k = %c0 to %n step %c1 iter_args(%acc = %zero) -> (f32) {
        %take = arith.cmpi ult, %k, %limit : index
        %next = scf.if %take -> (f32) {
          tile.copy %S[%k, %c0], %s : memref<1024x64xf32>, memref<2x64xf32, #gpu.address_space<workgroup>>
          %v = scf.if %flag -> (f32) {
            %x = memref.load %s[%c1, %c0] : memref<2x64xf32, #gpu.address_space<workgroup>>
            scf.yield %x : f32
          } else {
            scf.yield %zero : f32
          }
          %sum = arith.addf %acc, %v : f32
          scf.yield %sum : f32
        } else {
          scf.yield %acc : f32
        }
        scf.yield %next : f32
      } {tile.num_stages = 2}
      memref.store %r, %D[%c0] : memref<1024xf32>
      gpu.return
    }
  }
}
