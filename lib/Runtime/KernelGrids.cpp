//===- KernelGrids.cpp - Launch grids of shape-generic kernels ------------===//

#include "SinkAttn/Runtime/KernelGrids.h"

namespace sinkattn::rt {

Dim3 tmaCopyGrid(uint64_t m, uint64_t n, uint64_t tilesPerBlock) {
  uint64_t columnsPerBlock = kTmaCopyTile * tilesPerBlock;
  return {uint32_t((n + columnsPerBlock - 1) / columnsPerBlock),
          uint32_t((m + kTmaCopyTile - 1) / kTmaCopyTile), 1};
}

Expected<Bundle> tmaCopyForShape(const Bundle &bundle, uint64_t m, uint64_t n) {
  if (bundle.kernel != "tma-copy")
    return Status::error("the bundle holds a " + bundle.kernel +
                         " kernel, not tma-copy");
  const BundleParam *in = findParam(bundle, "in");
  if (!in || !in->descriptor)
    return Status::error(
        "the tma-copy bundle was compiled for M=" +
        std::to_string(in ? in->shape.at(0) : 0) + " N=" +
        std::to_string(in ? in->shape.at(1) : 0) +
        " only; compile it with --run-time-shapes to copy other shapes");
  SINKATTN_RT_ASSIGN_OR_RETURN(int64_t tilesPerBlock,
                               configInteger(bundle, "tiles_per_block"));
  if (m == 0 || n == 0)
    return Status::error("M=" + std::to_string(m) + " N=" + std::to_string(n) +
                         ": the matrix needs at least one element");
  if (n * dtypeSize(in->dtype) % 16 != 0)
    return Status::error("N=" + std::to_string(n) + ": rows of " +
                         std::to_string(n * dtypeSize(in->dtype)) +
                         " bytes; the tensor maps need a multiple of 16");
  if ((m + kTmaCopyTile - 1) / kTmaCopyTile > 65535)
    return Status::error("M=" + std::to_string(m) +
                         " needs more than 65535 blocks in y");
  SINKATTN_RT_ASSIGN_OR_RETURN(
      Bundle shaped,
      withTensorShapes(bundle, {{"in", {{m, n}, {}}}, {"out", {{m, n}, {}}}}));
  shaped.grid = tmaCopyGrid(m, n, uint64_t(tilesPerBlock));
  shaped.config["m"] = int64_t(m);
  shaped.config["n"] = int64_t(n);
  SINKATTN_RT_TRY(validateBundle(shaped));
  return shaped;
}

} // namespace sinkattn::rt
