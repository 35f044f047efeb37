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

#endif // SINKATTN_DIALECT_TILE_IR_TILEATTRS_TD
