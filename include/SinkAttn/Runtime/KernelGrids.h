//===- KernelGrids.h - Launch grids of shape-generic kernels ----*- C++ -*-===//
//
// A kernel compiled for run-time shapes (bundle format 5) is launched with a
// grid that follows the shapes it is given. The builders and the launchers
// compute it here, so that both use the same formula.
//
//===----------------------------------------------------------------------===//

#ifndef SINKATTN_RUNTIME_KERNELGRIDS_H
#define SINKATTN_RUNTIME_KERNELGRIDS_H

#include "SinkAttn/Runtime/Bundle.h"
#include "SinkAttn/Runtime/Launch.h"

#include <cstdint>

namespace sinkattn::rt {

/// tma-copy's tiles are 64 x 64 elements.
inline constexpr uint64_t kTmaCopyTile = 64;

/// tma-copy: one block per strip of 64 rows and `tilesPerBlock` 64-column
/// tiles (the last ones clipped by the tensor maps).
Dim3 tmaCopyGrid(uint64_t m, uint64_t n, uint64_t tilesPerBlock);

/// A tma-copy bundle compiled for run-time shapes, for an M x N matrix: its
/// tensors, tensor maps, grid and config follow. Errors: a bundle compiled
/// for one shape (naming it), rows that are not a multiple of 16 bytes (the
/// tensor maps' row stride), or more than 65535 strips of rows.
Expected<Bundle> tmaCopyForShape(const Bundle &bundle, uint64_t m, uint64_t n);

} // namespace sinkattn::rt

#endif // SINKATTN_RUNTIME_KERNELGRIDS_H
