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

#endif // SINKATTN_DIALECT_TILE_IR_TILEENUMS_TD
