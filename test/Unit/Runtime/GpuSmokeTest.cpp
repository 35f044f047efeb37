//===- GpuSmokeTest.cpp - End-to-end runtime check on a real GPU ----------===//
//
// Exercises every driver-facing path of the runtime on a Hopper GPU: driver
// loading, context queries, PTX JIT compilation (and its error log), plain and
// cluster launches with >48 KB dynamic shared memory, device buffers, TMA
// descriptor encoding consumed by a hand-written cp.async.bulk.tensor
// kernel, CUDA-event benchmarking with L2 flushing, a bundle round trip
// launched the way sinkattn-runner does, LoadedBundle's launch sequence
// (setup phase; an overlapping pair's fork and joins), and a bundle for
// run-time shapes run for another size on its loaded kernel.
//
// Without libcuda it prints SKIP and exits 0 (so it can live in CTest on
// GPU-less CI); `--require-gpu` turns that into exit code 2.
//
//===----------------------------------------------------------------------===//

#include "SinkAttn/Runtime/Bundle.h"
#include "SinkAttn/Runtime/Context.h"
#include "SinkAttn/Runtime/DeviceBuffer.h"
#include "SinkAttn/Runtime/LoadedBundle.h"
#include "SinkAttn/Runtime/Module.h"
#include "SinkAttn/Runtime/Random.h"
#include "SinkAttn/Runtime/Timing.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <unistd.h>

using namespace sinkattn::rt;

namespace {

int failures = 0;

void check(bool ok, const std::string &what, const std::string &detail = "") {
  std::printf("[%s] %s%s%s\n", ok ? "PASS" : "FAIL", what.c_str(),
              detail.empty() ? "" : ": ", detail.c_str());
  if (!ok)
    ++failures;
}

void checkStatus(const Status &st, const std::string &what) {
  check(st.ok(), what, st.message());
}

const char *kAxpyPtx = R"(
.version 8.0
.target sm_90a
.address_size 64

.visible .entry axpy(
    .param .u64 axpy_y,
    .param .u64 axpy_x,
    .param .f32 axpy_a,
    .param .u32 axpy_n)
{
    .reg .pred %p<2>;
    .reg .b32 %r<6>;
    .reg .f32 %f<5>;
    .reg .b64 %rd<8>;
    ld.param.u64 %rd1, [axpy_y];
    ld.param.u64 %rd2, [axpy_x];
    ld.param.f32 %f1, [axpy_a];
    ld.param.u32 %r1, [axpy_n];
    mov.u32 %r2, %ctaid.x;
    mov.u32 %r3, %ntid.x;
    mov.u32 %r4, %tid.x;
    mad.lo.s32 %r5, %r2, %r3, %r4;
    setp.ge.u32 %p1, %r5, %r1;
    @%p1 bra $L_done;
    cvta.to.global.u64 %rd3, %rd1;
    cvta.to.global.u64 %rd4, %rd2;
    mul.wide.u32 %rd5, %r5, 4;
    add.s64 %rd6, %rd3, %rd5;
    add.s64 %rd7, %rd4, %rd5;
    ld.global.f32 %f2, [%rd7];
    ld.global.f32 %f3, [%rd6];
    fma.rn.f32 %f4, %f1, %f2, %f3;
    st.global.f32 [%rd6], %f4;
$L_done:
    ret;
}
)";

// Kernels of a multi-launch bundle that tests LoadedBundle's sequencing. One
// thread each; %globaltimer spins make the order visible: a launch that
// starts before the launch it should wait for reads the old value.
//   slow_store(out, value, spin):  spin, then *out = value
//   slow_add(out, in, addend, spin, end_time):
//       v = *in; spin; *end_time = now; *out = v + addend
//   stamp(time):  *time = now
//   copy(out, in):  *out = *in
// y = a * x + y over the first n elements, x and y memref descriptors
// whose size n is read at run time (sinkattn-opt --sinkattn-gpu-to-ptx of a
// gpu.func taking memref<?xf32>).
const char *kAxpyDescriptorPtx = R"(
.version 8.0
.target sm_90a
.address_size 64

	// .globl	axpy_desc

.visible .entry axpy_desc(
	.param .u64 .ptr .align 1 axpy_desc_param_0,
	.param .u64 .ptr .align 1 axpy_desc_param_1,
	.param .u64 axpy_desc_param_2,
	.param .u64 axpy_desc_param_3,
	.param .u64 axpy_desc_param_4,
	.param .u64 .ptr .align 1 axpy_desc_param_5,
	.param .u64 .ptr .align 1 axpy_desc_param_6,
	.param .u64 axpy_desc_param_7,
	.param .u64 axpy_desc_param_8,
	.param .u64 axpy_desc_param_9,
	.param .f32 axpy_desc_param_10
)
{
	.reg .pred 	%p<2>;
	.reg .b32 	%r<8>;
	.reg .b64 	%rd<12>;

	ld.param.b64 	%rd4, [axpy_desc_param_6];
	cvta.to.global.u64 	%rd1, %rd4;
	ld.param.b64 	%rd5, [axpy_desc_param_1];
	cvta.to.global.u64 	%rd2, %rd5;
	ld.param.b64 	%rd6, [axpy_desc_param_3];
	mov.u32 	%r2, %ctaid.x;
	mov.u32 	%r3, %ntid.x;
	mov.u32 	%r4, %tid.x;
	cvt.u64.u32 	%rd7, %r4;
	mul.wide.u32 	%rd8, %r2, %r3;
	add.s64 	%rd3, %rd8, %rd7;
	setp.ge.u64 	%p1, %rd3, %rd6;
	@%p1 bra 	$L__BB0_2;
	ld.param.b32 	%r1, [axpy_desc_param_10];
	shl.b64 	%rd9, %rd3, 2;
	add.s64 	%rd10, %rd1, %rd9;
	ld.global.b32 	%r5, [%rd10];
	add.s64 	%rd11, %rd2, %rd9;
	ld.global.b32 	%r6, [%rd11];
	fma.rn.f32 	%r7, %r1, %r5, %r6;
	st.global.b32 	[%rd11], %r7;
$L__BB0_2:
	ret;

}
)";

const char *kSequencePtx = R"(
.version 8.0
.target sm_90a
.address_size 64

.visible .entry slow_store(.param .u64 ss_out, .param .u32 ss_value,
                           .param .u64 ss_spin)
{
    .reg .pred %p<2>;
    .reg .b32 %r<2>;
    .reg .b64 %rd<6>;
    ld.param.u64 %rd1, [ss_out];
    ld.param.u32 %r1, [ss_value];
    ld.param.u64 %rd2, [ss_spin];
    cvta.to.global.u64 %rd1, %rd1;
    mov.u64 %rd3, %globaltimer;
$L_ss_spin:
    mov.u64 %rd4, %globaltimer;
    sub.u64 %rd5, %rd4, %rd3;
    setp.lt.u64 %p1, %rd5, %rd2;
    @%p1 bra $L_ss_spin;
    st.global.u32 [%rd1], %r1;
    ret;
}

.visible .entry slow_add(.param .u64 sa_out, .param .u64 sa_in,
                         .param .u32 sa_addend, .param .u64 sa_spin,
                         .param .u64 sa_end_time)
{
    .reg .pred %p<2>;
    .reg .b32 %r<4>;
    .reg .b64 %rd<9>;
    ld.param.u64 %rd1, [sa_out];
    ld.param.u64 %rd2, [sa_in];
    ld.param.u32 %r1, [sa_addend];
    ld.param.u64 %rd3, [sa_spin];
    ld.param.u64 %rd4, [sa_end_time];
    cvta.to.global.u64 %rd1, %rd1;
    cvta.to.global.u64 %rd2, %rd2;
    cvta.to.global.u64 %rd4, %rd4;
    ld.global.u32 %r2, [%rd2];
    mov.u64 %rd5, %globaltimer;
$L_sa_spin:
    mov.u64 %rd6, %globaltimer;
    sub.u64 %rd7, %rd6, %rd5;
    setp.lt.u64 %p1, %rd7, %rd3;
    @%p1 bra $L_sa_spin;
    mov.u64 %rd8, %globaltimer;
    st.global.u64 [%rd4], %rd8;
    add.u32 %r3, %r2, %r1;
    st.global.u32 [%rd1], %r3;
    ret;
}

.visible .entry stamp(.param .u64 st_time)
{
    .reg .b64 %rd<3>;
    ld.param.u64 %rd1, [st_time];
    cvta.to.global.u64 %rd1, %rd1;
    mov.u64 %rd2, %globaltimer;
    st.global.u64 [%rd1], %rd2;
    ret;
}

.visible .entry copy(.param .u64 cp_out, .param .u64 cp_in)
{
    .reg .b32 %r<2>;
    .reg .b64 %rd<3>;
    ld.param.u64 %rd1, [cp_out];
    ld.param.u64 %rd2, [cp_in];
    cvta.to.global.u64 %rd1, %rd1;
    cvta.to.global.u64 %rd2, %rd2;
    ld.global.u32 %r1, [%rd2];
    st.global.u32 [%rd1], %r1;
    ret;
}
)";

// Each block writes its rank in the cluster, after a round trip through
// dynamic shared memory at offset 100000 (needs the >48 KB opt-in).
const char *kClusterPtx = R"(
.version 8.0
.target sm_90a
.address_size 64

.extern .shared .align 16 .b8 dsmem[];

.visible .entry cluster_rank(.param .u64 cluster_rank_out)
{
    .reg .b32 %r<5>;
    .reg .b64 %rd<5>;
    ld.param.u64 %rd1, [cluster_rank_out];
    cvta.to.global.u64 %rd2, %rd1;
    mov.u32 %r1, %cluster_ctarank;
    mov.u32 %r2, %ctaid.x;
    mov.u32 %r3, dsmem;
    add.s32 %r3, %r3, 100000;
    st.shared.u32 [%r3], %r1;
    bar.sync 0;
    ld.shared.u32 %r4, [%r3];
    mul.wide.u32 %rd3, %r2, 4;
    add.s64 %rd4, %rd2, %rd3;
    st.global.u32 [%rd4], %r4;
    ret;
}
)";

// Loads one 64x32 bf16 box at (column 0, row `row0`) with TMA into shared
// memory and copies the 4096 bytes to `out`.  Block: 128 threads.
const char *kTmaPtx = R"(
.version 8.0
.target sm_90a
.address_size 64

.visible .entry tma_load(
    .param .align 64 .b8 tma_load_map[128],
    .param .u64 tma_load_out,
    .param .u32 tma_load_row0)
{
    .reg .pred %p<4>;
    .reg .b32 %r<16>;
    .reg .b64 %rd<8>;
    .shared .align 1024 .b8 tile[4096];
    .shared .align 8 .b64 bar;

    mov.b64 %rd6, tma_load_map;
    cvta.param.u64 %rd1, %rd6;
    ld.param.u64 %rd2, [tma_load_out];
    cvta.to.global.u64 %rd2, %rd2;
    ld.param.u32 %r10, [tma_load_row0];
    mov.u32 %r1, %tid.x;
    mov.u32 %r2, tile;
    mov.u32 %r3, bar;
    setp.eq.u32 %p1, %r1, 0;
    @!%p1 bra $L_sync;
    mbarrier.init.shared::cta.b64 [%r3], 1;
    fence.mbarrier_init.release.cluster;
$L_sync:
    bar.sync 0;
    @!%p1 bra $L_wait;
    mbarrier.arrive.expect_tx.shared::cta.b64 %rd3, [%r3], 4096;
    mov.u32 %r11, 0;
    cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%r2], [%rd1, {%r11, %r10}], [%r3];
$L_wait:
    mbarrier.try_wait.parity.shared::cta.b64 %p2, [%r3], 0;
    @!%p2 bra $L_wait;
    mov.u32 %r4, 0;
$L_copy:
    mad.lo.s32 %r5, %r4, 128, %r1;
    shl.b32 %r6, %r5, 2;
    add.s32 %r7, %r2, %r6;
    ld.shared.u32 %r8, [%r7];
    cvt.u64.u32 %rd4, %r6;
    add.s64 %rd5, %rd2, %rd4;
    st.global.u32 [%rd5], %r8;
    add.s32 %r4, %r4, 1;
    setp.lt.u32 %p3, %r4, 8;
    @%p3 bra $L_copy;
    ret;
}
)";

void testAxpy(const Context &ctx) {
  Expected<Module> mod = Module::loadPtx(ctx, kAxpyPtx, JitOptions{}, "axpy.ptx");
  checkStatus(mod.status(), "JIT-compile axpy PTX");
  if (!mod.ok())
    return;
  std::printf("  ptxas info log:\n%s\n", mod->infoLog().c_str());
  Expected<Function> fn = mod->getFunction("axpy");
  checkStatus(fn.status(), "getFunction(axpy)");
  if (!fn.ok())
    return;
  Expected<int> regs = fn->getAttribute(CU_FUNC_ATTRIBUTE_NUM_REGS);
  check(regs.ok() && *regs > 0, "cuFuncGetAttribute(NUM_REGS)",
        regs.ok() ? std::to_string(*regs) + " registers" : regs.message());

  const uint32_t n = 1 << 20;
  std::vector<float> x = randomUniform(n, 1), y = randomUniform(n, 2);
  Expected<DeviceBuffer> dx = DeviceBuffer::allocate(ctx, n * 4);
  Expected<DeviceBuffer> dy = DeviceBuffer::allocate(ctx, n * 4);
  checkStatus(dx.status(), "DeviceBuffer::allocate");
  if (!dx.ok() || !dy.ok())
    return;
  checkStatus(dy->poison(), "DeviceBuffer::poison");
  Expected<std::vector<float>> poisoned = dy->download<float>();
  check(poisoned.ok() && std::isnan((*poisoned)[0]) &&
            std::isnan((*poisoned)[n - 1]),
        "poisoned buffer reads back as NaN");
  checkStatus(dx->upload(x), "upload x");
  checkStatus(dy->upload(y), "upload y");

  KernelArgs args;
  args.addBuffer(*dy).addBuffer(*dx).addScalar(2.0f).addScalar(n);
  LaunchConfig lc;
  lc.grid = {n / 256, 1, 1};
  lc.block = {256, 1, 1};
  checkStatus(launchKernel(*fn, lc, args), "launch axpy");
  checkStatus(ctx.synchronize(), "synchronize after axpy");
  Expected<std::vector<float>> out = dy->download<float>();
  checkStatus(out.status(), "download y");
  if (!out.ok())
    return;
  size_t bad = 0;
  for (uint32_t i = 0; i < n; ++i)
    bad += (*out)[i] != std::fma(2.0f, x[i], y[i]);
  check(bad == 0, "axpy results exact", std::to_string(bad) + " mismatches");

  Expected<Stream> stream = Stream::create(ctx);
  checkStatus(stream.status(), "Stream::create");
  if (!stream.ok())
    return;
  for (bool flush : {false, true}) {
    Expected<TimingStats> t = benchmark(
        ctx,
        [&](CUstream s) {
          LaunchConfig c = lc;
          c.stream = s;
          return launchKernel(*fn, c, args);
        },
        5, 20, flush, stream->handle());
    checkStatus(t.status(), std::string("benchmark flushL2=") +
                                (flush ? "true" : "false"));
    if (t.ok()) {
      check(t->timesMs.size() == 20 && t->minMs > 0, "benchmark times",
            "median " + std::to_string(t->medianMs) + " ms, min " +
                std::to_string(t->minMs) + " ms, mean " +
                std::to_string(t->meanMs) + " ms");
    }
  }
  checkStatus(stream->synchronize(), "Stream::synchronize");
}

void testErrors(const Context &ctx) {
  std::string broken = kAxpyPtx;
  broken.replace(broken.find("fma.rn.f32 %f4, %f1, %f2, %f3;"), 30,
                 "fma.rn.f32 %f4, %f1, %f2;     ");
  Expected<Module> mod = Module::loadPtx(ctx, broken, JitOptions{}, "broken.ptx");
  check(!mod.ok() &&
            mod.message().find("ptxas error log") != std::string::npos &&
            mod.message().find("broken.ptx") != std::string::npos,
        "broken PTX reports the ptxas error log and names its source",
        mod.ok() ? "compiled?!" : mod.message());

  Expected<Module> good = Module::loadPtx(ctx, kAxpyPtx);
  if (good.ok()) {
    Expected<Function> missing = good->getFunction("no_such_kernel");
    check(!missing.ok() &&
              missing.message().find("CUDA_ERROR_NOT_FOUND") !=
                  std::string::npos,
          "missing entry is reported", missing.message());
  }
}

void testCluster(const Context &ctx) {
  Expected<Module> mod = Module::loadPtx(ctx, kClusterPtx);
  checkStatus(mod.status(), "JIT-compile cluster PTX");
  if (!mod.ok())
    return;
  Expected<Function> fn = mod->getFunction("cluster_rank");
  checkStatus(fn.status(), "getFunction(cluster_rank)");
  if (!fn.ok())
    return;
  const uint32_t blocks = 64;
  Expected<DeviceBuffer> out = DeviceBuffer::allocate(ctx, blocks * 4);
  if (!out.ok())
    return checkStatus(out.status(), "allocate");
  for (uint32_t clusterX : {2u, 4u}) {
    checkStatus(out->poison(), "poison");
    KernelArgs args;
    args.addBuffer(*out);
    LaunchConfig lc;
    lc.grid = {blocks, 1, 1};
    lc.block = {32, 1, 1};
    lc.cluster = {clusterX, 1, 1};
    lc.dynamicSharedMemoryBytes = 100 * 1024;
    std::string what = "cluster launch " + std::to_string(clusterX) +
                       "x1x1 with 100 KB dynamic smem";
    checkStatus(launchKernel(*fn, lc, args), what);
    checkStatus(ctx.synchronize(), "synchronize after " + what);
    Expected<std::vector<uint32_t>> ranks = out->download<uint32_t>();
    bool ok = ranks.ok();
    for (uint32_t b = 0; ok && b < blocks; ++b)
      ok = (*ranks)[b] == b % clusterX;
    check(ok, "cluster ranks of " + what);
  }
}

void testTma(const Context &ctx) {
  const uint32_t rows = 128, cols = 64;
  std::vector<uint16_t> host = toBf16(randomNormal(rows * cols, 3));
  Expected<DeviceBuffer> src = DeviceBuffer::allocate(ctx, host.size() * 2);
  Expected<DeviceBuffer> dst = DeviceBuffer::allocate(ctx, 4096);
  if (!src.ok() || !dst.ok())
    return check(false, "allocate TMA buffers");
  checkStatus(src->upload(host), "upload TMA source");

  TensorMapSpec spec = makeRowMajorTiledSpec(DType::BF16, {rows, cols},
                                             {32, 64}, TensorMapSwizzle::None);
  Expected<CUtensorMap> map = encode(ctx.driver(), spec, src->address());
  checkStatus(map.status(), "cuTensorMapEncodeTiled");
  Expected<CUtensorMap> misaligned =
      encode(ctx.driver(), spec, src->address() + 8);
  check(!misaligned.ok(), "misaligned TMA base rejected", misaligned.message());

  TensorMapSpec im2col;
  im2col.dtype = DType::BF16;
  im2col.globalDims = {64, 8, 8, 2};
  im2col.globalStridesBytes = {128, 1024, 8192};
  im2col.elementStrides = {1, 1, 1, 1};
  im2col.im2col = Im2colSpec{{-1, -1}, {-1, -1}, 64, 32};
  checkStatus(encode(ctx.driver(), im2col, src->address()).status(),
              "cuTensorMapEncodeIm2col");
  if (!map.ok())
    return;

  Expected<Module> mod = Module::loadPtx(ctx, kTmaPtx);
  checkStatus(mod.status(), "JIT-compile TMA PTX");
  if (!mod.ok())
    return;
  Expected<Function> fn = mod->getFunction("tma_load");
  if (!fn.ok())
    return checkStatus(fn.status(), "getFunction(tma_load)");

  for (uint32_t row0 : {32u, 112u}) {
    checkStatus(dst->poison(), "poison");
    KernelArgs args;
    args.addTensorMap(*map).addBuffer(*dst).addScalar(row0);
    LaunchConfig lc;
    lc.block = {128, 1, 1};
    std::string what = "TMA box load at row " + std::to_string(row0);
    checkStatus(launchKernel(*fn, lc, args), what);
    checkStatus(ctx.synchronize(), "synchronize after " + what);
    Expected<std::vector<uint16_t>> got = dst->download<uint16_t>();
    bool ok = got.ok();
    for (uint32_t r = 0; ok && r < 32; ++r)
      for (uint32_t c = 0; ok && c < cols; ++c) {
        uint32_t gr = row0 + r;
        uint16_t expect = gr < rows ? host[gr * cols + c] : 0; // OOB -> 0
        ok = (*got)[r * cols + c] == expect;
      }
    check(ok, what + " matches (out-of-bounds rows zero-filled)");
  }
}

void testBundle(const Context &ctx) {
  Bundle b;
  b.kernel = "axpy";
  b.entry = "axpy";
  const uint32_t n = 4096;
  b.grid = {n / 128, 1, 1};
  b.block = {128, 1, 1};
  b.config["n"] = int64_t(n);
  BundleParam y, x, a, count;
  y.name = "y";
  y.kind = ParamKind::Buffer;
  y.shape = {n};
  y.role = BufferRole::Output;
  x = y;
  x.name = "x";
  x.role = BufferRole::Input;
  a.name = "a";
  a.kind = ParamKind::Scalar;
  a.floatValue = -0.5;
  count.name = "n";
  count.kind = ParamKind::Scalar;
  count.dtype = DType::U32;
  count.intValue = n;
  b.params = {y, x, a, count};
  b.ptx = kAxpyPtx;

  std::string dir = (std::filesystem::temp_directory_path() /
                     ("sinkattn_gpu_bundle_" + std::to_string(getpid())))
                        .string();
  checkStatus(writeBundle(dir, b), "writeBundle");
  Expected<Bundle> read = readBundle(dir);
  checkStatus(read.status(), "readBundle");
  std::filesystem::remove_all(dir);
  if (!read.ok())
    return;

  Expected<Module> mod = Module::loadPtx(ctx, read->ptx);
  if (!mod.ok())
    return checkStatus(mod.status(), "JIT-compile bundle PTX");
  Expected<Function> fn = mod->getFunction(read->entry);
  if (!fn.ok())
    return checkStatus(fn.status(), "getFunction(bundle entry)");
  std::vector<float> hx = randomUniform(n, 5), hy = randomUniform(n, 6);
  Expected<DeviceBuffer> dx = DeviceBuffer::allocate(ctx, n * 4);
  Expected<DeviceBuffer> dy = DeviceBuffer::allocate(ctx, n * 4);
  if (!dx.ok() || !dy.ok())
    return check(false, "allocate bundle buffers");
  checkStatus(dx->upload(hx), "upload");
  checkStatus(dy->upload(hy), "upload");
  Expected<KernelArgs> args = buildKernelArgs(
      *read, {{"x", dx->address()}, {"y", dy->address()}}, &ctx.driver());
  checkStatus(args.status(), "buildKernelArgs");
  if (!args.ok())
    return;
  checkStatus(launchKernel(*fn, launchConfigFor(*read), *args),
              "launch bundle kernel");
  checkStatus(ctx.synchronize(), "synchronize after bundle kernel");
  Expected<std::vector<float>> out = dy->download<float>();
  bool ok = out.ok();
  for (uint32_t i = 0; ok && i < n; ++i)
    ok = (*out)[i] == std::fma(-0.5f, hx[i], hy[i]);
  check(ok, "bundle kernel results exact");
}

// The runner's path for TMA kernels: a bundle whose source buffer is reached
// only through a tensor_map param (kernel_arg false), arguments built by
// buildKernelArgs with the driver encoding the descriptor.
void testTmaBundle(const Context &ctx) {
  Bundle b;
  b.kernel = "tma_copy";
  b.entry = "tma_load";
  b.block = {128, 1, 1};
  BundleParam src, map, out, row0;
  src.name = "src";
  src.kind = ParamKind::Buffer;
  src.dtype = DType::BF16;
  src.shape = {128, 64};
  src.kernelArg = false;
  map.name = "src_tma";
  map.kind = ParamKind::TensorMap;
  map.dtype = DType::BF16;
  map.buffer = "src";
  map.tensorMap = makeRowMajorTiledSpec(DType::BF16, {128, 64}, {32, 64},
                                        TensorMapSwizzle::None);
  out.name = "out";
  out.kind = ParamKind::Buffer;
  out.dtype = DType::BF16;
  out.shape = {32, 64};
  out.role = BufferRole::Output;
  row0.name = "row0";
  row0.kind = ParamKind::Scalar;
  row0.dtype = DType::U32;
  row0.intValue = 64;
  b.params = {src, map, out, row0};
  b.ptx = kTmaPtx;
  Expected<Bundle> parsed = parseManifest(writeJson(manifestToJson(b)));
  checkStatus(parsed.status(), "TMA bundle manifest round trip");
  if (!parsed.ok())
    return;

  std::vector<uint16_t> host = toBf16(randomUniform(128 * 64, 8));
  Expected<DeviceBuffer> dsrc = DeviceBuffer::allocate(ctx, host.size() * 2);
  Expected<DeviceBuffer> dout =
      DeviceBuffer::allocate(ctx, bufferBytes(*findParam(*parsed, "out")));
  if (!dsrc.ok() || !dout.ok())
    return check(false, "allocate TMA bundle buffers");
  checkStatus(dsrc->upload(host), "upload");
  checkStatus(dout->poison(), "poison");
  Expected<Module> mod = Module::loadPtx(ctx, b.ptx);
  if (!mod.ok())
    return checkStatus(mod.status(), "JIT-compile TMA bundle PTX");
  Expected<Function> fn = mod->getFunction(parsed->entry);
  if (!fn.ok())
    return checkStatus(fn.status(), "getFunction(tma_load)");
  Expected<KernelArgs> args = buildKernelArgs(
      *parsed, {{"src", dsrc->address()}, {"out", dout->address()}},
      &ctx.driver());
  checkStatus(args.status(), "buildKernelArgs with a tensor map");
  if (!args.ok())
    return;
  check(args->size() == 3, "kernel_arg=false buffer takes no ABI slot");
  checkStatus(launchKernel(*fn, launchConfigFor(*parsed), *args),
              "launch TMA bundle kernel");
  checkStatus(ctx.synchronize(), "synchronize after TMA bundle kernel");
  Expected<std::vector<uint16_t>> got = dout->download<uint16_t>();
  bool ok = got.ok();
  for (size_t i = 0; ok && i < 32 * 64; ++i)
    ok = (*got)[i] == host[64 * 64 + i];
  check(ok, "TMA bundle kernel copied rows 64..95");
}

// LoadedBundle's launch sequence, with the runner's stream (the legacy
// default one, which the non-blocking side stream does not wait for by
// itself): setup launches apart; an overlapping launch waits for the work
// before it (fork), runs beside the next launch, and whatever follows the
// pair waits for it (join), inside run() and after it. Each launch that
// must wait reads a value its predecessor writes only after a 20 ms spin,
// so a missing fork or join fails every time, not as a rare race.
void testLaunchSequence(const Context &ctx) {
  auto buffer = [](const std::string &name, DType dtype) {
    BundleParam param;
    param.name = name;
    param.kind = ParamKind::Buffer;
    param.dtype = dtype;
    param.shape = {1};
    param.role = BufferRole::Output;
    return param;
  };
  auto scalar = [](const std::string &name, DType dtype, int64_t value) {
    BundleParam param;
    param.name = name;
    param.kind = ParamKind::Scalar;
    param.dtype = dtype;
    param.intValue = value;
    return param;
  };
  auto launch = [](const std::string &entry, std::vector<std::string> args) {
    BundleLaunch l;
    l.entry = entry;
    l.block = {1, 1, 1};
    l.args = std::move(args);
    return l;
  };
  const int64_t spinNs = 20'000'000;
  Bundle b;
  b.formatVersion = kBundleOverlapFormatVersion;
  b.kernel = "sequence";
  b.params = {buffer("a", DType::U32),           buffer("b", DType::U32),
              buffer("c", DType::U32),           buffer("side_end", DType::U64),
              buffer("next_start", DType::U64),  scalar("seven", DType::U32, 7),
              scalar("addend", DType::U32, 35),  scalar("spin", DType::U64, spinNs)};
  BundleLaunch storeA = launch("slow_store", {"a", "seven", "spin"});
  storeA.setup = true;
  BundleLaunch addB =
      launch("slow_add", {"b", "a", "addend", "spin", "side_end"});
  addB.overlapsNext = true;
  b.launches = {storeA, addB, launch("stamp", {"next_start"}),
                launch("copy", {"c", "b"})};
  b.ptx = kSequencePtx;
  // The same pair as the bundle's last launches: the join must then happen
  // before run() returns.
  Bundle tail = b;
  tail.launches.pop_back();
  // One launch of `copy` after run(), on the same stream.
  Bundle after = b;
  after.launches = {launch("copy", {"c", "b"})};
  after.formatVersion = kBundleLaunchesFormatVersion;
  for (const Bundle *bundle : {&b, &tail, &after})
    checkStatus(validateBundle(*bundle), "sequence bundle validates");

  std::map<std::string, DeviceBuffer> buffers;
  std::map<std::string, CUdeviceptr> addresses;
  for (const char *name : {"a", "b", "c", "side_end", "next_start"}) {
    Expected<DeviceBuffer> buf = DeviceBuffer::allocate(ctx, 8);
    if (!buf.ok())
      return checkStatus(buf.status(), "allocate sequence buffers");
    addresses[name] = buf->address();
    buffers.emplace(name, std::move(*buf));
  }
  auto read = [&](const char *name) -> uint64_t {
    Expected<std::vector<uint64_t>> got = buffers.at(name).download<uint64_t>();
    return got.ok() ? got->front() : ~0ull;
  };
  auto reset = [&] {
    for (auto &[name, buf] : buffers)
      checkStatus(buf.fill(0), "zero " + name);
    checkStatus(ctx.synchronize(), "synchronize after zeroing");
  };

  Expected<LoadedBundle> full = LoadedBundle::load(ctx, b);
  Expected<LoadedBundle> tailOnly = LoadedBundle::load(ctx, tail);
  Expected<LoadedBundle> copyAfter = LoadedBundle::load(ctx, after);
  if (!full.ok() || !tailOnly.ok() || !copyAfter.ok())
    return check(false, "load sequence bundles",
                 full.status().message() + tailOnly.status().message() +
                     copyAfter.status().message());
  // load() validates: a last launch that overlaps has no pair, which run()
  // would otherwise leave unjoined.
  Bundle unpaired = tail;
  unpaired.launches.back().overlapsNext = true;
  unpaired.launches[1].overlapsNext = false;
  Expected<LoadedBundle> refused = LoadedBundle::load(ctx, unpaired);
  check(!refused.ok() && refused.status().message().find(
                             "the last launch has no next launch to overlap") !=
                             std::string::npos,
        "load refuses an invalid launch sequence", refused.status().message());

  reset();
  checkStatus(full->run(addresses, nullptr, LaunchPhase::Setup),
              "run setup launches");
  checkStatus(ctx.synchronize(), "synchronize after setup");
  check(read("a") == 7 && read("b") == 0,
        "setup phase runs the setup launch only",
        "a=" + std::to_string(read("a")) + " b=" + std::to_string(read("b")));
  checkStatus(full->run(addresses, nullptr), "run main launches");
  checkStatus(ctx.synchronize(), "synchronize after main launches");
  check(read("b") == 42, "overlapping launch reads the setup launch's result",
        "b=" + std::to_string(read("b")) + ", expected 7 + 35");
  check(read("c") == 42, "launch after the pair waits for the side launch",
        "c=" + std::to_string(read("c")) + ", expected 42");
  uint64_t sideEnd = read("side_end"), nextStart = read("next_start");
  check(nextStart != 0 && nextStart < sideEnd,
        "the next launch runs beside the overlapping one",
        "next launch at " + std::to_string(nextStart) + " ns, side launch end " +
            std::to_string(sideEnd) + " ns");

  // The pair at the end, queued right after the setup launch (no host
  // wait): the side launch must wait for it (fork), and the caller's next
  // launch on the stream must see the side launch's result.
  reset();
  checkStatus(tailOnly->run(addresses, nullptr, LaunchPhase::Setup),
              "run setup launches (pair last)");
  checkStatus(tailOnly->run(addresses, nullptr), "run main launches (pair last)");
  checkStatus(copyAfter->run(addresses, nullptr), "run a launch after run()");
  checkStatus(ctx.synchronize(), "synchronize after the pair-last run");
  check(read("b") == 42, "overlapping launch waits for the work queued before it",
        "b=" + std::to_string(read("b")) + ", expected 7 + 35");
  check(read("c") == 42, "work queued after run() waits for the side launch",
        "c=" + std::to_string(read("c")) + ", expected 42");
}

// A bundle compiled for run-time shapes: loaded once, then run for a
// smaller tensor through LoadedBundle::run(shaped), its buffers passed as
// memref descriptors whose size the kernel reads.
void testRunTimeShapes(const Context &ctx) {
  const uint32_t n = 4096, shapedN = 1000;
  Bundle b;
  b.formatVersion = kBundleDescriptorFormatVersion;
  b.kernel = "axpy";
  b.entry = "axpy_desc";
  b.grid = {n / 128, 1, 1};
  b.block = {128, 1, 1};
  BundleParam y, x, a;
  y.name = "y";
  y.kind = ParamKind::Buffer;
  y.shape = {n};
  y.role = BufferRole::Output;
  y.descriptor = true;
  y.dynamicDims = {0};
  x = y;
  x.name = "x";
  x.role = BufferRole::Input;
  a.name = "a";
  a.kind = ParamKind::Scalar;
  a.floatValue = -0.5;
  b.params = {y, x, a};
  b.ptx = kAxpyDescriptorPtx;
  Expected<LoadedBundle> loaded = LoadedBundle::load(ctx, b);
  if (!loaded.ok())
    return checkStatus(loaded.status(), "load a run-time-shape bundle");
  Expected<Bundle> shaped = withTensorShapes(
      b, {{"y", {{shapedN}, {}}}, {"x", {{shapedN}, {}}}});
  if (!shaped.ok())
    return checkStatus(shaped.status(), "withTensorShapes");
  shaped->grid = {(shapedN + 127) / 128, 1, 1};

  std::vector<float> hx = randomUniform(n, 11), hy = randomUniform(n, 12);
  Expected<DeviceBuffer> dx = DeviceBuffer::allocate(ctx, n * 4);
  Expected<DeviceBuffer> dy = DeviceBuffer::allocate(ctx, n * 4);
  if (!dx.ok() || !dy.ok())
    return check(false, "allocate run-time-shape buffers");
  checkStatus(dx->upload(hx), "upload");
  checkStatus(dy->upload(hy), "upload");
  std::map<std::string, CUdeviceptr> addresses = {{"x", dx->address()},
                                                  {"y", dy->address()}};
  checkStatus(loaded->run(*shaped, addresses, nullptr),
              "run the loaded kernel for a shaped bundle");
  checkStatus(ctx.synchronize(), "synchronize after the shaped run");
  Expected<std::vector<float>> out = dy->download<float>();
  bool ok = out.ok();
  for (uint32_t i = 0; ok && i < n; ++i)
    ok = (*out)[i] == (i < shapedN ? std::fma(-0.5f, hx[i], hy[i]) : hy[i]);
  check(ok, "the kernel reads the shaped size: the first 1000 elements "
            "updated, the rest untouched");

  // Only the grid and the params' values may differ from the loaded bundle.
  Bundle otherBlock = *shaped;
  otherBlock.block = {256, 1, 1};
  Status refused = loaded->run(otherBlock, addresses, nullptr);
  check(!refused.ok() &&
            refused.message().find("differs from the loaded one in more "
                                   "than its grid") != std::string::npos,
        "run refuses a bundle with another block", refused.message());
}

} // namespace

int main(int argc, char **argv) {
  bool requireGpu = argc > 1 && std::strcmp(argv[1], "--require-gpu") == 0;
  Expected<std::shared_ptr<const CudaDriver>> driver = CudaDriver::load();
  if (!driver.ok()) {
    std::printf("SKIP: %s\n", driver.message().c_str());
    return requireGpu ? 2 : 0;
  }
  std::printf("CUDA driver version %d\n", (*driver)->version());
  Expected<Context> ctx = Context::create(*driver, 0);
  if (!ctx.ok()) {
    std::printf("FAIL: %s\n", ctx.message().c_str());
    return 1;
  }
  const DeviceInfo &info = ctx->info();
  std::printf("GPU 0: %s (%s), %d SMs, %d B opt-in smem/block, %d B L2, %zu "
              "B memory\n",
              info.name.c_str(), info.smName().c_str(), info.smCount,
              info.maxSharedMemoryPerBlockOptin, info.l2CacheBytes,
              info.totalMemoryBytes);
  Status hopper = checkHopperOrNewer(info);
  if (!hopper.ok()) {
    std::printf("SKIP: %s\n", hopper.message().c_str());
    return requireGpu ? 2 : 0;
  }
  testAxpy(*ctx);
  testErrors(*ctx);
  testCluster(*ctx);
  testTma(*ctx);
  testBundle(*ctx);
  testTmaBundle(*ctx);
  testLaunchSequence(*ctx);
  testRunTimeShapes(*ctx);
  std::printf("%s: %d failure(s)\n", failures ? "FAILED" : "PASSED", failures);
  return failures ? 1 : 0;
}
