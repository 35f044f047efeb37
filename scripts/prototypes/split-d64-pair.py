#!/usr/bin/env python3
"""Prototype (session 31, docs/PERF.md "call E"; not part of the product):
FlashAttention 3's D 64 shape for the split backward (`--dq atomic
--dkdv-warpgroups 2`): the dK/dV kernel steps two query blocks per iteration
(Q/dO tiles of 128 rows, S^T/dP^T m64n128k64, dV/dK m64n64k128 from
registers, dS^T as one 64 x 128 tile per warpgroup, each warpgroup's dQ over
its 64 rows of the pair as two chained k64 wgmmas, fp32 dQ in [parity][half]
tiles with two reduce-adds per pair). It rewrites the kernel generator's
tile IR textually, so it applies to the IR of the commit it was written
against (7833f2f; seed shapes: BHSD, causal, S a multiple of 128) and may
need its patterns updated after the generator changes. Measured: correct,
9.5-10.3% slower than the split (about 250 registers needed, 240 available).

usage: split-d64-pair.py SPLIT.mlir OUT.mlir [--late] [--dv-early-wait] [--ds-from-bf16]
  SPLIT.mlir: sinkattn-runner compile --kernel sink-bwd --dq atomic
    --dkdv-warpgroups 2 --batch 1 --heads 64 --kv-heads 8 --seq-q S --seq-kv S
    --head-dim 64 --emit tile -o SPLIT.mlir
  Then, as the runner lowers it (this reproduces its PTX byte for byte on
  the unmodified IR):
    sinkattn-opt OUT.mlir --sinkattn-tile-to-nvgpu -o OUT.nvgpu.mlir
    sinkattn-opt OUT.nvgpu.mlir --sinkattn-gpu-to-ptx=bare-pointers=1 \
        --sinkattn-write-ptx=output-dir=PTXDIR -o /dev/null
  and put PTXDIR/sink_bwd.ptx into the split's bundle (--emit bundle) as
  kernel.ptx, with the dK/dV launch's shared_memory_bytes and its tensor
  maps' box_dims taken from sink_bwd_dkdv's sinkattn.dynamic_shared_memory_bytes
  and sinkattn.tensor_maps in OUT.nvgpu.mlir (box order reversed).
  The measured form: --late --dv-early-wait.
"""
import re, sys
src, dst = sys.argv[1], sys.argv[2]
text = open(src).read()
start = text.index("    gpu.func @sink_bwd_dkdv(")
end = text.index("    gpu.func @sink_bwd_dkdv_sum(")
f = text[start:end]
WG = "#gpu.address_space<workgroup>"
def rep(old, new, count=1):
    global f
    n = f.count(old)
    if n != count:
        sys.exit(f"expected {count} of {old!r}, found {n}")
    f = f.replace(old, new)
Q64 = f"memref<64x64xbf16, {WG}>"
Q128 = f"memref<128x64xbf16, {WG}>"
# Q/dO tiles of 128 rows (every use of the unstrided 64x64 bf16 type).
n = f.count(Q64)
rep(Q64, Q128, n)
# Two query blocks' row records.
ST = f"memref<3x64xf32, {WG}>"
rep(ST, f"memref<2x3x64xf32, {WG}>", f.count(ST))
for row in ("%c0", "%c1", "%c2_19"):
    pat = re.compile(r"(\s*)(%\w+) = memref\.load %alloc_13\[" + re.escape(row) + r", (%arg\d+)\] : memref<2x3x64xf32, " + re.escape(WG) + ">")
    def sub(m):
        ind, res, ii = m.group(1), m.group(2), m.group(3)
        return (f"{ind}%pairHalf = arith.divui {ii}, %c64 : index{ind}%pairRow = arith.remui {ii}, %c64 : index"
                f"{ind}{res} = memref.load %alloc_13[%pairHalf, {row}, %pairRow] : memref<2x3x64xf32, {WG}>")
    f, k = pat.subn(sub, f)
    if k == 0:
        sys.exit(f"no stats load of row {row}")
# Step two blocks.
rep("step %c1 iter_args", "step %c2 iter_args")
rep("      %c2 = arith.constant 2 : index\n", "")
rep("      %alloc = memref.alloc()", "      %c2 = arith.constant 2 : index\n      %zero128 = tile.fill %cst : !tile.fragment<64x128xf32>\n      %alloc = memref.alloc()")
# S^T and dP^T: 64 x 128.
rep(f", %29 {{async, transpose_b}} : memref<64x64xbf16, strided<[64, 1], offset: ?>, {WG}>, {Q128}, !tile.fragment<64x64xf32>",
    f", %zero128 {{async, transpose_b}} : memref<64x64xbf16, strided<[64, 1], offset: ?>, {WG}>, {Q128}, !tile.fragment<64x128xf32>", 2)
rep("%41 = tile.gemm_wait %39 pending 1 : !tile.fragment<64x64xf32>", "%41 = tile.gemm_wait %39 pending 1 : !tile.fragment<64x128xf32>")
rep("%59 = tile.gemm_wait %40 pending 1 : !tile.fragment<64x64xf32>", "%59 = tile.gemm_wait %40 pending 1 : !tile.fragment<64x128xf32>")
# The pair's mask: its last row is m0 + 127.
rep("%43 = arith.addi %37, %c63 : index", "%43 = arith.addi %37, %c127 : index")
rep("%47 = arith.addi %42, %c63 : index", "%47 = arith.addi %42, %c127 : index")
# Elementwise fragments of S's shape.
loop_start = f.index("%33:3 = scf.for")
loop_end = f.index("} {tile.num_stages")
body = f[loop_start:loop_end]
body = body.replace("(!tile.fragment<64x64xf32>, !tile.fragment<64x64xf32>) -> !tile.fragment<64x64xf32>", "(!tile.fragment<64x128xf32>, !tile.fragment<64x128xf32>) -> !tile.fragment<64x128xf32>")
body = body.replace("(!tile.fragment<64x64xf32>) -> !tile.fragment<64x64xf32>", "(!tile.fragment<64x128xf32>) -> !tile.fragment<64x128xf32>")
body = body.replace("scf.if %52 -> (!tile.fragment<64x64xf32>)", "scf.if %52 -> (!tile.fragment<64x128xf32>)")
body = body.replace("scf.yield %72 : !tile.fragment<64x64xf32>", "scf.yield %72 : !tile.fragment<64x128xf32>")
body = body.replace("tile.cast %56 : !tile.fragment<64x64xf32> to !tile.fragment<64x64xbf16>", "tile.cast %56 : !tile.fragment<64x128xf32> to !tile.fragment<64x128xbf16>")
body = body.replace("tile.cast %64 : !tile.fragment<64x64xf32> to !tile.fragment<64x64xbf16>", "tile.cast %64 : !tile.fragment<64x128xf32> to !tile.fragment<64x128xbf16>")
body = body.replace("tile.partial_reduce sum %61 : !tile.fragment<64x64xf32> -> !tile.fragment<64x8xf32>", "tile.partial_reduce sum %61 : !tile.fragment<64x128xf32> -> !tile.fragment<64x8xf32>")
# dV and dK: A = P^T / dS^T (64 x 128, registers), K = 128.
body = body.replace(f"%58 = tile.gemm %57, %alloc_12, %arg11 {{async}} : !tile.fragment<64x64xbf16>, {Q128}", f"%58 = tile.gemm %57, %alloc_12, %arg11 {{async}} : !tile.fragment<64x128xbf16>, {Q128}")
body = body.replace(f"%67 = tile.gemm %65, %alloc_11, %arg10 {{async}} : !tile.fragment<64x64xbf16>, {Q128}", f"%67 = tile.gemm %65, %alloc_11, %arg10 {{async}} : !tile.fragment<64x128xbf16>, {Q128}")
# dS^T into the block's 128 x 128 tile (the warpgroup's 64 keys).
body = body.replace(f"tile.store %65, %subview_16[%c0, %c0] : !tile.fragment<64x64xbf16>, memref<64x64xbf16, strided<[64, 1], offset: ?>, {WG}>",
                    f"tile.store %65, %subview_16[%c0, %c0] : !tile.fragment<64x128xbf16>, memref<64x128xbf16, strided<[128, 1], offset: ?>, {WG}>")
# dQ: this warpgroup's 64 query rows of the pair (a panel of dS^T's columns, transposed) against all of K.
body = body.replace(f"%66 = tile.gemm %alloc_15, %subview_17, %31 {{async, transpose_a}} : memref<128x64xbf16, {WG}>, memref<128x32xbf16, strided<[64, 1], offset: ?>, {WG}>, !tile.fragment<64x32xf32>",
                    f"%dqFirst = tile.gemm %dsHalf0, %kLo, %28 {{transpose_a}} : memref<64x64xbf16, strided<[128, 1], offset: ?>, {WG}>, memref<64x64xbf16, strided<[64, 1], offset: ?>, {WG}>, !tile.fragment<64x64xf32>\n"
                    f"        %66 = tile.gemm %dsHalf1, %kHi, %dqFirst {{async, transpose_a}} : memref<64x64xbf16, strided<[128, 1], offset: ?>, {WG}>, memref<64x64xbf16, strided<[64, 1], offset: ?>, {WG}>, !tile.fragment<64x64xf32>")
body = body.replace("%69 = tile.gemm_wait %66 pending 1 : !tile.fragment<64x32xf32>", "%69 = tile.gemm_wait %66 pending 1 : !tile.fragment<64x64xf32>")
# fp32 dQ: [parity, half] tiles of 64 x 64, two reduce-adds per pair.
old_store = body[body.index("%subview_23 = memref.subview"):body.index("%71 = tile.gemm_wait")]
new_store = (f"%subview_23 = memref.subview %alloc_18[%70, %11, 0, 0] [1, 1, 64, 64] [1, 1, 1, 1] : memref<2x2x64x64xf32, {WG}> to memref<64x64xf32, strided<[64, 1], offset: ?>, {WG}>\n"
             f"        tile.store %69, %subview_23[%c0, %c0] : !tile.fragment<64x64xf32>, memref<64x64xf32, strided<[64, 1], offset: ?>, {WG}>\n"
             f"        %dqLo = memref.subview %alloc_18[%70, 0, 0, 0] [1, 1, 64, 64] [1, 1, 1, 1] : memref<2x2x64x64xf32, {WG}> to memref<64x64xf32, strided<[64, 1], offset: ?>, {WG}>\n"
             f"        %dqHi = memref.subview %alloc_18[%70, 1, 0, 0] [1, 1, 64, 64] [1, 1, 1, 1] : memref<2x2x64x64xf32, {WG}> to memref<64x64xf32, strided<[64, 1], offset: ?>, {WG}>\n"
             f"        %rowHi = arith.addi %38, %c64 : index\n"
             f"        tile.copy %dqLo, %arg7[%0, %3, %38, %c0] {{add, pending = 2 : i64}} : memref<64x64xf32, strided<[64, 1], offset: ?>, {WG}>, ARG7TYPE\n"
             f"        tile.copy %dqHi, %arg7[%0, %3, %rowHi, %c0] {{add, pending = 2 : i64}} : memref<64x64xf32, strided<[64, 1], offset: ?>, {WG}>, ARG7TYPE\n        ")
arg7 = re.search(r"%arg7: (memref<[^>]*>)", f).group(1)
body = body.replace(old_store, new_store.replace("ARG7TYPE", arg7))
f = f[:loop_start] + body + f[loop_end:]
# Allocations: dS^T 128 x 128, its warpgroup rows and dQ halves; fp32 dQ [2][2][64][64].
rep(f"%alloc_15 = memref.alloc() : memref<128x64xbf16, {WG}>", f"%alloc_15 = memref.alloc() : memref<2x64x128xbf16, {WG}>")
rep(f"%subview_16 = memref.subview %alloc_15[%12, 0] [64, 64] [1, 1] : memref<128x64xbf16, {WG}> to memref<64x64xbf16, strided<[64, 1], offset: ?>, {WG}>",
    f"%subview_16 = memref.subview %alloc_15[%11, 0, 0] [1, 64, 128] [1, 1, 1] : memref<2x64x128xbf16, {WG}> to memref<64x128xbf16, strided<[128, 1], offset: ?>, {WG}>\n"
    f"      %dsHalf0 = memref.subview %alloc_15[0, 0, %12] [1, 64, 64] [1, 1, 1] : memref<2x64x128xbf16, {WG}> to memref<64x64xbf16, strided<[128, 1], offset: ?>, {WG}>\n"
    f"      %dsHalf1 = memref.subview %alloc_15[1, 0, %12] [1, 64, 64] [1, 1, 1] : memref<2x64x128xbf16, {WG}> to memref<64x64xbf16, strided<[128, 1], offset: ?>, {WG}>\n"
    f"      %kLo = memref.subview %alloc[%c0, 0] [64, 64] [1, 1] : memref<128x64xbf16, {WG}> to memref<64x64xbf16, strided<[64, 1], offset: ?>, {WG}>\n"
    f"      %kHi = memref.subview %alloc[%c64, 0] [64, 64] [1, 1] : memref<128x64xbf16, {WG}> to memref<64x64xbf16, strided<[64, 1], offset: ?>, {WG}>")
rep(f"%alloc_18 = memref.alloc() : memref<2x64x64xf32, {WG}>", f"%alloc_18 = memref.alloc() : memref<2x2x64x64xf32, {WG}>")
# The epilogue's staging: [0][wg], adds from [0][0] and [0][1].
rep(f"%subview_20 = memref.subview %alloc_18[%11, 0, 0] [1, 64, 64] [1, 1, 1] : memref<2x64x64xf32, {WG}>",
    f"%subview_20 = memref.subview %alloc_18[%c0, %11, 0, 0] [1, 1, 64, 64] [1, 1, 1, 1] : memref<2x2x64x64xf32, {WG}>")
rep(f"%subview_21 = memref.subview %alloc_18[%c0, 0, 0] [1, 64, 64] [1, 1, 1] : memref<2x64x64xf32, {WG}>",
    f"%subview_21 = memref.subview %alloc_18[%c0, 0, 0, 0] [1, 1, 64, 64] [1, 1, 1, 1] : memref<2x2x64x64xf32, {WG}>")
rep(f"%subview_22 = memref.subview %alloc_18[%c1, 0, 0] [1, 64, 64] [1, 1, 1] : memref<2x64x64xf32, {WG}>",
    f"%subview_22 = memref.subview %alloc_18[%c0, 1, 0, 0] [1, 1, 64, 64] [1, 1, 1, 1] : memref<2x2x64x64xf32, {WG}>")
# The unused 32-column panel of K.
f = re.sub(r"\n\s*%subview_17 = memref.subview[^\n]*", "", f)
f = re.sub(r"\n\s*%31 = tile.fill %cst : !tile.fragment<64x32xf32>", "", f)
def move_line(f, pattern, after, change=lambda line: line):
    """Moves the first line matching `pattern` to just after the first line
    matching `after` (both regexes for a line's start), through `change`."""
    line = re.search(r"\n(\s*" + pattern + r"[^\n]*)", f).group(1)
    f = f.replace("\n" + line, "", 1)
    anchor = re.search(r"\n\s*" + after + r"[^\n]*", f)
    return f[:anchor.end()] + "\n" + change(line) + f[anchor.end():]


# Late dP^T (dP^T issued after the exponentials, before dV; dV in flight under
# dS^T's map), so that S^T's and dP^T's 64 registers each are not live together.
if "--late" in sys.argv:
    f = f.replace("%41 = tile.gemm_wait %39 pending 1", "%41 = tile.gemm_wait %39 pending 0")
    f = move_line(f, r"%40 = tile\.gemm ", r"%57 = tile\.cast ")
# dV waited for right after dP^T (its P^T registers free before dS^T's map).
if "--dv-early-wait" in sys.argv:
    f = move_line(f, r"%68 = tile\.gemm_wait %58 pending 2", r"%59 = tile\.gemm_wait ",
                  lambda line: line.replace("pending 2", "pending 0"))
# P ⊙ dP and dS^T from the rounded P^T (bf16, widened per element), so that
# P^T's fp32 registers die at the cast (numerics differ: a prototype).
if "--ds-from-bf16" in sys.argv:
    m57 = re.search(r"\n\s*%57 = tile\.cast [^\n]*", f)
    f = (f[:m57.end()] + "\n        %pWide = tile.cast %57 : !tile.fragment<64x128xbf16> to "
         "!tile.fragment<64x128xf32>" + f[m57.end():])
    f = f.replace("%60 = tile.map(%56, %59)", "%60 = tile.map(%pWide, %59)")
    f = f.replace("%64 = tile.map(%56, %60)", "%64 = tile.map(%pWide, %60)")
open(dst, "w").write(text[:start] + f + text[end:])
