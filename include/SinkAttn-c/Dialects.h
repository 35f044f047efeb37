//===- Dialects.h - C API of the tile dialect ---------------------*- C -*-===//
//
// The `tile` dialect's handle for the MLIR C API (mlir-c/IR.h):
//
//   MlirDialectHandle tile = mlirGetDialectHandle__tile__();
//   mlirDialectHandleLoadDialect(tile, context);
//
//===----------------------------------------------------------------------===//

#ifndef SINKATTN_C_DIALECTS_H
#define SINKATTN_C_DIALECTS_H

#include "mlir-c/IR.h"

#ifdef __cplusplus
extern "C" {
#endif

MLIR_DECLARE_CAPI_DIALECT_REGISTRATION(Tile, tile);

#ifdef __cplusplus
}
#endif

#endif // SINKATTN_C_DIALECTS_H
