// RUN: sinkattn-opt %s | sinkattn-opt | FileCheck %s

// `tile.mbarrier_ordered` marks a shared allocation whose accesses the
// kernel orders with its own mbarriers; it round-trips.
// CHECK-LABEL: func @mbarrier_ordered
// CHECK: memref.alloc() {tile.mbarrier_ordered} : memref<2x128x64xbf16, #gpu.address_space<workgroup>>
func.func @mbarrier_ordered() {
  %s = memref.alloc() {tile.mbarrier_ordered} : memref<2x128x64xbf16, #gpu.address_space<workgroup>>
  return
}
