//===- TileEnums.td - Enums of the tile dialect ------------*- tablegen -*-===//

#ifndef SINKATTN_DIALECT_TILE_IR_TILEENUMS_TD
#define SINKATTN_DIALECT_TILE_IR_TILEENUMS_TD

include "mlir/IR/EnumAttr.td"

def Tile_ReduceKind : I32EnumAttr<"ReduceKind",
    "combining function of tile.reduce", [
      I32EnumAttrCase<"max", 0>,
      I32EnumAttrCase<"min", 1>,
      I32EnumAttrCase<"sum", 2>
    ]> {
  let cppNamespace = "::sinkattn::tile";
}

def Tile_LayoutKind : I32EnumAttr<"LayoutKind",
    "how a register tile is distributed over the threads of a warpgroup", [
      I32EnumAttrCase<"accumulator", 0>,
      I32EnumAttrCase<"operand_a", 1>,
      I32EnumAttrCase<"rows", 2>
    ]> {
  let cppNamespace = "::sinkattn::tile";
  // The attribute wrapping it is #tile.layout (TileAttrs.td).
  let genSpecializedAttr = 0;
}

def Tile_CopyEngine : I32EnumAttr<"CopyEngine",
    "the hardware that moves a tile.copy between global and shared memory", [
      I32EnumAttrCase<"tma", 0>,
      I32EnumAttrCase<"cp_async", 1>,
      I32EnumAttrCase<"vector", 2>
    ]> {
  let cppNamespace = "::sinkattn::tile";
  // The attribute wrapping it is #tile.engine (TileAttrs.td).
  let genSpecializedAttr = 0;
}

#endif // SINKATTN_DIALECT_TILE_IR_TILEENUMS_TD
