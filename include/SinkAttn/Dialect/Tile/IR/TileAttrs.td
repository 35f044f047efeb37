//===- TileAttrs.td - Attributes of the tile dialect -------*- tablegen -*-===//

#ifndef SINKATTN_DIALECT_TILE_IR_TILEATTRS_TD
#define SINKATTN_DIALECT_TILE_IR_TILEATTRS_TD

include "SinkAttn/Dialect/Tile/IR/TileDialect.td"
include "SinkAttn/Dialect/Tile/IR/TileEnums.td"
include "mlir/IR/AttrTypeBase.td"

def Tile_LayoutAttr : EnumAttr<Tile_Dialect, Tile_LayoutKind, "layout"> {
  let summary = "register layout of a fragment: which thread holds which element";
  let description = [{
    Every layout distributes a fragment over the 128 threads of one
    warpgroup (thread `t` = `tid % 128`, warp `w = t / 32`, lane group
    `g = (t % 32) / 4`, quad position `q = t % 4`), in blocks of 64 rows:
    row block `b` covers rows `64b ... 64b + 63`.

    * `#tile.layout<accumulator>`: a 2-D `MxN` tile (M a multiple of 64, N a
      multiple of 8) as the accumulator of `wgmma.m64nNk16`. Thread `t`
      holds rows `64b + 16w + g + 8h` (h in {0, 1}) and columns
      `8j + 2q + e` (e in {0, 1}); register `b·N/2 + 4j + 2h + e`.
    * `#tile.layout<operand_a>`: a 2-D `MxK` tile of 16-bit floats (K a
      multiple of 16) as the register A operand of `wgmma` (RS): the same
      placement as the accumulator, so converting an `f32` accumulator to
      `bf16`/`f16` gives the A operand without moving data; the four 32-bit
      registers of k-step `s` are the packed pairs at registers
      `b·K/2 + 8s ... + 7`.
    * `#tile.layout<rows>`: a 1-D tile of `M` elements holding one value per
      row of an accumulator-layout tile (the result of a row reduction, the
      input of a row broadcast): thread `t` holds rows `64b + 16w + g + 8h`,
      register `2b + h`; the four threads of a quad hold the same values.

    ```mlir
    !tile.fragment<64x128xf32, #tile.layout<accumulator>>
    !tile.fragment<64x128xbf16, #tile.layout<operand_a>>
    !tile.fragment<64xf32, #tile.layout<rows>>
    ```
  }];
  let cppClassName = "LayoutAttr";
  let assemblyFormat = "`<` $value `>`";
}

def Tile_CopyEngineAttr : EnumAttr<Tile_Dialect, Tile_CopyEngine, "engine"> {
  let summary = "which hardware a tile.copy load uses";
  let description = [{
    * `#tile.engine<tma>` (the default when a `tile.copy` has no `engine`):
      the Tensor Memory Accelerator. One thread issues the copy; its bytes
      complete on an mbarrier. The global tensor is described by a tensor
      map (innermost dimension contiguous, other strides multiples of 16
      bytes).
    * `#tile.engine<cp_async>`: `cp.async`, a SIMT copy: every thread of
      the issuing role moves its share of the tile in 16-byte chunks
      (`cp.async.cg ... 16`), completed through `cp.async` commit groups
      or `cp.async.mbarrier.arrive.noinc`. Use it where a tensor map cannot
      describe the source; the global rows and the tile's column offset must
      be 16-byte aligned.

    ```mlir
    tile.copy %A[%m, %k], %sA {engine = #tile.engine<cp_async>}
        : memref<4096x4096xbf16>, memref<128x64xbf16, 3>
    ```
  }];
  let cppClassName = "CopyEngineAttr";
  let assemblyFormat = "`<` $value `>`";
}

#endif // SINKATTN_DIALECT_TILE_IR_TILEATTRS_TD
