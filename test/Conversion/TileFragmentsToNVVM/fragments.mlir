// RUN: sinkattn-opt %s --convert-tile-fragments-to-nvvm --canonicalize | FileCheck %s

!acc = !tile.fragment<64x16xf32, #tile.layout<accumulator>>
!rows = !tile.fragment<64xf32, #tile.layout<rows>>

// A 64x16 accumulator is 8 registers per thread, a 64-row vector 2.
// CHECK-LABEL: func @fill
// Function boundaries are not converted (kernels keep fragments inside).
// CHECK: %[[V:.*]] = vector.broadcast %{{.*}} : f32 to vector<8xf32>
// CHECK: builtin.unrealized_conversion_cast %[[V]] : vector<8xf32> to !tile.fragment<64x16xf32, #tile.layout<accumulator>>
// CHECK: %[[R:.*]] = vector.broadcast %{{.*}} : f32 to vector<2xf32>
func.func @fill(%v: f32) -> (!acc, !rows) {
  %a = tile.fill %v : !acc
  %r = tile.fill %v : !rows
  return %a, %r : !acc, !rows
}

// The body runs once per register with the element's row and column:
// register 0 is (16 warp + lane/4, 2 (lane%4)), register 1 the next column,
// register 2 eight rows down. A row vector broadcasts by row (register 2
// reads row register 1). exp2 becomes ex2.approx.ftz, fma llvm.intr.fma.
// CHECK-LABEL: func @map
// CHECK: %[[TID:.*]] = gpu.thread_id x
// CHECK: %[[T:.*]] = arith.remui %[[TID]], %c128
// CHECK: %[[WARP:.*]] = arith.divui %[[T]], %c32
// CHECK: %[[LANE:.*]] = arith.remui %[[T]], %c32
// CHECK: %[[G:.*]] = arith.divui %[[LANE]], %c4
// CHECK: %[[Q:.*]] = arith.remui %[[LANE]], %c4
// CHECK: %[[W16:.*]] = arith.muli %[[WARP]], %c16
// CHECK: %[[ROW:.*]] = arith.addi %[[W16]], %[[G]]
// CHECK: %[[COL:.*]] = arith.muli %[[Q]], %c2
// CHECK: %[[X0:.*]] = vector.extract %{{.*}}[0] : f32 from vector<8xf32>
// CHECK: %[[M0:.*]] = vector.extract %{{.*}}[0] : f32 from vector<2xf32>
// CHECK: %[[F0:.*]] = llvm.intr.fma(%[[X0]], %{{.*}}, %[[M0]])
// CHECK: %[[E0:.*]] = llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f"(%[[F0]])
// CHECK: arith.cmpi ule, %[[COL]], %[[ROW]]
// CHECK: %[[COL1:.*]] = arith.addi %[[COL]], %c1
// CHECK: vector.extract %{{.*}}[1] : f32 from vector<8xf32>
// CHECK: arith.cmpi ule, %[[COL1]], %[[ROW]]
// CHECK: %[[ROW8:.*]] = arith.addi %[[ROW]], %c8
// CHECK: vector.extract %{{.*}}[2] : f32 from vector<8xf32>
// CHECK: vector.extract %{{.*}}[1] : f32 from vector<2xf32>
// CHECK: vector.from_elements {{.*}} : vector<8xf32>
func.func @map(%s: !acc, %m: !rows, %scale: f32) -> !acc {
  %zero = arith.constant 0.0 : f32
  %p = tile.map (%s, %m) : (!acc, !rows) -> !acc {
  ^bb0(%i: index, %j: index, %x: f32, %mi: f32):
    %t = math.fma %x, %scale, %mi : f32
    %e = math.exp2 %t : f32
    %keep = arith.cmpi ule, %j, %i : index
    %r = arith.select %keep, %e, %zero : f32
    tile.yield %r : f32
  }
  return %p : !acc
}

// Row max: the thread's 4 registers of each row (h = 0: 0, 1, 4, 5), then
// butterfly shuffles over lanes ^1 and ^2.
// CHECK-LABEL: func @reduce
// CHECK-DAG: %[[A:.*]] = vector.extract %[[S:.*]][0] : f32 from vector<8xf32>
// CHECK-DAG: %[[B:.*]] = vector.extract %[[S]][1] : f32 from vector<8xf32>
// CHECK-DAG: %[[C:.*]] = vector.extract %[[S]][4] : f32 from vector<8xf32>
// CHECK-DAG: %[[D:.*]] = vector.extract %[[S]][5] : f32 from vector<8xf32>
// CHECK-DAG: %[[AB:.*]] = arith.maxnumf %[[A]], %[[B]] : f32
// CHECK-DAG: %[[CD:.*]] = arith.maxnumf %[[C]], %[[D]] : f32
// CHECK: %[[ABCD:.*]] = arith.maxnumf %[[AB]], %[[CD]] : f32
// CHECK: %[[S1:.*]], %{{.*}} = gpu.shuffle  xor %[[ABCD]], %c1_i32, %c32_i32 : f32
// CHECK: %[[M1:.*]] = arith.maxnumf %[[ABCD]], %[[S1]] : f32
// CHECK: %[[S2:.*]], %{{.*}} = gpu.shuffle  xor %[[M1]], %c2_i32, %c32_i32 : f32
// CHECK: %[[ROW0:.*]] = arith.maxnumf %[[M1]], %[[S2]] : f32
// CHECK: vector.extract %[[S]][2]
// CHECK: gpu.shuffle  xor
// CHECK: gpu.shuffle  xor
// CHECK: vector.from_elements %[[ROW0]], %{{.*}} : vector<2xf32>
func.func @reduce(%s: !acc) -> !rows {
  %r = tile.reduce max %s along 1 : !acc -> !rows
  return %r : !rows
}

// Converting the accumulator to the bf16 A operand keeps every register.
// CHECK-LABEL: func @cast
// CHECK: %[[T:.*]] = arith.truncf %{{.*}} : vector<8xf32> to vector<8xbf16>
// CHECK: builtin.unrealized_conversion_cast %[[T]] : vector<8xbf16> to
func.func @cast(%s: !acc) -> !tile.fragment<64x16xbf16, #tile.layout<operand_a>> {
  %p = tile.cast %s : !acc to !tile.fragment<64x16xbf16, #tile.layout<operand_a>>
  return %p : !tile.fragment<64x16xbf16, #tile.layout<operand_a>>
}

// Stores to global memory skip elements past the tensor's end; a row
// vector is stored by one thread of each quad.
// CHECK-LABEL: func @store
// CHECK: %[[LEADER:.*]] = arith.cmpi eq, %{{.*}}, %c0 : index
// CHECK: %[[I:.*]] = arith.addi %{{.*}}, %{{.*}} : index
// CHECK: %[[IN:.*]] = arith.cmpi ult, %[[I]], %c100 : index
// CHECK: %[[OK:.*]] = arith.andi %[[LEADER]], %[[IN]] : i1
// CHECK: scf.if %[[OK]] {
// CHECK:   memref.store %{{.*}}, %{{.*}}[%{{.*}}, %[[I]]] : memref<2x100xf32>
// CHECK: }
func.func @store(%r: !rows, %out: memref<2x100xf32>, %b: index, %m0: index) {
  tile.store %r, %out[%b, %m0] : !rows, memref<2x100xf32>
  return
}

// tile.store {add}: the same bounds checks, with an atomic add per element.
// CHECK-LABEL: func @store_add
// CHECK: scf.if
// CHECK:   memref.atomic_rmw addf %{{.*}}, %{{.*}}[%{{.*}}, %{{.*}}] : (f32, memref<100x16xf32>) -> f32
// CHECK-NOT: memref.store
func.func @store_add(%a: !acc, %out: memref<100x16xf32>, %m0: index) {
  %c0 = arith.constant 0 : index
  tile.store %a, %out[%m0, %c0] {add} : !acc, memref<100x16xf32>
  return
}

// A plain store of a 2-D fragment writes each thread's two adjacent columns
// as one 8-byte vector where the pair's offset is provably even (an even
// column index, even strides and offset) and the last dimension even (a
// pair is inside or outside as a whole): one bounds check per pair.
// CHECK-LABEL: func @store_pairs
// CHECK-COUNT-4: vector.store %{{.*}}, %{{.*}}[%{{.*}}, %{{.*}}] {alignment = 8 : i64} : memref<100x16xf32>, vector<2xf32>
// CHECK-NOT: memref.store
func.func @store_pairs(%a: !acc, %out: memref<100x16xf32>, %m0: index) {
  %c0 = arith.constant 0 : index
  tile.store %a, %out[%m0, %c0] : !acc, memref<100x16xf32>
  return
}

// Through a subview with a dynamic offset: its column offset is provably
// even (a product with 16), the root's offset 0. bf16 pairs: 4 bytes.
// CHECK-LABEL: func @store_pairs_view
// CHECK-COUNT-4: vector.store %{{.*}} {alignment = 4 : i64} : memref<?x16xbf16, strided<[64, 1], offset: ?>>, vector<2xbf16>
// CHECK-NOT: memref.store
func.func @store_pairs_view(%a: !tile.fragment<64x16xbf16, #tile.layout<accumulator>>, %out: memref<100x64xbf16>, %row: index, %n: index, %h: index) {
  %c0 = arith.constant 0 : index
  %c16 = arith.constant 16 : index
  %col = arith.muli %h, %c16 : index
  %view = memref.subview %out[%row, %col] [%n, 16] [1, 1] : memref<100x64xbf16> to memref<?x16xbf16, strided<[64, 1], offset: ?>>
  tile.store %a, %view[%c0, %c0] : !tile.fragment<64x16xbf16, #tile.layout<accumulator>>, memref<?x16xbf16, strided<[64, 1], offset: ?>>
  return
}

// A run-time row stride (and offset) the argument declares a multiple of 8
// elements (tile.stride_multiple): a per-head view of token rows stores
// pairs. Without the declaration, the same store goes element by element.
// CHECK-LABEL: func @store_pairs_declared_stride
// CHECK-COUNT-4: vector.store %{{.*}} {alignment = 4 : i64} : memref<?x16xbf16, strided<[?, 1], offset: ?>>, vector<2xbf16>
// CHECK-NOT: memref.store
func.func @store_pairs_declared_stride(%a: !tile.fragment<64x16xbf16, #tile.layout<accumulator>>, %out: memref<?x?xbf16, strided<[?, 1], offset: ?>> {tile.stride_multiple = 8 : i64}, %row: index, %n: index, %h: index) {
  %c0 = arith.constant 0 : index
  %c16 = arith.constant 16 : index
  %col = arith.muli %h, %c16 : index
  %view = memref.subview %out[%row, %col] [%n, 16] [1, 1] : memref<?x?xbf16, strided<[?, 1], offset: ?>> to memref<?x16xbf16, strided<[?, 1], offset: ?>>
  tile.store %a, %view[%c0, %c0] : !tile.fragment<64x16xbf16, #tile.layout<accumulator>>, memref<?x16xbf16, strided<[?, 1], offset: ?>>
  return
}

// CHECK-LABEL: func @store_undeclared_stride
// CHECK-NOT: vector.store
// CHECK-COUNT-8: memref.store %{{.*}} : memref<?x16xbf16, strided<[?, 1], offset: ?>>
// CHECK-NOT: vector.store
func.func @store_undeclared_stride(%a: !tile.fragment<64x16xbf16, #tile.layout<accumulator>>, %out: memref<?x?xbf16, strided<[?, 1], offset: ?>>, %row: index, %n: index, %h: index) {
  %c0 = arith.constant 0 : index
  %c16 = arith.constant 16 : index
  %col = arith.muli %h, %c16 : index
  %view = memref.subview %out[%row, %col] [%n, 16] [1, 1] : memref<?x?xbf16, strided<[?, 1], offset: ?>> to memref<?x16xbf16, strided<[?, 1], offset: ?>>
  tile.store %a, %view[%c0, %c0] : !tile.fragment<64x16xbf16, #tile.layout<accumulator>>, memref<?x16xbf16, strided<[?, 1], offset: ?>>
  return
}

// Element by element where a pair's alignment is not provable: a column
// index that may be odd, an odd last dimension (the pair's second element
// could lie past the end alone).
// CHECK-LABEL: func @store_no_pairs
// CHECK-NOT: vector.store
// CHECK-COUNT-8: memref.store %{{.*}} : memref<100x16xf32>
// CHECK-NOT: vector.store
// CHECK-COUNT-8: memref.store %{{.*}} : memref<100x17xf32>
// CHECK-NOT: vector.store
func.func @store_no_pairs(%a: !acc, %out: memref<100x16xf32>, %odd: memref<100x17xf32>, %m0: index, %col: index) {
  %c0 = arith.constant 0 : index
  tile.store %a, %out[%m0, %col] : !acc, memref<100x16xf32>
  tile.store %a, %odd[%m0, %c0] : !acc, memref<100x17xf32>
  return
}

// Transposed A (dSᵀ, K x M in shared memory): the SS wgmma's imm-trans-a is
// 1 (B MN-major too: the last 1), and A's descriptor advances 16 rows of 128 bytes (2048 B = 128 in
// 16-byte units) per k-step, as an MN-major B does. The advance is an asm
// with side effects, so LLVM keeps it beside its wgmma: hoisted out of a
// loop, every k-step's 64-bit descriptor would hold registers of its own
// across the loop (the atomic backward spilled 352 bytes so; ptxas builds
// the adds on the uniform datapath).
// CHECK-LABEL: func @gemm_transposed_a
// CHECK: %[[B:.*]] = arith.ori %{{.*}}, %c4611686293322072064_i64 : i64
// CHECK: %[[A:.*]] = arith.ori %{{.*}}, %c4611686293322072064_i64 : i64
// CHECK: wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {{.*}}, $32, $33, p, 1, 1, 1, 1;{{.*}} %[[A]], %[[B]],
// CHECK: %[[B1:.*]] = llvm.inline_asm has_side_effects asm_dialect = att "add.s64 $0, $1, 128;", "=l,l" %[[B]] : (i64) -> i64
// CHECK-NEXT: %[[A1:.*]] = llvm.inline_asm has_side_effects asm_dialect = att "add.s64 $0, $1, 128;", "=l,l" %[[A]] : (i64) -> i64
// CHECK: wgmma.mma_async{{.*}} %[[A1]], %[[B1]],
func.func @gemm_transposed_a(%acc: !tile.fragment<64x64xf32, #tile.layout<accumulator>>)
    -> !tile.fragment<64x64xf32, #tile.layout<accumulator>> {
  %sA = memref.alloc() {alignment = 1024, tile.swizzle = 128 : i64} : memref<32x64xbf16, #gpu.address_space<workgroup>>
  %sB = memref.alloc() {alignment = 1024, tile.swizzle = 128 : i64} : memref<32x64xbf16, #gpu.address_space<workgroup>>
  %d = tile.gemm %sA, %sB, %acc {transpose_a} : memref<32x64xbf16, #gpu.address_space<workgroup>>, memref<32x64xbf16, #gpu.address_space<workgroup>>, !tile.fragment<64x64xf32, #tile.layout<accumulator>>
  return %d : !tile.fragment<64x64xf32, #tile.layout<accumulator>>
}

// SS wgmma: descriptors of both swizzled tiles (128B swizzle = 1 << 62,
// stride 1024 B = 64 << 32, leading = panel bytes >> 4 << 16), one
// m64n16k16 per k-step (K = 32: two, the second 32 bytes further along A's
// and B's 128-byte rows), then commit, wait and operand fences.
// CHECK-LABEL: func @gemm_ss
// CHECK: nvvm.wgmma.fence.aligned
// CHECK: llvm.inline_asm has_side_effects asm_dialect = att "{\0A.reg .pred p;\0Asetp.ne.b32 p, $10, 0;\0Awgmma.mma_async.sync.aligned.m64n16k16.f32.bf16.bf16 {$0, $1, $2, $3, $4, $5, $6, $7}, $8, $9, p, 1, 1, 0, 0;\0A}", "=f,=f,=f,=f,=f,=f,=f,=f,l,l,r,0,1,2,3,4,5,6,7"
// CHECK: llvm.inline_asm has_side_effects {{.*}}wgmma.mma_async
// CHECK: nvvm.wgmma.commit.group.sync.aligned
// CHECK: nvvm.wgmma.wait.group.sync.aligned 0
// CHECK-COUNT-8: llvm.inline_asm has_side_effects asm_dialect = att "", "=f,0"
func.func @gemm_ss(%acc: !acc) -> !acc {
  %sA = memref.alloc() {alignment = 1024, tile.swizzle = 128 : i64} : memref<64x64xbf16, #gpu.address_space<workgroup>>
  %sB = memref.alloc() {alignment = 1024, tile.swizzle = 128 : i64} : memref<16x64xbf16, #gpu.address_space<workgroup>>
  %d = tile.gemm %sA, %sB, %acc {transpose_b} : memref<64x64xbf16, #gpu.address_space<workgroup>>, memref<16x64xbf16, #gpu.address_space<workgroup>>, !acc
  return %d : !acc
}

// RS wgmma: A from registers as four packed bf16x2 words per k-step, B
// MN-major (wgmma's transposed B, the last immediate 1), N = 64.
// CHECK-LABEL: func @gemm_rs
// CHECK: vector.bitcast %{{.*}} : vector<8xbf16> to vector<4xi32>
// CHECK: llvm.inline_asm has_side_effects asm_dialect = att "{\0A.reg .pred p;\0Asetp.ne.b32 p, $37, 0;\0Awgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {{.*}}, $31}, {$32, $33, $34, $35}, $36, p, 1, 1, 1;\0A}", "=f,{{.*}},=f,r,r,r,r,l,r,0,1,{{.*}},31"
// CHECK-COUNT-32: llvm.inline_asm has_side_effects asm_dialect = att "", "=f,0"
func.func @gemm_rs(%p: !tile.fragment<64x16xbf16, #tile.layout<operand_a>>,
                   %acc: !tile.fragment<64x64xf32, #tile.layout<accumulator>>)
    -> !tile.fragment<64x64xf32, #tile.layout<accumulator>> {
  %sV = memref.alloc() {alignment = 1024, tile.swizzle = 128 : i64} : memref<16x64xbf16, #gpu.address_space<workgroup>>
  %d = tile.gemm %p, %sV, %acc : !tile.fragment<64x16xbf16, #tile.layout<operand_a>>, memref<16x64xbf16, #gpu.address_space<workgroup>>, !tile.fragment<64x64xf32, #tile.layout<accumulator>>
  return %d : !tile.fragment<64x64xf32, #tile.layout<accumulator>>
}

// A store into a swizzled shared tile writes element (row, col) at
// panel(col / 64) * rows * 64 + row * 64 + ((col % 64) / 8 ^ row % 8) * 8
// + col % 8, the TMA/wgmma 128-byte pattern: the plain panel-major offset
// with its chunk field XOR-ed by row % 8. A thread's registers are its base
// (row, col) plus constants (rows 8 apart, so one row % 8), so they take
// one XOR-ed base per chunk of a panel (8 at 16 bits), each register that
// base plus a constant (512 = 8 rows), through a flat view of the tile; a
// thread's two adjacent columns are adjacent elements, one 4-byte-aligned
// vector store per pair (32 for 64 registers), and no element store.
// CHECK-LABEL: func @store_swizzled
// CHECK: %[[FLAT:.*]] = memref.reinterpret_cast %{{.*}} to offset: [0], sizes: [8192], strides: [1] : memref<64x128xbf16, #gpu.address_space<workgroup>> to memref<8192xbf16, #gpu.address_space<workgroup>>
// CHECK-NEXT: %[[ROWS:.*]] = arith.muli %[[ROW:.*]], %c64
// CHECK-NEXT: %[[BASE:.*]] = arith.addi %[[ROWS]], %[[COL:.*]] : index
// CHECK-NEXT: %[[ROW8:.*]] = arith.remui %[[ROW]], %c8
// CHECK-NEXT: %[[MASK:.*]] = arith.muli %[[ROW8]], %c8
// CHECK-NEXT: %[[CHUNK0:.*]] = arith.xori %[[BASE]], %[[MASK]]
// CHECK: vector.store %{{.*}}, %[[FLAT]][%[[CHUNK0]]] {alignment = 4 : i64} : memref<8192xbf16, #gpu.address_space<workgroup>>, vector<2xbf16>
// CHECK-NEXT: %[[BELOW:.*]] = arith.addi %[[CHUNK0]], %c512
// CHECK: vector.store %{{.*}}, %[[FLAT]][%[[BELOW]]]
// CHECK-NEXT: %[[GROUP1:.*]] = arith.addi %[[BASE]], %c8
// CHECK-NEXT: %[[CHUNK1:.*]] = arith.xori %[[GROUP1]], %[[MASK]]
// CHECK: vector.store %{{.*}}, %[[FLAT]][%[[CHUNK1]]]
// CHECK-COUNT-29: vector.store %{{.*}} {alignment = 4 : i64} : memref<8192xbf16, #gpu.address_space<workgroup>>, vector<2xbf16>
// CHECK-NOT: vector.store
// CHECK-NOT: memref.store
// CHECK-NOT: scf.if
// CHECK: nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}
// CHECK: tile.copy
func.func @store_swizzled(%o: !tile.fragment<64x128xbf16, #tile.layout<accumulator>>, %out: memref<64x128xbf16>) {
  %c0 = arith.constant 0 : index
  %sO = memref.alloc() {alignment = 1024, tile.swizzle = 128 : i64} : memref<64x128xbf16, #gpu.address_space<workgroup>>
  tile.store %o, %sO[%c0, %c0] : !tile.fragment<64x128xbf16, #tile.layout<accumulator>>, memref<64x128xbf16, #gpu.address_space<workgroup>>
  tile.copy %sO, %out[%c0, %c0] : memref<64x128xbf16, #gpu.address_space<workgroup>>, memref<64x128xbf16>
  return
}

// An f32 fragment into 64 columns of a swizzled fp32 tile (a dQ share's
// half, staged for a TMA reduce-add): panels of 32 columns (128 bytes),
// 16-byte chunks of 4 elements. The column index 64 starts panel 2 (2 * 64
// rows * 32 = 4096 elements); 4 chunk bases (columns 0, 8, 16, 24 of a
// panel), the next panel 2048 elements on, 8 rows 256; each pair of
// adjacent columns one 8-byte-aligned vector store (16 for 32 registers).
// Shared memory serves 8-byte stores half a warp (4 rows) at a time, so
// threads of odd rows store the panel's other half (column ^ 16: registers
// 8 on) in each instruction, which keeps the half-warp's rows on distinct
// chunks (storeSwizzled).
// CHECK-LABEL: func @store_swizzled_f32_panel
// CHECK: %[[FLAT:.*]] = memref.reinterpret_cast %{{.*}} to offset: [0], sizes: [8192], strides: [1] : memref<64x128xf32, #gpu.address_space<workgroup>> to memref<8192xf32, #gpu.address_space<workgroup>>
// CHECK-NEXT: %[[ROWS:.*]] = arith.muli %[[ROW:.*]], %c32
// CHECK-NEXT: %[[PANEL:.*]] = arith.addi %[[ROWS]], %c4096
// CHECK-NEXT: %[[BASE:.*]] = arith.addi %[[PANEL]], %[[COL:.*]] : index
// CHECK-NEXT: %[[ROW8:.*]] = arith.remui %[[ROW]], %c8
// CHECK-NEXT: %[[MASK:.*]] = arith.muli %[[ROW8]], %c4
// CHECK-NEXT: %[[PARITY:.*]] = arith.andi %[[ROW]], %c1
// CHECK-NEXT: %[[ODD:.*]] = arith.cmpi ne, %[[PARITY]], %c0
// CHECK-NEXT: %[[SWAP:.*]] = arith.muli %[[PARITY]], %c16
// CHECK-NEXT: %[[GROUP0:.*]] = arith.addi %[[BASE]], %[[SWAP]]
// CHECK-NEXT: %[[CHUNK0:.*]] = arith.xori %[[GROUP0]], %[[MASK]]
// CHECK-NEXT: %[[R0:.*]] = vector.extract %[[FRAG:.*]][0] : f32 from vector<32xf32>
// CHECK-NEXT: %[[R8:.*]] = vector.extract %[[FRAG]][8] : f32 from vector<32xf32>
// CHECK-NEXT: %[[FIRST:.*]] = arith.select %[[ODD]], %[[R8]], %[[R0]] : f32
// CHECK-NEXT: %[[R1:.*]] = vector.extract %[[FRAG]][1] : f32 from vector<32xf32>
// CHECK-NEXT: %[[R9:.*]] = vector.extract %[[FRAG]][9] : f32 from vector<32xf32>
// CHECK-NEXT: %[[SECOND:.*]] = arith.select %[[ODD]], %[[R9]], %[[R1]] : f32
// CHECK-NEXT: %[[PAIR:.*]] = vector.from_elements %[[FIRST]], %[[SECOND]] : vector<2xf32>
// CHECK-NEXT: vector.store %[[PAIR]], %[[FLAT]][%[[CHUNK0]]] {alignment = 8 : i64} : memref<8192xf32, #gpu.address_space<workgroup>>, vector<2xf32>
// CHECK-NEXT: %[[BELOW:.*]] = arith.addi %[[CHUNK0]], %c256
// CHECK: vector.store %{{.*}}, %[[FLAT]][%[[BELOW]]]
// CHECK-NEXT: %[[COLUMN1:.*]] = arith.xori %[[SWAP]], %c8
// CHECK-NEXT: %[[GROUP1:.*]] = arith.addi %[[BASE]], %[[COLUMN1]]
// CHECK-NEXT: %[[CHUNK1:.*]] = arith.xori %[[GROUP1]], %[[MASK]]
// CHECK-NEXT: vector.extract %[[FRAG]][4]
// CHECK-NEXT: vector.extract %[[FRAG]][12]
// CHECK: vector.store %{{.*}}, %[[FLAT]][%[[CHUNK1]]]
// CHECK: %[[NEXT_PANEL:.*]] = arith.addi %[[CHUNK0]], %c2048
// CHECK-NEXT: vector.extract %[[FRAG]][16]
// CHECK-NEXT: vector.extract %[[FRAG]][24]
// CHECK: vector.store %{{.*}}, %[[FLAT]][%[[NEXT_PANEL]]]
// CHECK-COUNT-7: vector.store %{{.*}} {alignment = 8 : i64} : memref<8192xf32, #gpu.address_space<workgroup>>, vector<2xf32>
// CHECK-NOT: vector.store
// CHECK-NOT: memref.store
// CHECK: nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}
func.func @store_swizzled_f32_panel(%d: !tile.fragment<64x64xf32, #tile.layout<accumulator>>, %out: memref<64x128xf32>) {
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %sQ = memref.alloc() {alignment = 1024, tile.swizzle = 128 : i64} : memref<64x128xf32, #gpu.address_space<workgroup>>
  tile.store %d, %sQ[%c0, %c64] : !tile.fragment<64x64xf32, #tile.layout<accumulator>>, memref<64x128xf32, #gpu.address_space<workgroup>>
  tile.copy %sQ, %out[%c0, %c0] {add} : memref<64x128xf32, #gpu.address_space<workgroup>>, memref<64x128xf32>
  return
}

// A gemm whose accumulator is a zero fill does not read it: the first k
// step has scale-d 0 and undefined accumulator registers (no zeros are
// moved into them), the next steps accumulate (scale-d 1).
// CHECK-LABEL: func @gemm_from_zero
// CHECK-DAG: %[[ZERO:.*]] = arith.constant 0 : i32
// CHECK-DAG: %[[ONE:.*]] = arith.constant 1 : i32
// CHECK-DAG: %[[UNDEF:.*]] = llvm.mlir.poison : f32
// CHECK: llvm.inline_asm has_side_effects {{.*}}wgmma.mma_async{{.*}}, %[[ZERO]], %[[UNDEF]], %[[UNDEF]], %[[UNDEF]], %[[UNDEF]], %[[UNDEF]], %[[UNDEF]], %[[UNDEF]], %[[UNDEF]] :
// CHECK: llvm.inline_asm has_side_effects {{.*}}wgmma.mma_async{{.*}}, %[[ONE]], %{{.*}} :
// CHECK-NOT: wgmma.mma_async
// CHECK: nvvm.wgmma.commit.group.sync.aligned
func.func @gemm_from_zero() -> !acc {
  %zero = arith.constant 0.0 : f32
  %acc = tile.fill %zero : !acc
  %sA = memref.alloc() {alignment = 1024, tile.swizzle = 128 : i64} : memref<64x32xbf16, #gpu.address_space<workgroup>>
  %sB = memref.alloc() {alignment = 1024, tile.swizzle = 128 : i64} : memref<16x32xbf16, #gpu.address_space<workgroup>>
  %d = tile.gemm %sA, %sB, %acc {transpose_b} : memref<64x32xbf16, #gpu.address_space<workgroup>>, memref<16x32xbf16, #gpu.address_space<workgroup>>, !acc
  return %d : !acc
}

// An async gemm commits without waiting; tile.gemm_wait waits for all but
// `pending` groups and fences the registers of its operands.
// CHECK-LABEL: func @gemm_async
// CHECK: nvvm.wgmma.fence.aligned
// CHECK: wgmma.mma_async.sync.aligned.m64n16k16
// CHECK: nvvm.wgmma.commit.group.sync.aligned
// CHECK-NOT: nvvm.wgmma.wait.group.sync.aligned 0
// CHECK: nvvm.wgmma.wait.group.sync.aligned 1
// CHECK-COUNT-8: llvm.inline_asm has_side_effects asm_dialect = att "", "=f,0"
func.func @gemm_async(%acc: !acc) -> !acc {
  %sA = memref.alloc() {alignment = 1024, tile.swizzle = 128 : i64} : memref<64x64xbf16, #gpu.address_space<workgroup>>
  %sB = memref.alloc() {alignment = 1024, tile.swizzle = 128 : i64} : memref<16x64xbf16, #gpu.address_space<workgroup>>
  %d = tile.gemm %sA, %sB, %acc {transpose_b, async} : memref<64x64xbf16, #gpu.address_space<workgroup>>, memref<16x64xbf16, #gpu.address_space<workgroup>>, !acc
  %r = tile.gemm_wait %d pending 1 : !acc
  return %r : !acc
}

// A is 64 rows (from %row, a multiple of 8) of a 128x128 swizzled tile (two panels of 64 columns):
// its descriptor starts at the tile's start plus row * 128 bytes (inside
// the first panel), not at the row-major element offset; the second panel
// (k-steps 4..7) is one panel (128 rows * 128 bytes = 16 KiB) further.
// CHECK-LABEL: func @gemm_rows_of_two_panel_tile
// CHECK: %[[BASE:.*]], %[[OFFSET:.*]], %{{.*}}:2, %{{.*}}:2 = memref.extract_strided_metadata %[[A:.*]] :
// CHECK: %[[IN_TILE:.*]] = arith.remui %[[OFFSET]], %c16384
// CHECK: %[[ROW:.*]] = arith.divui %[[IN_TILE]], %c128
// CHECK: arith.muli %[[ROW]], %c128
// CHECK-COUNT-8: wgmma.mma_async.sync.aligned.m64n64k16
func.func @gemm_rows_of_two_panel_tile(%acc: !tile.fragment<64x64xf32, #tile.layout<accumulator>>, %row: index)
    -> !tile.fragment<64x64xf32, #tile.layout<accumulator>> {
  %sA = memref.alloc() {alignment = 1024, tile.swizzle = 128 : i64} : memref<128x128xbf16, #gpu.address_space<workgroup>>
  %sB = memref.alloc() {alignment = 1024, tile.swizzle = 128 : i64} : memref<64x128xbf16, #gpu.address_space<workgroup>>
  %rows = memref.subview %sA[%row, 0] [64, 128] [1, 1] : memref<128x128xbf16, #gpu.address_space<workgroup>> to memref<64x128xbf16, strided<[128, 1], offset: ?>, #gpu.address_space<workgroup>>
  %d = tile.gemm %rows, %sB, %acc {transpose_b} : memref<64x128xbf16, strided<[128, 1], offset: ?>, #gpu.address_space<workgroup>>, memref<64x128xbf16, #gpu.address_space<workgroup>>, !tile.fragment<64x64xf32, #tile.layout<accumulator>>
  return %d : !tile.fragment<64x64xf32, #tile.layout<accumulator>>
}

// B is the second 64-column panel of a 128x128 swizzled tile (a
// warpgroup's half of the head dim; MN-major: K x N, N contiguous): the
// descriptor adds the panel's offset, column / 64 panels of 128 rows * 128
// bytes, to the row's (here row 0).
// CHECK-LABEL: func @gemm_column_panel
// CHECK: %[[BASE:.*]], %[[OFFSET:.*]], %{{.*}}:2, %{{.*}}:2 = memref.extract_strided_metadata %[[B:.*]] :
// CHECK: %[[IN_TILE:.*]] = arith.remui %[[OFFSET]], %c16384
// CHECK: %[[COL:.*]] = arith.remui %[[IN_TILE]], %c128
// CHECK: %[[PANEL:.*]] = arith.divui %[[COL]], %c64
// CHECK: arith.muli %[[PANEL]], %c16384
// CHECK-COUNT-8: wgmma.mma_async.sync.aligned.m64n64k16
func.func @gemm_column_panel(%acc: !tile.fragment<64x64xf32, #tile.layout<accumulator>>, %wg: index)
    -> !tile.fragment<64x64xf32, #tile.layout<accumulator>> {
  %c64 = arith.constant 64 : index
  %col = arith.muli %wg, %c64 : index
  %sA = memref.alloc() {alignment = 1024, tile.swizzle = 128 : i64} : memref<128x64xbf16, #gpu.address_space<workgroup>>
  %sB = memref.alloc() {alignment = 1024, tile.swizzle = 128 : i64} : memref<128x128xbf16, #gpu.address_space<workgroup>>
  %panel = memref.subview %sB[0, %col] [128, 64] [1, 1] : memref<128x128xbf16, #gpu.address_space<workgroup>> to memref<128x64xbf16, strided<[128, 1], offset: ?>, #gpu.address_space<workgroup>>
  %d = tile.gemm %sA, %panel, %acc {transpose_a} : memref<128x64xbf16, #gpu.address_space<workgroup>>, memref<128x64xbf16, strided<[128, 1], offset: ?>, #gpu.address_space<workgroup>>, !tile.fragment<64x64xf32, #tile.layout<accumulator>>
  return %d : !tile.fragment<64x64xf32, #tile.layout<accumulator>>
}

// B is half of a 64-column panel (32 columns from column 32 * %wg; the D 64
// split's dQ panel): the descriptor adds the panel's offset and, inside
// the panel, the slice's first column's bytes (64 for the second half);
// wgmma takes N = 32.
// CHECK-LABEL: func @gemm_half_panel
// CHECK: %[[BASE:.*]], %[[OFFSET:.*]], %{{.*}}:2, %{{.*}}:2 = memref.extract_strided_metadata %[[B:.*]] :
// CHECK: %[[IN_TILE:.*]] = arith.remui %[[OFFSET]], %c8192
// CHECK: %[[COL:.*]] = arith.remui %[[IN_TILE]], %c64
// CHECK: %[[PANEL:.*]] = arith.divui %[[COL]], %c64
// CHECK: arith.muli %[[PANEL]], %c16384
// CHECK: %[[IN_PANEL:.*]] = arith.remui %[[COL]], %c64
// CHECK: arith.muli %[[IN_PANEL]], %c2
// CHECK-COUNT-8: wgmma.mma_async.sync.aligned.m64n32k16
func.func @gemm_half_panel(%acc: !tile.fragment<64x32xf32, #tile.layout<accumulator>>, %wg: index)
    -> !tile.fragment<64x32xf32, #tile.layout<accumulator>> {
  %c32 = arith.constant 32 : index
  %col = arith.muli %wg, %c32 : index
  %sA = memref.alloc() {alignment = 1024, tile.swizzle = 128 : i64} : memref<128x64xbf16, #gpu.address_space<workgroup>>
  %sB = memref.alloc() {alignment = 1024, tile.swizzle = 128 : i64} : memref<128x64xbf16, #gpu.address_space<workgroup>>
  %half = memref.subview %sB[0, %col] [128, 32] [1, 1] : memref<128x64xbf16, #gpu.address_space<workgroup>> to memref<128x32xbf16, strided<[64, 1], offset: ?>, #gpu.address_space<workgroup>>
  %d = tile.gemm %sA, %half, %acc {transpose_a} : memref<128x64xbf16, #gpu.address_space<workgroup>>, memref<128x32xbf16, strided<[64, 1], offset: ?>, #gpu.address_space<workgroup>>, !tile.fragment<64x32xf32, #tile.layout<accumulator>>
  return %d : !tile.fragment<64x32xf32, #tile.layout<accumulator>>
}

// A fragment stored into rows of a one-panel (64-column) swizzled tile: the
// view's offset (a multiple of 8 rows, the swizzle's period, so outside the
// chunk field) is part of the base that the XOR swizzles.
// CHECK-LABEL: func @store_swizzled_rows
// CHECK: %[[VIEW:.*]] = memref.subview %{{.*}}[%{{.*}}, 0] [64, 64] [1, 1]
// CHECK: %{{.*}}, %[[OFFSET:.*]], %{{.*}}:2, %{{.*}}:2 = memref.extract_strided_metadata %[[VIEW]]
// CHECK-NEXT: %[[FLAT:.*]] = memref.reinterpret_cast %[[VIEW]] to offset: [0], sizes: [8192], strides: [1]
// CHECK-NEXT: %[[ROWS:.*]] = arith.muli %[[ROW:.*]], %c64
// CHECK-NEXT: %[[AT_VIEW:.*]] = arith.addi %[[OFFSET]], %[[ROWS]]
// CHECK-NEXT: %[[BASE:.*]] = arith.addi %[[AT_VIEW]], %{{.*}} : index
// CHECK-NEXT: %[[ROW8:.*]] = arith.remui %[[ROW]], %c8
// CHECK-NEXT: %[[MASK:.*]] = arith.muli %[[ROW8]], %c8
// CHECK-NEXT: %[[CHUNK0:.*]] = arith.xori %[[BASE]], %[[MASK]]
// CHECK: vector.store %{{.*}}, %[[FLAT]][%[[CHUNK0]]] {alignment = 4 : i64} : memref<8192xbf16, #gpu.address_space<workgroup>>, vector<2xbf16>
func.func @store_swizzled_rows(%v: !tile.fragment<64x64xbf16, #tile.layout<accumulator>>, %wg: index) {
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %row = arith.muli %wg, %c64 : index
  %s = memref.alloc() {alignment = 1024, tile.swizzle = 128 : i64} : memref<128x64xbf16, #gpu.address_space<workgroup>>
  %rows = memref.subview %s[%row, 0] [64, 64] [1, 1] : memref<128x64xbf16, #gpu.address_space<workgroup>> to memref<64x64xbf16, strided<[64, 1], offset: ?>, #gpu.address_space<workgroup>>
  tile.store %v, %rows[%c0, %c0] : !tile.fragment<64x64xbf16, #tile.layout<accumulator>>, memref<64x64xbf16, strided<[64, 1], offset: ?>, #gpu.address_space<workgroup>>
  return
}

// tile.partial_reduce combines registers inside the thread only: 64x32 ->
// 64x16 adds column step j + 2 to step j (registers r and r + 8), with no
// shuffle.
// CHECK-LABEL: func @partial_reduce_half
// CHECK-NOT: gpu.shuffle
// CHECK-DAG: %[[A0:.*]] = vector.extract %[[S:.*]][0] : f32 from vector<16xf32>
// CHECK-DAG: %[[A8:.*]] = vector.extract %[[S]][8] : f32 from vector<16xf32>
// CHECK-DAG: %[[A7:.*]] = vector.extract %[[S]][7] : f32 from vector<16xf32>
// CHECK-DAG: %[[A15:.*]] = vector.extract %[[S]][15] : f32 from vector<16xf32>
// CHECK-DAG: %[[R0:.*]] = arith.addf %[[A0]], %[[A8]] : f32
// CHECK-DAG: %[[R7:.*]] = arith.addf %[[A7]], %[[A15]] : f32
// CHECK: vector.from_elements %[[R0]], %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[R7]] : vector<8xf32>
// CHECK-NOT: gpu.shuffle
// CHECK: return
func.func @partial_reduce_half(%s: !tile.fragment<64x32xf32, #tile.layout<accumulator>>) -> !tile.fragment<64x16xf32, #tile.layout<accumulator>> {
  %r = tile.partial_reduce sum %s : !tile.fragment<64x32xf32, #tile.layout<accumulator>> -> !tile.fragment<64x16xf32, #tile.layout<accumulator>>
  return %r : !tile.fragment<64x16xf32, #tile.layout<accumulator>>
}

// 128x32 -> 128x8, max: each 64-row block's registers stay in its block
// (result register 4 = row block 1, h 0, e 0 = source registers 16, 20,
// 24, 28), combined as a tree.
// CHECK-LABEL: func @partial_reduce_blocks
// CHECK-DAG: %[[B16:.*]] = vector.extract %[[T:.*]][16] : i32 from vector<32xi32>
// CHECK-DAG: %[[B20:.*]] = vector.extract %[[T]][20] : i32 from vector<32xi32>
// CHECK-DAG: %[[B24:.*]] = vector.extract %[[T]][24] : i32 from vector<32xi32>
// CHECK-DAG: %[[B28:.*]] = vector.extract %[[T]][28] : i32 from vector<32xi32>
// CHECK-DAG: %[[M1:.*]] = arith.maxsi %[[B16]], %[[B20]] : i32
// CHECK-DAG: %[[M2:.*]] = arith.maxsi %[[B24]], %[[B28]] : i32
// CHECK: %[[R4:.*]] = arith.maxsi %[[M1]], %[[M2]] : i32
// CHECK: vector.from_elements %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[R4]], %{{.*}}, %{{.*}}, %{{.*}} : vector<8xi32>
func.func @partial_reduce_blocks(%s: !tile.fragment<128x32xi32, #tile.layout<accumulator>>) -> !tile.fragment<128x8xi32, #tile.layout<accumulator>> {
  %r = tile.partial_reduce max %s : !tile.fragment<128x32xi32, #tile.layout<accumulator>> -> !tile.fragment<128x8xi32, #tile.layout<accumulator>>
  return %r : !tile.fragment<128x8xi32, #tile.layout<accumulator>>
}

// tile.scale_rows: the thread's two row factors (registers 0 and 1 of the
// row vector) are compared with 1 (unordered: NaN multiplies); only then
// does it multiply, register r by its row's factor (rows h = 0: registers
// 0, 1, 4, 5 of a 64x16 accumulator; h = 1: 2, 3, 6, 7). Otherwise the
// registers pass through unchanged.
// CHECK-LABEL: func @scale_rows
// CHECK-DAG: %[[ONE:.*]] = arith.constant 1.000000e+00 : f32
// CHECK-DAG: %[[A0:.*]] = vector.extract %[[A:.*]][0] : f32 from vector<2xf32>
// CHECK-DAG: %[[A1:.*]] = vector.extract %[[A]][1] : f32 from vector<2xf32>
// CHECK-DAG: %[[D0:.*]] = arith.cmpf une, %[[A0]], %[[ONE]] : f32
// CHECK-DAG: %[[D1:.*]] = arith.cmpf une, %[[A1]], %[[ONE]] : f32
// CHECK: %[[ANY:.*]] = arith.ori %[[D0]], %[[D1]] : i1
// CHECK: %[[R:.*]] = scf.if %[[ANY]] -> (vector<8xf32>) {
// CHECK-DAG: %[[X2:.*]] = vector.extract %[[O:.*]][2] : f32 from vector<8xf32>
// CHECK-DAG: %[[X4:.*]] = vector.extract %[[O]][4] : f32 from vector<8xf32>
// CHECK-DAG: arith.mulf %[[X2]], %[[A1]] : f32
// CHECK-DAG: arith.mulf %[[X4]], %[[A0]] : f32
// CHECK: scf.yield %{{.*}} : vector<8xf32>
// CHECK-NEXT: } else {
// CHECK-NEXT: scf.yield %[[O]] : vector<8xf32>
// CHECK-NEXT: }
func.func @scale_rows(%o: !acc, %a: !rows) -> !acc {
  %r = tile.scale_rows %o by %a : !acc, !rows
  return %r : !acc
}
