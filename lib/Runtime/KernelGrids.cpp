//===- KernelGrids.cpp - Launch grids of shape-generic kernels ------------===//

#include "SinkAttn/Runtime/KernelGrids.h"
#include "SinkAttn/Runtime/TileSchedule.h"

#include <algorithm>
#include <cmath>

namespace sinkattn::rt {

Dim3 attentionBlockGrid(int64_t blocks, const SinkAttentionShape &shape) {
  if (shape.window > 0)
    return {uint32_t(blocks), uint32_t(shape.heads), uint32_t(shape.batch)};
  return {uint32_t(shape.heads / shape.kvHeads), uint32_t(blocks),
          uint32_t(shape.kvHeads * shape.batch)};
}

Status attentionGridFits(int64_t blocks, const SinkAttentionShape &shape,
                         bool keyBlocks) {
  constexpr int64_t kMaxGridYZ = 65535;
  const bool windowed = shape.window > 0;
  if (blocks > (windowed ? int64_t(INT32_MAX) : kMaxGridYZ))
    return Status::error(
        std::string("the longest ") + (keyBlocks ? "key" : "query") +
        " sequence needs " + std::to_string(blocks) +
        (keyBlocks ? " key" : " row") +
        " blocks, more than a grid dimension holds (" +
        std::to_string(windowed ? int64_t(INT32_MAX) : kMaxGridYZ) + ")");
  if (windowed && shape.heads > kMaxGridYZ)
    return Status::error(std::to_string(shape.heads) +
                         " heads exceed the 65535 blocks of a grid dimension");
  if (windowed ? shape.batch > kMaxGridYZ
               : shape.kvHeads * shape.batch > kMaxGridYZ)
    return Status::error(std::to_string(shape.batch) + " sequences" +
                         (windowed ? std::string()
                                   : " x " + std::to_string(shape.kvHeads) +
                                         " kv heads") +
                         " exceed the 65535 blocks of a grid dimension");
  return Status();
}

Status attentionTensorsFit(int64_t tokensQ, int64_t tokensKv,
                           const SinkAttentionShape &shape) {
  if (double(tokensQ) * double(shape.heads * shape.headDim) > double(INT32_MAX) ||
      double(tokensKv) * double(shape.kvHeads * shape.headDim) >
          double(INT32_MAX))
    return Status::error("the tensors have more than 2^31-1 elements (" +
                         std::to_string(tokensQ) + " query and " +
                         std::to_string(tokensKv) +
                         " key tokens): the kernels index them in 32 bits");
  return Status();
}

int64_t sinkFwdRowKeyBlocks(int64_t seqKv, int64_t window) {
  constexpr int64_t kBlockN = 128;
  int64_t blocks = (seqKv + kBlockN - 1) / kBlockN;
  if (window > 0)
    blocks = std::min(blocks, (window + kBlockN - 1) / kBlockN + 1);
  return blocks;
}

const char *sinkFwdAutoSchedule(int64_t headDim, int64_t rowKeyBlocks) {
  if (headDim == 128)
    return rowKeyBlocks >= kOverlapMinKeyBlocks ? "overlap" : "ws";
  return rowKeyBlocks >= kWarpSpecializedD64MinKeyBlocks ? "ws" : "plain";
}

bool sinkFwdRunsPersistent(const std::string &schedule, int64_t rowKeyBlocks,
                           int64_t window, int64_t tiles, int64_t smCount) {
  return schedule != "plain" && window == 0 &&
         rowKeyBlocks <= kPersistentMaxKeyBlocks && tiles > smCount;
}

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
  if (in && in->shape.size() != 2)
    return Status::error("the tma-copy bundle's 'in' is not a matrix");
  if (!in || !in->descriptor)
    return Status::error(
        "the tma-copy bundle was compiled for M=" +
        std::to_string(in ? in->shape.at(0) : 0) +
        " N=" + std::to_string(in ? in->shape.at(1) : 0) +
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

Expected<Bundle>
sinkFwdForSizes(const Bundle &bundle, const SinkAttentionShape &shape,
                int64_t tokensQ, int64_t tokensKv, int64_t maxSeqlenQ,
                const std::string &gridContext,
                const VarlenTokenStrides &strides,
                const SequenceOffsetUnits &units, int64_t smCount) {
  SINKATTN_RT_ASSIGN_OR_RETURN(int64_t blockM,
                               configInteger(bundle, "block_m"));
  // What the kernel compiled in: whether it masks causally and whether it
  // has a window (whose size it takes).
  if (!bundle.config.count("causal") ||
      !findParam(bundle, "cu_seqlens_q_unit") ||
      !findParam(bundle, "cu_seqlens_kv_unit"))
    return Status::error(
        "the " + bundle.kernel +
        " bundle was compiled by an older SinkAttn "
        "(heads, window, scale or the offsets' units compiled in); recompile "
        "it");
  if (units.q < 1 || units.q > INT32_MAX || units.kv < 1 ||
      units.kv > INT32_MAX)
    return Status::error("the sequence offsets' units (" +
                         std::to_string(units.q) + ", " +
                         std::to_string(units.kv) +
                         " tokens) are not in [1, 2^31-1]");
  // Units above 1 stand for sequences of one length, which the tokens are
  // then exactly (any other offsets would reach past them).
  if ((units.q != 1 && units.q * shape.batch != tokensQ) ||
      (units.kv != 1 && units.kv * shape.batch != tokensKv))
    return Status::error(
        "the sequence offsets' units (" + std::to_string(units.q) + ", " +
        std::to_string(units.kv) + " tokens) are not the lengths of " +
        std::to_string(shape.batch) + " sequences of " +
        std::to_string(tokensQ) + " query and " + std::to_string(tokensKv) +
        " key tokens");
  SINKATTN_RT_ASSIGN_OR_RETURN(int64_t causal, configInteger(bundle, "causal"));
  if (shape.causal != (causal != 0))
    return Status::error(
        "the " + bundle.kernel + " bundle is compiled " +
        (causal ? "causal" : "without the causal mask (--non-causal)") +
        "; the call asks for " +
        (shape.causal ? "causal attention" : "attention without it"));
  const bool windowed = findParam(bundle, "window") != nullptr;
  if (windowed != (shape.window > 0))
    return Status::error(
        "the " + bundle.kernel + " bundle is compiled " +
        (windowed ? "with a sliding window; give a window of at least 1 key "
                    "(or use a bundle compiled without --window)"
                  : "without a sliding window (window " +
                        std::to_string(shape.window) +
                        " needs one compiled with --window)"));
  if (shape.heads < 1 || shape.kvHeads < 1 || shape.heads % shape.kvHeads)
    return Status::error(std::to_string(shape.kvHeads) +
                         " kv heads do not divide " +
                         std::to_string(shape.heads) + " heads");
  if (shape.window > INT32_MAX)
    return Status::error("window " + std::to_string(shape.window) +
                         " is above 2^31-1");
  if (!std::isfinite(shape.scale))
    return Status::error("the softmax scale is not a finite number");
  const int64_t blocks = std::max<int64_t>(1, (maxSeqlenQ + blockM - 1) / blockM);
  // A persistent kernel runs min(N, tiles) blocks over a table of tiles
  // (sinkFwdTileTable) numbered in 32 bits.
  const bool persistent = findParam(bundle, "tiles") != nullptr;
  int64_t persistentBlocks = 0, tableSize = 0;
  if (persistent) {
    SINKATTN_RT_ASSIGN_OR_RETURN(int64_t maxBlocks,
                                 configInteger(bundle, "persistent_blocks"));
    if (maxBlocks < 1 || maxBlocks > 65535)
      return Status::error("the persistent sink-fwd bundle's "
                           "persistent_blocks (" +
                           std::to_string(maxBlocks) +
                           ") is not in [1, 65535]");
    const int64_t tiles = blocks * shape.heads * shape.batch;
    if (tiles + maxBlocks + 1 > INT32_MAX)
      return Status::error(
          gridContext + std::to_string(tiles) +
          " tiles (row blocks x heads x sequences) are more than the tile "
          "table's 32-bit entries can number");
    // One block per SM: a block past them would wait for a whole list.
    persistentBlocks = std::min(maxBlocks, tiles);
    if (smCount > 0)
      persistentBlocks = std::min(persistentBlocks, smCount);
    tableSize = persistentBlocks + 1 + tiles;
  } else {
    SINKATTN_RT_TRY(attentionGridFits(blocks, shape).withContext(gridContext));
  }
  SINKATTN_RT_TRY(attentionTensorsFit(tokensQ, tokensKv, shape));
  auto u = [](int64_t v) { return uint64_t(v); };
  const uint64_t qColumns = u(shape.heads * shape.headDim),
                 kvColumns = u(shape.kvHeads * shape.headDim);
  auto rows = [&](int64_t stride) {
    return stride ? std::vector<uint64_t>{u(stride), 1}
                  : std::vector<uint64_t>();
  };
  SINKATTN_RT_ASSIGN_OR_RETURN(
      Bundle shaped,
      withTensorShapes(bundle,
                       {{"q", {{u(tokensQ), qColumns}, rows(strides.q)}},
                        {"o", {{u(tokensQ), qColumns}, rows(strides.out)}},
                        {"k", {{u(tokensKv), kvColumns}, rows(strides.k)}},
                        {"v", {{u(tokensKv), kvColumns}, rows(strides.v)}},
                        {"sinks", {{u(shape.heads)}, {}}},
                        {"lse", {{u(shape.heads), u(tokensQ)}, {}}},
                        {"cu_seqlens_q", {{u(shape.batch + 1)}, {}}},
                        {"cu_seqlens_kv", {{u(shape.batch + 1)}, {}}}}));
  if (persistent) {
    SINKATTN_RT_ASSIGN_OR_RETURN(
        shaped, withTensorShapes(shaped, {{"tiles", {{u(tableSize)}, {}}}}));
    shaped.grid = {uint32_t(persistentBlocks), 1, 1};
  } else {
    shaped.grid = attentionBlockGrid(blocks, shape);
  }
  for (BundleParam &param : shaped.params) {
    // The softmax scale in log2 units, as the kernel's exp2 takes it.
    if (param.name == "scale_log2")
      param.floatValue = double(float(shape.scale * 1.4426950408889634));
    else if (param.name == "window")
      param.intValue = shape.window;
    else if (param.name == "cu_seqlens_q_unit")
      param.intValue = units.q;
    else if (param.name == "cu_seqlens_kv_unit")
      param.intValue = units.kv;
  }
  shaped.config["heads"] = shape.heads;
  shaped.config["kv_heads"] = shape.kvHeads;
  shaped.config["window"] = shape.window;
  shaped.config["scale"] = shape.scale;
  return shaped;
}

Expected<Bundle> sinkBwdForSizes(const Bundle &bundle,
                                 const SinkAttentionShape &shape,
                                 int64_t tokensQ, int64_t tokensKv,
                                 int64_t maxSeqlenQ, int64_t maxSeqlenKv,
                                 const std::string &gridContext,
                                 const VarlenTokenStrides &strides,
                                 const VarlenGradientStrides &gradientStrides,
                                 const SequenceOffsetUnits &units) {
  const BundleParam *q = findParam(bundle, "q");
  if (bundle.kernel != "sink-bwd" || !q || !q->descriptor ||
      bundle.launches.empty() || !findParam(bundle, "scale"))
    return Status::error("not a sink-bwd bundle compiled with "
                         "--run-time-shapes");
  // GQA: the query heads' shares of dK/dV, or --dq atomic's sums per kv
  // head.
  const bool shares = findParam(bundle, "dk_shares") != nullptr;
  const bool gqa = shares || findParam(bundle, "dk_accum") != nullptr;
  if (shape.heads != shape.kvHeads && !gqa)
    return Status::error(
        "the sink-bwd bundle was compiled for one query head per kv head; " +
        std::to_string(shape.heads) + " heads over " +
        std::to_string(shape.kvHeads) +
        " kv heads need one compiled with --kv-heads below --heads");
  // The forward's tensors, scalars and grid, the latter the setup launch's.
  SINKATTN_RT_ASSIGN_OR_RETURN(
      Bundle shaped, sinkFwdForSizes(bundle, shape, tokensQ, tokensKv,
                                     maxSeqlenQ, gridContext, strides, units));
  const Dim3 forwardGrid = shaped.grid;
  shaped.grid = bundle.grid;
  SINKATTN_RT_ASSIGN_OR_RETURN(int64_t dqRows,
                               configInteger(bundle, "dq_block_rows"));
  SINKATTN_RT_ASSIGN_OR_RETURN(int64_t dkdvKeys,
                               configInteger(bundle, "dkdv_block_keys"));
  if (dqRows < 1 || dkdvKeys < 1)
    return Status::error("the sink-bwd bundle's block sizes are not positive");
  constexpr int64_t kRows = 64;
  auto blocksOf = [](int64_t length, int64_t block) {
    return std::max<int64_t>(1, (length + block - 1) / block);
  };
  const int64_t queryBlocks = blocksOf(maxSeqlenQ, kRows);
  const int64_t dqBlocks = blocksOf(maxSeqlenQ, dqRows);
  const int64_t dkdvBlocks = blocksOf(maxSeqlenKv, dkdvKeys);
  // The dQ kernel counts a head's blocks (every sequence's) in 32 bits.
  if (dqBlocks * shape.batch > INT32_MAX)
    return Status::error(gridContext + std::to_string(dqBlocks) +
                         " row blocks x " + std::to_string(shape.batch) +
                         " sequences are more than the dQ kernel's 32-bit "
                         "count of a head's blocks");
  SINKATTN_RT_TRY(attentionGridFits(dkdvBlocks, shape, /*keyBlocks=*/true)
                      .withContext(gridContext));
  SINKATTN_RT_TRY(attentionGridFits(dqBlocks, shape).withContext(gridContext));
  // The row kernels' grid is {query blocks, heads, sequences}.
  if (shape.heads > 65535 || shape.batch > 65535)
    return Status::error(gridContext + std::to_string(shape.heads) +
                         " heads or " + std::to_string(shape.batch) +
                         " sequences exceed the 65535 blocks of a grid "
                         "dimension");
  auto u = [](int64_t v) { return uint64_t(v); };
  const BundleParam *stats = findParam(bundle, "row_stats");
  if (!stats || stats->shape.size() != 5)
    return Status::error("the sink-bwd bundle has no row_stats of 5 "
                         "dimensions");
  const uint64_t statsRows = stats->shape[3];
  // Scratch indexed in 32 bits: the shares and the row records.
  const double sharesElements =
      double(shape.heads) * double(tokensKv) * double(shape.headDim);
  const double statsElements = double(shape.batch) * double(shape.heads) *
                               double(queryBlocks) * double(statsRows) * kRows;
  if ((shares && sharesElements > double(INT32_MAX)) ||
      statsElements > double(INT32_MAX))
    return Status::error("the backward's scratch (GQA's dK/dV shares or the "
                         "row records) has more than 2^31-1 elements");
  const uint64_t qColumns = u(shape.heads * shape.headDim),
                 kvColumns = u(shape.kvHeads * shape.headDim);
  auto rows = [&](int64_t stride) {
    return stride ? std::vector<uint64_t>{u(stride), 1}
                  : std::vector<uint64_t>();
  };
  // --dq atomic's sink terms are per key row, its dQ an fp32 sum.
  const bool atomicDq = findParam(bundle, "dq_accum") != nullptr;
  const uint64_t termRows = u(atomicDq ? tokensKv : tokensQ);
  std::map<std::string, TensorShape> shapes = {
      {"do", {{u(tokensQ), qColumns}, rows(gradientStrides.dO)}},
      {"dq", {{u(tokensQ), qColumns}, rows(gradientStrides.dQ)}},
      {"dk", {{u(tokensKv), kvColumns}, rows(gradientStrides.dK)}},
      {"dv", {{u(tokensKv), kvColumns}, rows(gradientStrides.dV)}},
      {"dsinks", {{u(shape.heads)}, {}}},
      {"delta", {{u(shape.heads), u(tokensQ)}, {}}},
      {"sink_terms", {{u(shape.heads), termRows}, {}}},
      {"row_stats",
       {{u(shape.batch), u(shape.heads), u(queryBlocks), statsRows, u(kRows)},
        {}}}};
  if (shares)
    for (const char *name : {"dk_shares", "dv_shares"})
      shapes[name] = {{u(shape.heads), u(tokensKv), u(shape.headDim)}, {}};
  if (findParam(bundle, "share_counts"))
    shapes["share_counts"] = {{u(shape.batch * shape.kvHeads * dkdvBlocks)},
                              {}};
  if (findParam(bundle, "sink_counts"))
    shapes["sink_counts"] = {{u(shape.heads)}, {}};
  if (atomicDq)
    shapes["dq_accum"] = {{u(tokensQ), qColumns}, {}};
  if (findParam(bundle, "dk_accum"))
    for (const char *name : {"dk_accum", "dv_accum"})
      shapes[name] = {{u(shape.kvHeads), u(tokensKv), u(shape.headDim)}, {}};
  SINKATTN_RT_ASSIGN_OR_RETURN(shaped, withTensorShapes(shaped, shapes));
  for (BundleParam &param : shaped.params)
    if (param.name == "scale")
      param.floatValue = double(float(shape.scale));
  for (BundleLaunch &launch : shaped.launches) {
    if (launch.setup)
      launch.grid = forwardGrid;
    else if (launch.entry == "sink_bwd_preprocess")
      launch.grid = {uint32_t(queryBlocks), uint32_t(shape.heads),
                     uint32_t(shape.batch)};
    else if (launch.entry == "sink_bwd_dkdv")
      launch.grid = attentionBlockGrid(dkdvBlocks, shape);
    else if (launch.entry == "sink_bwd_dq")
      launch.grid = attentionBlockGrid(dqBlocks, shape);
    else if (launch.entry == "sink_bwd_dq_convert")
      launch.grid = {uint32_t(queryBlocks), uint32_t(shape.heads),
                     uint32_t(shape.batch)};
    else if (launch.entry == "sink_bwd_dkdv_sum")
      launch.grid = {uint32_t((uint64_t(tokensKv) * kvColumns + 255) / 256), 1,
                     1};
    else
      return Status::error("the sink-bwd bundle's launch '" + launch.entry +
                           "' has no grid for run-time shapes");
  }
  SINKATTN_RT_TRY(validateBundle(shaped));
  return shaped;
}

Expected<Bundle> sinkFwdForLengths(const Bundle &bundle,
                                   const SinkAttentionShape &shape,
                                   const std::vector<int64_t> &seqlensQ,
                                   const std::vector<int64_t> &seqlensKv) {
  const BundleParam *q = findParam(bundle, "q");
  const bool backward = bundle.kernel == "sink-bwd";
  if ((bundle.kernel != "sink-fwd" && !backward) || !shape.varlen() || !q ||
      !q->descriptor)
    return Status::error("the " + bundle.kernel +
                         " bundle was compiled for its own sequence lengths "
                         "only; compile " +
                         (backward ? "sink-bwd" : "sink-fwd") +
                         " --layout varlen with --run-time-shapes to run "
                         "others");
  if (seqlensQ.empty() || seqlensQ.size() != seqlensKv.size())
    return Status::error("the query and key lengths must list the same "
                         "sequences, at least one (got " +
                         std::to_string(seqlensQ.size()) + " and " +
                         std::to_string(seqlensKv.size()) + ")");
  int64_t tokensQ = 0, tokensKv = 0;
  for (size_t i = 0; i < seqlensQ.size(); ++i) {
    if (seqlensQ[i] < 0 || seqlensKv[i] < 0)
      return Status::error("sequence " + std::to_string(i) +
                           " has a negative length");
    if (__builtin_add_overflow(tokensQ, seqlensQ[i], &tokensQ) ||
        __builtin_add_overflow(tokensKv, seqlensKv[i], &tokensKv) ||
        tokensQ > INT32_MAX || tokensKv > INT32_MAX)
      return Status::error("the sequences hold more than 2^31-1 tokens (the "
                           "offsets are i32)");
  }
  if (tokensQ == 0 || tokensKv == 0)
    return Status::error("the sequences hold no query or no key token");
  SinkAttentionShape resized = shape;
  resized.batch = int64_t(seqlensQ.size());
  resized.seqQ = *std::max_element(seqlensQ.begin(), seqlensQ.end());
  resized.seqKv = *std::max_element(seqlensKv.begin(), seqlensKv.end());
  resized.cuSeqlensQ = offsetsOf(seqlensQ);
  resized.cuSeqlensKv = offsetsOf(seqlensKv);
  SINKATTN_RT_TRY(validate(resized));
  SINKATTN_RT_ASSIGN_OR_RETURN(
      Bundle shaped,
      backward
          ? sinkBwdForSizes(bundle, resized, tokensQ, tokensKv, resized.seqQ,
                            resized.seqKv)
          : sinkFwdForSizes(bundle, resized, tokensQ, tokensKv, resized.seqQ));
  shaped.config["batch"] = resized.batch;
  shaped.config["seq_q"] = resized.seqQ;
  shaped.config["seq_kv"] = resized.seqKv;
  shaped.config["seqlens_q"] = formatLengths(seqlensQ);
  shaped.config["seqlens_kv"] = formatLengths(seqlensKv);
  SINKATTN_RT_TRY(validateBundle(shaped));
  return shaped;
}

Expected<std::vector<int32_t>>
sinkFwdTileTableFor(const Bundle &shaped, const SinkAttentionShape &longest) {
  const BundleParam *tiles = findParam(shaped, "tiles");
  if (!tiles || tiles->shape.size() != 1)
    return Status::error("the sink-fwd bundle takes no tile table (it is not "
                         "persistent)");
  SINKATTN_RT_ASSIGN_OR_RETURN(int64_t blockM,
                               configInteger(shaped, "block_m"));
  std::vector<int32_t> table =
      sinkFwdTileTable(longest, blockM, int64_t(shaped.grid.x));
  if (table.size() != tiles->shape[0])
    return Status::error(
        "internal error: a tile table of " + std::to_string(table.size()) +
        " entries for a bundle shaped for " + std::to_string(tiles->shape[0]));
  return table;
}

} // namespace sinkattn::rt
