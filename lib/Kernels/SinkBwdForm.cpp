//===- SinkBwdForm.cpp - The attention-sink backward's form ---------------===//
//
// docs/design.md, "Backward forms kept (issue 44)", lists the forms and the
// measurements that keep them; docs/PERF.md has the numbers behind the
// thresholds below.
//
//===----------------------------------------------------------------------===//

#include "SinkBwdForm.h"

#include <algorithm>

using namespace mlir;
using namespace sinkattn;
using namespace sinkattn::kernels;

namespace {
/// Auto's shared-tile backward (kAutoWarpgroups): query rows and keys of
/// at least this many 64-wide blocks (S 12288).
constexpr int64_t kSharedTilesMinBlocks = 192;
/// The split at D 64 keeps its K and V rows in registers for query ranges
/// of at least this many rows, where the loop is long enough to repay the
/// prologue's loads.
constexpr int64_t kKvRegistersMinRows = 8192;
/// Auto's split (without --deterministic): from these lengths on it was
/// measured at least level with the deterministic form (docs/PERF.md).
constexpr int64_t kAutoSplitMinRowsD128 = 2048;
constexpr int64_t kAutoDeferredMinRowsD64 = 8192;

enum class AutoSplit { None, Columns, Deferred };

/// The split auto picks for `shape`: where it was measured faster (causal
/// rows without a window, fixed lengths) and the form flags given allow
/// it, or where --dq-split deferred names it; none with --deterministic.
AutoSplit autoSplit(const KernelConfig &config,
                    const rt::SinkAttentionShape &shape) {
  if (config.deterministic || config.dqWarpgroups != kAutoWarpgroups ||
      (config.dkdvWarpgroups != kAutoWarpgroups && config.dkdvWarpgroups != 2))
    return AutoSplit::None;
  // Naming the deferred split asks for the split.
  if (config.dqSplit == "deferred")
    return AutoSplit::Deferred;
  if (config.schedule != "auto" || config.window > 0 || shape.varlen())
    return AutoSplit::None;
  const int64_t rows = std::min(shape.seqQ, shape.seqKv);
  if (shape.headDim == 128 && rows >= kAutoSplitMinRowsD128)
    return AutoSplit::Columns;
  if (shape.headDim == 64 && rows >= kAutoDeferredMinRowsD64 &&
      config.dqSplit != "columns")
    return AutoSplit::Deferred;
  return AutoSplit::None;
}
} // namespace

FailureOr<SinkBwdForm>
SinkBwdForm::resolve(MLIRContext &context, const KernelConfig &config,
                     const rt::SinkAttentionShape &shape) {
  auto fail = [&]() {
    return emitError(UnknownLoc::get(&context)) << "sink-bwd: ";
  };
  const bool hasWindow = config.window > 0;
  if (config.dq != "auto" && config.dq != "separate" && config.dq != "atomic")
    return fail() << "--dq must be auto, separate (deterministic: a dQ "
                     "kernel of its own) or atomic (dQ accumulated in the "
                     "dK/dV kernel by fp32 TMA reduce-add), got '"
                  << config.dq << "'";
  if (config.dq == "atomic" && config.deterministic)
    return fail() << "--dq atomic adds dQ's shares in a varying order, so "
                     "its gradients are not bit-reproducible: drop "
                     "--deterministic, or use --dq separate";
  if (config.dqSplit == "keys")
    return fail() << "--dq-split keys was removed (each warpgroup adding its "
                     "own 64 keys' dQ share: slower than the columns in every "
                     "measured cell); use --dq-split columns (the default) "
                     "or, at --head-dim 64, deferred";
  if (config.dqSplit != "auto" && config.dqSplit != "columns" &&
      config.dqSplit != "deferred")
    return fail() << "--dq-split must be columns or deferred, got '"
                  << config.dqSplit << "'";
  SinkBwdForm form;
  std::string dqSplit = config.dqSplit;
  int64_t requestedDkdvWarpgroups = config.dkdvWarpgroups;
  if (config.dq == "auto") {
    AutoSplit split = autoSplit(config, shape);
    form.atomicDq = split != AutoSplit::None;
    if (form.atomicDq) {
      requestedDkdvWarpgroups = 2;
      if (dqSplit == "auto")
        dqSplit = split == AutoSplit::Deferred ? "deferred" : "columns";
    }
  } else {
    form.atomicDq = config.dq == "atomic";
  }
  if (dqSplit == "auto")
    dqSplit = "columns";
  // --dq atomic is FlashAttention 3's split, 128 keys per dK/dV block.
  if (form.atomicDq && requestedDkdvWarpgroups != 2)
    return fail() << "--dq atomic without --dkdv-warpgroups 2 (64-key blocks, "
                     "each adding a whole fp32 dQ tile per query block) was "
                     "removed: slower than the default in every measured "
                     "cell; use --dq atomic --dkdv-warpgroups 2 (the split), "
                     "or --dq separate (the default)";
  auto checkWarpgroups = [&](llvm::StringRef flag,
                             int64_t warpgroups) -> LogicalResult {
    if (warpgroups == kAutoWarpgroups)
      return success();
    if (warpgroups == 3)
      return fail() << "--" << flag
                    << " 3 was removed (three warpgroups "
                       "sharing a block's tiles, D 64 only: slower than one "
                       "in every measured cell); use 1 or 2";
    if (warpgroups < 1 || warpgroups > 2)
      return fail() << "--" << flag << " " << warpgroups
                    << " is not supported: 1 or 2";
    return success();
  };
  form.dqSplitDeferred = dqSplit == "deferred";
  if (form.dqSplitDeferred && !form.atomicDq)
    return fail() << "--dq-split " << dqSplit
                  << " divides dQ's share between the two dK/dV warpgroups "
                     "of --dq atomic --dkdv-warpgroups 2";
  if (form.dqSplitDeferred && shape.headDim != 64)
    return fail() << "--dq-split deferred is supported at --head-dim 64 "
                     "only: at "
                  << shape.headDim
                  << " its dS ring and per-warpgroup fp32 dQ panels take "
                     "the block's shared memory to the 227 KB a block may "
                     "use (above it with GQA)";
  if (failed(checkWarpgroups("dq-warpgroups", config.dqWarpgroups)) ||
      failed(checkWarpgroups("dkdv-warpgroups", config.dkdvWarpgroups)))
    return failure();
  if (form.atomicDq) {
    if (config.dqWarpgroups > 1)
      return fail() << "--dq-warpgroups " << config.dqWarpgroups
                    << " needs --dq separate (--dq atomic has no dQ kernel)";
    form.dkdvWarpgroups = requestedDkdvWarpgroups;
  } else {
    // The deterministic form: the two kernels' counts are one choice (one
    // kernel's tiles shared without the other's won no measured cell), a
    // count given for one kernel is the other's too.
    const int64_t dq = config.dqWarpgroups, dkdv = config.dkdvWarpgroups;
    if (shape.headDim == 64 && (dq == 2 || dkdv == 2)) {
      auto diag = fail();
      diag << (dq == 2 ? "--dq-warpgroups 2" : "--dkdv-warpgroups 2")
           << (dq == 2 && dkdv == 2 ? " --dkdv-warpgroups 2" : "")
           << " without --dq atomic at --head-dim 64 was removed (the "
              "deterministic form's warpgroups sharing a block's tiles: "
              "slower than one in every measured cell); use 1";
      if (config.deterministic)
        diag << " (--deterministic rules out the split)";
      else
        diag << ", or the split: --dq atomic --dkdv-warpgroups 2";
      return diag;
    }
    if (dq != kAutoWarpgroups && dkdv != kAutoWarpgroups && dq != dkdv) {
      auto diag = fail();
      diag << "--dq-warpgroups " << dq << " with --dkdv-warpgroups " << dkdv
           << " without --dq atomic was removed (one kernel's tiles shared "
              "without the other's: it won no measured cell); give equal "
              "counts, or one of the flags (the other follows it)";
      if (dkdv == 2 && !config.deterministic && config.dq == "auto")
        diag << "; for the split, --dq atomic --dkdv-warpgroups 2";
      return diag;
    }
    // Auto: two dK/dV and two dQ warpgroups sharing their tiles where that
    // was measured faster (long causal rows at D 128 without a window,
    // fixed lengths), else one: the longer a block's loop, the less its
    // producer warpgroup and ping-pong cost, while the shared tiles halve
    // the L2 traffic the power-capped long cells pay for in clock.
    int64_t warpgroups = dq != kAutoWarpgroups ? dq : dkdv;
    if (warpgroups == kAutoWarpgroups)
      warpgroups = config.schedule == "auto" && shape.headDim == 128 &&
                           !hasWindow && !shape.varlen() &&
                           std::min(shape.seqQ, shape.seqKv) >=
                               kSharedTilesMinBlocks * kSinkBwdBlock
                       ? 2
                       : 1;
    form.dqWarpgroups = form.dkdvWarpgroups = warpgroups;
  }

  form.statsRows = form.atomicDq ? 3 : 2;
  form.group = shape.heads / shape.kvHeads;
  form.shares = form.group > 1;
  // The shared-tile kernels' in-kernel sum ran slower than a kernel of its
  // own (docs/PERF.md).
  form.sumInKernel = form.shares && !form.dkdvShared();
  // The split's sums per kv head let sink_bwd_dkdv_sum read one slab per
  // element instead of the group's.
  form.kvAccumulate = form.shares && form.atomicDq;
  form.kvInRegisters =
      form.atomicDq && shape.headDim == 64 && shape.seqQ >= kKvRegistersMinRows;
  // Early dPᵀ keeps 32 more accumulator registers live across the
  // exponentials: the split at D 128 spills with it.
  form.earlyDp = !form.atomicDq || shape.headDim == 64;
  // The split's warpgroups meet at dQ's barrier (or, deferred, never wait
  // for each other): no turns.
  form.dkdvPingPong = form.dkdvShared() && !form.atomicDq;
  // Three 64-key blocks per SM fit in shared memory and registers at D 64.
  form.threeBlocksPerSm = shape.headDim == 64 && !form.dkdvShared();
  // The shared-tile dQ kernel would need barriers that leave its producer
  // out; --dq atomic has no dQ kernel.
  form.sinksInDq = !form.atomicDq && form.dqWarpgroups == 1;
  form.sumAfterDq = form.shares && form.dkdvShared();
  return form;
}
