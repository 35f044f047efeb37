//===- Dialects.cpp - C API of the tile dialect ---------------------------===//

#include "SinkAttn-c/Dialects.h"

#include "SinkAttn/Dialect/Tile/IR/TileDialect.h"
#include "mlir/CAPI/Registration.h"

MLIR_DEFINE_CAPI_DIALECT_REGISTRATION(Tile, tile, sinkattn::tile::TileDialect)
