//===- SinkBwdKernel.cpp - Attention-sink backward in tile IR -------------===//
//
// The gradients of O = softmax([Q Kᵀ · scale, sink]) V (the forward in
// SinkFwdKernel.cpp) with respect to Q, K, V and the per-head sink logits,
// as one bundle of up to six kernels in one module, launched in order
// except that sink_bwd_dkdv and sink_bwd_dq run side by side (the dK/dV
// launch's `overlaps_next`: neither reads what the other writes)
// (`--dq separate`, the deterministic form):
//
//   sink_fwd              (setup) the forward: O and the LSE the others read.
//   sink_bwd_preprocess   per block of 64 query rows: Delta = rowsum(dO ⊙ O),
//                         from the forward's O as stored (rounded to bf16 or
//                         fp16), as every FlashAttention backward does.
//                         It also writes each block's -LSE·log2(e) and
//                         Delta as one record, which the dK/dV kernel
//                         loads with its Q and dO tiles
//                         (SinkBwdRowKernels.cpp).
//   sink_bwd_dkdv         per block of 64 keys (64·N with --dkdv-warpgroups
//                         N: N consumer warpgroups sharing the Q/dO tiles,
//                         a TMA producer) and one query head: loops over
//                         the query blocks that see those keys, in the
//                         transposed form
//                           Sᵀ = K Qᵀ, Pᵀ = exp(Sᵀ·scale - LSE) (masked),
//                           dV += Pᵀ dO, dPᵀ = V dOᵀ, dSᵀ = Pᵀ ⊙ (dPᵀ - Delta),
//                           dK += dSᵀ Q · scale,
//                         so K, V, dK and dV stay in registers/shared memory
//                         (Sᵀ and dPᵀ issued together, dPᵀ's wgmma under
//                         the exponentials; SinkBwdDkdvKernel.cpp).
//                         LSE and Delta are per column here: the map bodies
//                         read them from the query block's record in shared
//                         memory, loaded (and pipelined) with Q and dO.
//                         With GQA each query
//                         head writes its fp32 share of its kv head's dK/dV,
//                         and the group's last block for those keys (an
//                         atomic counter, sumSharesOfGroup) adds the
//                         shares in head order: K/V are never repeated, and
//                         blocks per query head (not per kv head) keep the
//                         causal triangle's work balanced over the SMs.
//   sink_bwd_dkdv_sum     (--dkdv-warpgroups 2) adds the
//                         shares instead (the split below: rounds the
//                         fp32 sums its dK/dV kernel adds per kv head).
//   sink_bwd_dq           per block of 64 query rows (64·N with
//                         --dq-warpgroups N: N consumer warpgroups sharing
//                         the K/V tiles, a TMA producer): loops over the key
//                         blocks its rows see, S = Q Kᵀ, P, dP = dO Vᵀ
//                         (issued with S, as in the dK/dV loop), dS,
//                         dQ += dS K · scale, accumulated in fp32 registers
//                         and converted once at the end. It also sums the
//                         row's P ⊙ dP, which is dO · O for the exact O
//                         (O = Σ_j P_j v_j), and writes the row's sink term
//                         -exp(sink - LSE) · Σ_j P_j dP_j: dsinks do not
//                         carry the stored O's rounding, which cancellation
//                         in the sum over rows can make a large part of a
//                         small dsink. The last
//                         of a head's blocks (a counter per head) then sums
//                         the head's terms into dsink_h with one warp, in a
//                         fixed order and a butterfly (SinkBwdDqKernel.cpp).
//   sink_bwd_sinks        (--dq-warpgroups 2) that sum, one warp per head,
//                         as a kernel of its own.
//
// Every output element has exactly one writer and every sum a fixed order
// (the share sum's counter only elects which block adds, not the order):
// the gradients are bit-identical from run to run.
//
// `--dq atomic` drops sink_bwd_dq: the dK/dV kernel also computes dQ's
// share of its keys and adds it to an fp32 dQ with a TMA reduce-add, and
// sums the keys' sink terms; preprocess zeros that dQ and writes the rows'
// sink weights into the blocks' records; sink_bwd_dq_convert rounds dQ
// and sums dsinks from the key terms. Fewer GEMMs, but
// not bit-reproducible. It takes --dkdv-warpgroups 2: the block's two
// warpgroups split dQ's share by panels of D / 2 columns (dkAndDqShare):
// FlashAttention 3's split; with GQA it adds dK and dV into
// fp32 sums per kv head (storeKvAccumulators), which sink_bwd_dkdv_sum
// rounds.
// --dq-split deferred keeps the columns' panels but computes each
// iteration's dQ share from the previous query block's dSᵀ (a double
// buffer the warpgroups hand over through mbarriers, dkAndDeferredDqShare),
// each warpgroup adding its own panel: no barrier between the warpgroups
// inside the loop, the columns' reduce traffic.
// SinkBwdForm.cpp chooses the form (auto, or the flags) and refuses what
// the kernels do not implement; docs/design.md, "Backward forms kept
// (issue 44)", lists the forms and why each stays.
//
//===----------------------------------------------------------------------===//

#include "KernelBuilders.h"
#include "SinkBwdBuilding.h"
#include "SinkBwdLayout.h"

#include "SinkAttn/Runtime/KernelGrids.h"

#include <algorithm>

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"

using namespace mlir;
using namespace sinkattn;
using namespace sinkattn::kernels;

namespace {
/// Query rows, and keys, per block of one warpgroup.
constexpr int64_t kBlock = kSinkBwdBlock;

/// Run-time shapes: the backward's buffers become descriptors whose sizes
/// (all but the compiled-in head dim and record rows) change at launch,
/// the gradients token rows at any stride like Q, K, V and O, and the
/// softmax scale a scalar beside the forward's (rt::sinkBwdForSizes).
void makeRunTimeShaped(rt::Bundle &bundle, const rt::SinkAttentionShape &shape,
                       const SinkBwdForm &form) {
  const uint64_t qColumns = uint64_t(shape.heads * shape.headDim);
  const uint64_t kvColumns = uint64_t(shape.kvHeads * shape.headDim);
  for (rt::BundleParam &param : bundle.params) {
    if (param.kind != rt::ParamKind::Buffer || param.descriptor)
      continue;
    param.descriptor = true;
    const bool qRows = param.name == "do" || param.name == "dq";
    const bool kvRows = param.name == "dk" || param.name == "dv";
    if (qRows || param.name == "dq_accum")
      param.shape = {uint64_t(shape.tokensQ()), qColumns};
    else if (kvRows)
      param.shape = {uint64_t(shape.tokensKv()), kvColumns};
    // The records' rows and 64 columns, and the shares' D, are compiled in.
    uint64_t dynamicDims = param.shape.size();
    if (param.name == "row_stats")
      dynamicDims = 3;
    else if (param.name == "dk_shares" || param.name == "dv_shares" ||
             param.name == "dk_accum" || param.name == "dv_accum")
      dynamicDims = 2;
    for (uint64_t d = 0; d < dynamicDims; ++d)
      param.dynamicDims.push_back(d);
    if (qRows || kvRows)
      param.strides = {param.shape[1], 1};
  }
  bundle.params.push_back(
      rt::scalarParam("scale", rt::DType::F32, double(float(shape.scale))));
  bundle.config["dq_block_rows"] = form.dqBlockRows();
  bundle.config["dkdv_block_keys"] = form.dkdvBlockKeys();
}
} // namespace

FailureOr<KernelModule> kernels::buildSinkBwd(MLIRContext &context,
                                              const KernelConfig &config) {
  auto fail = [&]() {
    return emitError(UnknownLoc::get(&context)) << "sink-bwd: ";
  };
  if (config.schedule == "overlap")
    return fail() << "--schedule overlap applies to sink-fwd only (sink-bwd: "
                     "auto or plain)";
  // Forms removed because they never won a measured cell (docs/design.md,
  // "Backward forms kept (issue 44)"): each refusal names what to use.
  if (config.schedule == "ws")
    return fail() << "--schedule ws was removed from sink-bwd (a TMA producer "
                     "for one consumer warpgroup: slower than plain in every "
                     "measured cell); use --schedule auto or plain, and "
                     "--dq-warpgroups 2 --dkdv-warpgroups 2 (--head-dim 128) "
                     "for a producer feeding shared tiles";
  if (!config.causal)
    return fail() << "--non-causal is not supported: the backward's kernels "
                     "mask causally";
  // The forward's checks (dtype, head dim, shapes, window, stages) apply,
  // reported as sink-bwd's.
  FailureOr<KernelModule> forward = buildSinkFwd(context, config);
  if (failed(forward))
    return failure();
  rt::SinkAttentionShape shape = sinkAttentionShape(config);

  FailureOr<SinkBwdForm> resolved =
      SinkBwdForm::resolve(context, config, shape);
  if (failed(resolved))
    return failure();
  const SinkBwdForm &form = *resolved;
  const bool runTimeShapes = config.runTimeShapes;
  if (runTimeShapes && !form.atomicDq && (form.dqShared() || form.dkdvShared()))
    return fail() << "--run-time-shapes supports --dq separate with one dQ "
                     "and one dK/dV warpgroup (auto's choice for varlen) and "
                     "--dq atomic so far, not the shared-tile form "
                     "(--dq-warpgroups 2 --dkdv-warpgroups 2)";
  const bool atomicDq = form.atomicDq;
  const int64_t dqWarpgroups = form.dqWarpgroups;
  const int64_t dkdvWarpgroups = form.dkdvWarpgroups;
  const uint32_t dkdvBlocks =
      uint32_t((shape.seqKv + form.dkdvBlockKeys() - 1) / form.dkdvBlockKeys());
  const uint32_t dqBlocks =
      uint32_t((shape.seqQ + form.dqBlockRows() - 1) / form.dqBlockRows());
  // The sink terms: per query row (separate) or per key row (atomic).
  const std::vector<uint64_t> termDims =
      atomicDq ? shape.keyRowDims() : shape.lseDims();
  const bool shares = form.shares;
  const bool sumInKernel = form.sumInKernel;
  const bool kvAccumulate = form.kvAccumulate;
  const bool sinksInDq = form.sinksInDq;

  // The kernels in one gpu.module (the launch order is the bundle's).
  context.loadDialect<arith::ArithDialect, gpu::GPUDialect, math::MathDialect,
                      memref::MemRefDialect, NVVM::NVVMDialect, scf::SCFDialect,
                      tile::TileDialect, vector::VectorDialect>();
  ImplicitLocOpBuilder b(NameLoc::get(StringAttr::get(&context, "sink_bwd")),
                         &context);
  OwningOpRef<ModuleOp> module = ModuleOp::create(b.getLoc());
  (*module)->setAttr(gpu::GPUDialect::getContainerModuleAttrName(),
                     b.getUnitAttr());
  b.setInsertionPointToStart(module->getBody());
  auto gpuModule = gpu::GPUModuleOp::create(b, "sink_bwd");
  b.setInsertionPointToStart(gpuModule.getBody());
  const SinkBwdProblem problem{config, shape, form,
                               getElementType(&context, config.dtype),
                               getElementType(&context, config.sinkDtype)};
  const SinkBwdLayout layout = SinkBwdLayout::get(&context, problem);
  // Blocks of 64 query rows, as the row records count them.
  const uint32_t queryBlocks = uint32_t((shape.seqQ + kBlock - 1) / kBlock);
  buildSinkBwdPreprocess(b, problem, layout);
  buildSinkBwdDkdv(b, problem, layout);
  if (form.sumAfterDq)
    buildSinkBwdDkdvSum(b, problem, layout);
  // --dq atomic sums dsinks in its convert kernel, the one-warpgroup dQ
  // kernel in its last block of each head, else a kernel of its own.
  if (atomicDq) {
    buildSinkBwdDqConvert(b, problem, layout);
  } else {
    buildSinkBwdDq(b, problem, layout);
    if (!sinksInDq)
      buildSinkBwdSinks(b, problem, layout);
  }
  if (failed(verify(*module)))
    return fail() << "internal error: the built kernels do not verify";

  // The forward joins the module as the setup launch, with what its
  // kernel refers to (a persistent forward's tile lists, @sink_fwd_tiles).
  auto forwardModules = forward->module->getOps<gpu::GPUModuleOp>();
  if (forwardModules.empty() ||
      (*forwardModules.begin()).getOps<gpu::GPUFuncOp>().empty())
    return fail() << "internal error: the forward module has no kernel";
  Operation *firstOfBackward = &gpuModule.getBody()->front();
  for (Operation &op : llvm::make_early_inc_range(
           (*forwardModules.begin()).getBody()->getOperations()))
    op.moveBefore(firstOfBackward);

  rt::Bundle bundle;
  bundle.formatVersion = rt::kBundleLaunchesFormatVersion;
  bundle.kernel = "sink-bwd";
  // The forward's config, but the schedule is the backward's own (the
  // forward's, which auto may resolve differently, is kept beside it).
  bundle.config = forward->bundle.config;
  bundle.config["forward_schedule"] = bundle.config["schedule"];
  bundle.config["schedule"] = std::string("plain");
  bundle.config["dq"] = std::string(atomicDq ? "atomic" : "separate");
  if (form.dqShared())
    bundle.config["dq_warpgroups"] = dqWarpgroups;
  if (form.dkdvShared())
    bundle.config["dkdv_warpgroups"] = dkdvWarpgroups;
  if (form.dqSplitDeferred)
    bundle.config["dq_split"] = std::string("deferred");
  if (form.kvInRegisters)
    bundle.config["kv_operands"] = "registers";
  bundle.params = forward->bundle.params;
  auto u = [](int64_t v) { return uint64_t(v); };
  std::vector<uint64_t> qShape = shape.qDims(), kvShape = shape.kvDims();
  bundle.params.push_back(inputBuffer("do", config.dtype, qShape));
  bundle.params.push_back(outputBuffer("dq", config.dtype, qShape));
  bundle.params.push_back(outputBuffer("dk", config.dtype, kvShape));
  bundle.params.push_back(outputBuffer("dv", config.dtype, kvShape));
  bundle.params.push_back(
      outputBuffer("dsinks", rt::DType::F32, {u(shape.heads)}));
  // Scratch the kernels hand each other (outputs: the runner poisons them).
  bundle.params.push_back(
      outputBuffer("delta", rt::DType::F32, shape.lseDims()));
  // Each query block's -LSE·log2(e), Delta (and with --dq atomic the sink
  // weights), [B, H, query blocks, 2 or 3, 64].
  bundle.params.push_back(
      outputBuffer("row_stats", rt::DType::F32,
                   {u(shape.batch), u(shape.heads), queryBlocks,
                    u(form.statsRows), u(kBlock)}));
  // Separate: a sink term per query row; atomic: per key row.
  bundle.params.push_back(outputBuffer("sink_terms", rt::DType::F32, termDims));
  if (atomicDq)
    bundle.params.push_back(outputBuffer("dq_accum", rt::DType::F32, qShape));
  // The shares' token coordinate: B · SKV, or varlen's packed keys.
  std::vector<uint64_t> sharesShape = {u(shape.heads), u(shape.tokensKv()),
                                       u(shape.headDim)};
  if (kvAccumulate) {
    std::vector<uint64_t> accShape = {u(shape.kvHeads), u(shape.tokensKv()),
                                      u(shape.headDim)};
    bundle.params.push_back(outputBuffer("dk_accum", rt::DType::F32, accShape));
    bundle.params.push_back(outputBuffer("dv_accum", rt::DType::F32, accShape));
  } else if (shares) {
    bundle.params.push_back(
        outputBuffer("dk_shares", rt::DType::F32, sharesShape));
    bundle.params.push_back(
        outputBuffer("dv_shares", rt::DType::F32, sharesShape));
  }
  // The dK/dV kernel's share-sum counters (the preprocess kernel zeroes
  // them).
  if (sumInKernel)
    bundle.params.push_back(
        outputBuffer("share_counts", rt::DType::I32,
                     {u(shape.batch * shape.kvHeads *
                        ((shape.seqKv + kBlock - 1) / kBlock))}));
  // The dQ kernel's dsink counters, one per head (zeroed by the preprocess
  // kernel).
  if (sinksInDq)
    bundle.params.push_back(
        outputBuffer("sink_counts", rt::DType::I32, {u(shape.heads)}));

  auto launch = [](std::string entry, rt::Dim3 grid, uint32_t threads,
                   std::vector<std::string> args) {
    rt::BundleLaunch l;
    l.entry = std::move(entry);
    l.grid = grid;
    l.block = {threads, 1, 1};
    l.args = std::move(args);
    return l;
  };
  rt::BundleLaunch forwardLaunch = launch(
      forward->bundle.entry, forward->bundle.grid, forward->bundle.block.x,
      rt::launchesOf(forward->bundle).front().args);
  forwardLaunch.setup = true;
  uint32_t heads = uint32_t(shape.heads), batch = uint32_t(shape.batch);
  if (runTimeShapes)
    makeRunTimeShaped(bundle, shape, form);
  // Varlen kernels also take the sequence offsets, and with run-time shapes
  // the scalars (SinkBwdTrailingArgs).
  auto withSequences = [&](std::vector<std::string> args) {
    if (shape.varlen()) {
      args.push_back("cu_seqlens_q");
      args.push_back("cu_seqlens_kv");
    }
    if (runTimeShapes) {
      args.insert(args.end(), {"scale", "scale_log2"});
      if (config.window > 0)
        args.push_back("window");
      args.insert(args.end(), {"cu_seqlens_q_unit", "cu_seqlens_kv_unit"});
    }
    return args;
  };
  // In the order of the kernels' parameters.
  std::vector<std::string> preprocessArgs = {"o", "do", "delta", "lse",
                                             "row_stats"};
  if (atomicDq)
    preprocessArgs.insert(preprocessArgs.end(), {"sinks", "dq_accum"});
  if (kvAccumulate)
    preprocessArgs.insert(preprocessArgs.end(), {"dk_accum", "dv_accum"});
  if (sumInKernel)
    preprocessArgs.push_back("share_counts");
  if (sinksInDq)
    preprocessArgs.push_back("sink_counts");
  bundle.launches = {forwardLaunch,
                     launch("sink_bwd_preprocess", {queryBlocks, heads, batch},
                            128, withSequences(preprocessArgs))};
  std::vector<std::string> dkdvArgs = {"q", "k", "v", "do", "row_stats"};
  const char *dkOut = kvAccumulate ? "dk_accum" : shares ? "dk_shares" : "dk";
  const char *dvOut = kvAccumulate ? "dv_accum" : shares ? "dv_shares" : "dv";
  dkdvArgs.insert(dkdvArgs.end(), {dkOut, dvOut});
  if (atomicDq)
    dkdvArgs.insert(dkdvArgs.end(), {"dq_accum", "sink_terms"});
  if (sumInKernel)
    dkdvArgs.insert(dkdvArgs.end(), {"dk", "dv", "share_counts"});
  bundle.launches.push_back(
      launch("sink_bwd_dkdv", rt::attentionBlockGrid(dkdvBlocks, shape),
             uint32_t(128 * dkdvWarpgroups), withSequences(dkdvArgs)));
  rt::BundleLaunch shareSum = launch(
      "sink_bwd_dkdv_sum", {uint32_t((shape.kvElements() + 255) / 256), 1, 1},
      256, {dkOut, dvOut, "dk", "dv"});
  if (atomicDq)
    bundle.launches.push_back(
        launch("sink_bwd_dq_convert", {queryBlocks, heads, batch}, 128,
               withSequences({"dq_accum", "dq", "sink_terms", "dsinks"})));
  else {
    std::vector<std::string> dqArgs = {
        "q", "k", "v", "do", "lse", "delta", "sinks", "dq", "sink_terms"};
    if (sinksInDq)
      dqArgs.insert(dqArgs.end(), {"dsinks", "sink_counts"});
    bundle.launches.push_back(
        launch("sink_bwd_dq", rt::attentionBlockGrid(dqBlocks, shape),
               uint32_t(128 * dqWarpgroups), withSequences(dqArgs)));
  }
  // The dK/dV and dQ kernels read only what the preprocess kernel and the
  // inputs hold and write disjoint buffers: they may run together, each
  // filling the tail of the other. With --dq atomic the convert kernel
  // reads dK/dV's dQ.
  auto overlapWithNext = [&](rt::BundleLaunch &first) {
    first.overlapsNext = true;
    bundle.formatVersion = rt::kBundleOverlapFormatVersion;
  };
  rt::BundleLaunch &beforeDq = bundle.launches[bundle.launches.size() - 2];
  if (bundle.launches.back().entry == "sink_bwd_dq" &&
      beforeDq.entry == "sink_bwd_dkdv")
    overlapWithNext(beforeDq);
  if (form.sumAfterDq) {
    // The split's convert kernel (dq_accum -> dq) and the share sum
    // (shares -> dK, dV) are independent too: both memory-bound, side by
    // side they share one tail and one launch gap.
    if (bundle.launches.back().entry == "sink_bwd_dq_convert")
      overlapWithNext(bundle.launches.back());
    bundle.launches.push_back(shareSum);
  }
  if (!sinksInDq && !atomicDq)
    bundle.launches.push_back(
        launch("sink_bwd_sinks", {heads, 1, 1}, 32, {"sink_terms", "dsinks"}));
  if (runTimeShapes)
    bundle.formatVersion =
        std::max(bundle.formatVersion, rt::kBundleDescriptorFormatVersion);
  KernelModule kernel{std::move(module), std::move(bundle)};
  kernel.tileIR = true;
  return kernel;
}
