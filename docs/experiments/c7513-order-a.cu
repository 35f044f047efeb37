// Why FA3's intra-warpgroup overlap ("order A") drew ptxas C7513 in our
// D 128 forward, reduced to one warpgroup's loop in CUDA with the inline
// asm our wgmma lowering emits (docs/PERF.md, 2026-12-01 entry on C7513).
//
// Each iteration issues S_j = Q K_j^T (SS) and O += P_{j-1} V_{j-1} (RS,
// P in registers), waits for S (wait_group 1), computes the softmax, and
// waits for P V (wait_group 0). Compile with
//   nvcc -gencode arch=compute_90a,code=sm_90a -O3 -c c7513-order-a.cu \
//        -o /dev/null -Xptxas -v [-DVARIANT_...=1]
// and read ptxas's C75xx lines:
//   (no macro)                          C7513: the new P is written into
//                                       P's (loop-carried) registers while
//                                       the P V wgmma that reads them is
//                                       still in flight;
//   -DVARIANT_PACK_AFTER_WAIT=1         clean: P converted after wait 0;
//   ... -DVARIANT_RESCALE_BEFORE_FENCE=1 [-DVARIANT_FENCE_OPERAND=1]
//                                       C7517: O rescaled while S is in
//                                       flight (ptxas injects a wait);
//   ... -DVARIANT_RESCALE_AFTER_WAIT=1  clean: O rescaled after wait 0 (as
//                                       FA3 does by default).
// Descriptors computed between wgmmas, the scale-d predicate and a zeroed
// S accumulator make no difference (VARIANT_SAMEDESC_*, VARIANT_NOSETP,
// VARIANT_SZERO).
//
// "Clean" is not "overlapped" (2026-12-01, second look, with SASS): dump
// the cubin (`-cubin -o k.cubin`, then `cuobjdump -sass k.cubin`; the
// PyPI wheel nvidia-cuda-cuobjdump carries cuobjdump for a machine without
// the full toolkit) and summarize it with scripts/sass-events.py. With
// -DVARIANT_PACK_AFTER_WAIT=1 -DVARIANT_RESCALE_AFTER_WAIT=1 ptxas places
// `WARPGROUP.DEPBAR.LE gsb0, 0x0` (wait_group 0) inside the max reduction,
// before every MUFU.EX2: the softmax no longer overlaps P V. Making the
// conversion depend on O (VARIANT_DEP_O, VARIANT_DEP_ASM) does not move
// it; putting the wait in a basic block of its own (VARIANT_BRANCH) keeps
// it after the exponentials. The sink-fwd overlapped loop does the latter
// by emitting the softmax in both branches of its mask test
// (docs/design.md, "The overlapped schedule"). Not part of the build: a
// record of the experiments.

#include <cstdint>
// Order A of FA3's intra-warpgroup overlap, in our lowering's asm style:
// S = Q K^T (SS, m64n128k16 x 8 steps over D=128), O += P V (RS, m64n128k16 x 8 steps over 128 keys).
#define WG_FENCE asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory")
#define WG_COMMIT asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory")
template <int N> __device__ void wg_wait() { asm volatile("wgmma.wait_group.sync.aligned %0;\n" :: "n"(N) : "memory"); }

__device__ __forceinline__ void mma_ss(float (&d)[64], uint64_t da, uint64_t db, int scale) {
  asm volatile(
#if VARIANT_NOSETP
    "{\n"
#else
    "{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
#endif
    "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 "
    "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,"
    "%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63},"
#if VARIANT_NOSETP
    " %64, %65, 1, 1, 1, 0, 0;\n}\n"
#else
    " %64, %65, p, 1, 1, 0, 0;\n}\n"
#endif
    : "+f"(d[0]),"+f"(d[1]),"+f"(d[2]),"+f"(d[3]),"+f"(d[4]),"+f"(d[5]),"+f"(d[6]),"+f"(d[7]),"+f"(d[8]),"+f"(d[9]),"+f"(d[10]),"+f"(d[11]),"+f"(d[12]),"+f"(d[13]),"+f"(d[14]),"+f"(d[15]),
      "+f"(d[16]),"+f"(d[17]),"+f"(d[18]),"+f"(d[19]),"+f"(d[20]),"+f"(d[21]),"+f"(d[22]),"+f"(d[23]),"+f"(d[24]),"+f"(d[25]),"+f"(d[26]),"+f"(d[27]),"+f"(d[28]),"+f"(d[29]),"+f"(d[30]),"+f"(d[31]),
      "+f"(d[32]),"+f"(d[33]),"+f"(d[34]),"+f"(d[35]),"+f"(d[36]),"+f"(d[37]),"+f"(d[38]),"+f"(d[39]),"+f"(d[40]),"+f"(d[41]),"+f"(d[42]),"+f"(d[43]),"+f"(d[44]),"+f"(d[45]),"+f"(d[46]),"+f"(d[47]),
      "+f"(d[48]),"+f"(d[49]),"+f"(d[50]),"+f"(d[51]),"+f"(d[52]),"+f"(d[53]),"+f"(d[54]),"+f"(d[55]),"+f"(d[56]),"+f"(d[57]),"+f"(d[58]),"+f"(d[59]),"+f"(d[60]),"+f"(d[61]),"+f"(d[62]),"+f"(d[63])
    : "l"(da), "l"(db), "r"(scale));
}
__device__ __forceinline__ void mma_rs(float (&d)[64], const uint32_t (&a)[4], uint64_t db) {
  asm volatile("{\n"
    "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 "
    "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,"
    "%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63},"
    " {%64,%65,%66,%67}, %68, 1, 1, 1, 1;\n}\n"
    : "+f"(d[0]),"+f"(d[1]),"+f"(d[2]),"+f"(d[3]),"+f"(d[4]),"+f"(d[5]),"+f"(d[6]),"+f"(d[7]),"+f"(d[8]),"+f"(d[9]),"+f"(d[10]),"+f"(d[11]),"+f"(d[12]),"+f"(d[13]),"+f"(d[14]),"+f"(d[15]),
      "+f"(d[16]),"+f"(d[17]),"+f"(d[18]),"+f"(d[19]),"+f"(d[20]),"+f"(d[21]),"+f"(d[22]),"+f"(d[23]),"+f"(d[24]),"+f"(d[25]),"+f"(d[26]),"+f"(d[27]),"+f"(d[28]),"+f"(d[29]),"+f"(d[30]),"+f"(d[31]),
      "+f"(d[32]),"+f"(d[33]),"+f"(d[34]),"+f"(d[35]),"+f"(d[36]),"+f"(d[37]),"+f"(d[38]),"+f"(d[39]),"+f"(d[40]),"+f"(d[41]),"+f"(d[42]),"+f"(d[43]),"+f"(d[44]),"+f"(d[45]),"+f"(d[46]),"+f"(d[47]),
      "+f"(d[48]),"+f"(d[49]),"+f"(d[50]),"+f"(d[51]),"+f"(d[52]),"+f"(d[53]),"+f"(d[54]),"+f"(d[55]),"+f"(d[56]),"+f"(d[57]),"+f"(d[58]),"+f"(d[59]),"+f"(d[60]),"+f"(d[61]),"+f"(d[62]),"+f"(d[63])
    : "r"(a[0]),"r"(a[1]),"r"(a[2]),"r"(a[3]), "l"(db));
}
__device__ __forceinline__ uint32_t pack(float x, float y) {
  uint32_t r; asm("cvt.rn.bf16x2.f32 %0, %2, %1;" : "=r"(r) : "f"(x), "f"(y)); return r;
}

extern "C" __global__ void __launch_bounds__(128) order_a(float *out, uint64_t dq, uint64_t dk, uint64_t dv, int n) {
  float o[64], s[64];
  uint32_t p[32];
  for (int i = 0; i < 64; ++i) o[i] = 0.f;
  for (int i = 0; i < 32; ++i) p[i] = 0;
  float scale = 1.f;
  for (int j = 0; j <= n; ++j) {
    // S_j = Q K_j^T, async
    WG_FENCE;
#if VARIANT_SZERO
    for (int i = 0; i < 64; ++i) s[i] = 0.f;
#endif
#if VARIANT_SAMEDESC_S
    { uint64_t b = dk + j * 4096; for (int k = 0; k < 8; ++k) mma_ss(s, dq, b, k); }
#else
    for (int k = 0; k < 8; ++k) mma_ss(s, dq + 2 * k, dk + j * 4096 + 2 * k, k);
#endif
    WG_COMMIT;
#if VARIANT_RESCALE_BEFORE_FENCE
    for (int i = 0; i < 64; ++i) o[i] *= scale;
#if VARIANT_FENCE_OPERAND
    for (int i = 0; i < 64; ++i) asm volatile("" : "+f"(o[i]) :: "memory");
#endif
#endif
    // O += P_{j-1} V_{j-1}, async
    WG_FENCE;
#if !VARIANT_RESCALE_BEFORE_FENCE
#endif
#if VARIANT_SAMEDESC_PV
    { uint64_t b = dv + j * 4096; for (int k = 0; k < 8; ++k) { uint32_t a[4] = {p[4*k], p[4*k+1], p[4*k+2], p[4*k+3]}; mma_rs(o, a, b); } }
#else
    for (int k = 0; k < 8; ++k) { uint32_t a[4] = {p[4*k], p[4*k+1], p[4*k+2], p[4*k+3]}; mma_rs(o, a, dv + j * 4096 + 128 * k); }
#endif
    WG_COMMIT;
    wg_wait<1>();
    // softmax on S
    float mx = -1e30f;
    for (int i = 0; i < 64; ++i) mx = fmaxf(mx, s[i]);
    scale = __expf(-mx);
#if VARIANT_PACK_AFTER_WAIT
    for (int i = 0; i < 64; ++i) s[i] = __expf(s[i] - mx);
#if VARIANT_BRANCH
    if (n > 0) wg_wait<0>(); else { wg_wait<0>(); out[1] = 0.f; }
#else
    wg_wait<0>();
#endif
#if VARIANT_DEP_O
    float z = o[0] * 0.f;
    for (int i = 0; i < 32; ++i) p[i] = pack(s[2*i] + z, s[2*i+1] + z);
#elif VARIANT_DEP_ASM
    for (int i = 0; i < 32; ++i) { float a = s[2*i], b = s[2*i+1]; asm volatile("" : "+f"(a), "+f"(b) : "f"(o[i])); p[i] = pack(a, b); }
#else
    for (int i = 0; i < 32; ++i) p[i] = pack(s[2*i], s[2*i+1]);
#endif
#if VARIANT_RESCALE_AFTER_WAIT
    for (int i = 0; i < 64; ++i) o[i] *= scale;
#endif
#else
    for (int i = 0; i < 32; ++i) p[i] = pack(__expf(s[2*i] - mx), __expf(s[2*i+1] - mx));
    wg_wait<0>();
#endif
  }
  for (int i = 0; i < 64; ++i) out[threadIdx.x * 64 + i] = o[i];
}
