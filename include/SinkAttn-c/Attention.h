//===- Attention.h - C ABI of the attention kernel library --------*- C -*-===//
//
// Attention with sinks on device tensors, from a kernel library (a directory
// of bundles compiled for run-time shapes), for programs and language
// bindings that cannot use the C++ API (SinkAttn/Runtime/Attention.h):
// libsinkattn.so exports only these functions and needs neither MLIR nor a
// CUDA toolkit (it loads the driver, libcuda.so.1, when a library opens).
//
//   SinkAttnLibrary *library;
//   if (sinkattnLibraryOpen("/path/to/kernels", 0, &library))
//     fprintf(stderr, "%s\n", sinkattnLastError());
//   SinkAttnVarlenForwardArgs args = {...};
//   SinkAttnStatus status = sinkattnVarlenForward(library, &args, stream);
//   sinkattnLibraryClose(library);
//
// Every function returns a status and, when it is not SINKATTN_SUCCESS,
// leaves a message naming the argument and what was expected in
// sinkattnLastError() (per thread). Calls on one library may come from any
// thread; the library serializes them.
//
//===----------------------------------------------------------------------===//

#ifndef SINKATTN_C_ATTENTION_H
#define SINKATTN_C_ATTENTION_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The version of this ABI: the structs' layouts and the functions. Versions
   only add (2: the BSHD forward; 3: the varlen backward), so a binding
   checks that sinkattnApiVersion() is at least the version it was written
   for. */
#define SINKATTN_C_API_VERSION 3

typedef enum SinkAttnStatus {
  SINKATTN_SUCCESS = 0,
  /* The call's arguments are not valid; nothing ran. */
  SINKATTN_ERROR_INVALID_ARGUMENT = 1,
  /* The arguments are valid, but the library holds no kernel for the
     call's variant (the message says how to compile one). */
  SINKATTN_ERROR_NOT_SUPPORTED = 2,
  /* The driver, the GPU or the kernel library's files failed. */
  SINKATTN_ERROR_RUNTIME = 3
} SinkAttnStatus;

typedef enum SinkAttnDType {
  SINKATTN_DTYPE_BF16 = 0,
  SINKATTN_DTYPE_F16 = 1,
  SINKATTN_DTYPE_F32 = 2,
  SINKATTN_DTYPE_I32 = 3
} SinkAttnDType;

#define SINKATTN_MAX_RANK 4

/* A tensor in GPU memory. `strides` are in elements, outermost first; all
   zero means dense row-major. Only q, k, v and out may be strided, and only
   between tokens (any stride of a multiple of 16 bytes that keeps tokens
   apart: views of a fused QKV tensor; in a BSHD call also between
   sequences, the length times the token stride), and a BSHD call's lse
   (see SinkAttnForwardArgs); their addresses must be 16-byte aligned, and
   out and lse may not share memory with another tensor. */
typedef struct SinkAttnTensor {
  uint64_t data; /* device address */
  int32_t dtype; /* a SinkAttnDType */
  int32_t rank;  /* 0 to SINKATTN_MAX_RANK */
  int64_t sizes[SINKATTN_MAX_RANK];
  int64_t strides[SINKATTN_MAX_RANK];
} SinkAttnTensor;

/* The forward over packed sequences, as flash_attn_varlen_func takes it:
   O = softmax([Q K^T * scale, sink]) V without the sink's column. */
typedef struct SinkAttnVarlenForwardArgs {
  SinkAttnTensor q, k, v; /* [Tq, H, D], [Tkv, HK, D], bf16 or f16 */
  SinkAttnTensor out;     /* [Tq, H, D], q's dtype: written */
  SinkAttnTensor lse;     /* [H, Tq] f32: written (natural log, sink in) */
  SinkAttnTensor sinks;   /* [H] f32 or bf16; data 0 and rank 0: no sink */
  SinkAttnTensor cu_seqlens_q, cu_seqlens_k; /* [B + 1] i32 offsets */
  int64_t max_seqlen_q, max_seqlen_k;        /* longest sequences */
  int32_t causal;       /* nonzero: causal, right-aligned per sequence */
  int64_t window;       /* keys per row at most, causal only; 0: none */
  double softmax_scale; /* 0: 1 / sqrt(D) */
} SinkAttnVarlenForwardArgs;

/* The forward over a batch of sequences of one length, as flash_attn_func
   takes it (BSHD); it runs as the varlen forward over the batch's tokens, so
   a batch's tokens must be evenly spaced: the batch stride is the length
   times the token stride (a contiguous tensor, or a view of a fused
   [B, S, H + 2 HK, D] QKV tensor). Version 2. */
typedef struct SinkAttnForwardArgs {
  SinkAttnTensor q, k, v; /* [B, SQ, H, D], [B, SKV, HK, D], bf16 or f16 */
  SinkAttnTensor out;     /* [B, SQ, H, D], q's dtype: written */
  /* [B, H, SQ] f32, written (natural log, sink in): a view of an
     [H, B * SQ] tensor, strides {SQ, B * SQ, 1}, as the varlen forward
     writes it */
  SinkAttnTensor lse;
  SinkAttnTensor sinks; /* [H] f32 or bf16; data 0 and rank 0: no sink */
  int32_t causal;       /* nonzero: causal, right-aligned when SQ < SKV */
  int64_t window;       /* keys per row at most, causal only; 0: none */
  double softmax_scale; /* 0: 1 / sqrt(D) */
} SinkAttnForwardArgs;

/* The causal backward over packed sequences (version 3): the gradients of
   the forward of the same q, k, v, sinks, offsets, lengths, window and scale
   (its out and lse) for the upstream gradient dout. dq, dk and dv may be
   strided between tokens like q, k and v (views of one fused dQKV tensor).
   The kernels' scratch is `workspace_bytes` (at least
   sinkattnVarlenBackwardWorkspaceBytes) of device memory at `workspace`
   (256-byte aligned), which must stay allocated until the call's work on
   its stream is done. */
typedef struct SinkAttnVarlenBackwardArgs {
  SinkAttnTensor q, k, v;    /* as the forward's */
  SinkAttnTensor out;        /* the forward's output [Tq, H, D] */
  SinkAttnTensor lse;        /* the forward's [H, Tq] f32 */
  SinkAttnTensor dout;       /* [Tq, H, D], q's dtype */
  SinkAttnTensor dq, dk, dv; /* written: like q, k and v */
  SinkAttnTensor sinks;      /* [H] f32 or bf16; data 0 and rank 0: no sink */
  SinkAttnTensor dsinks;     /* [H] f32, written; with sinks only */
  SinkAttnTensor cu_seqlens_q, cu_seqlens_k; /* [B + 1] i32 offsets */
  int64_t max_seqlen_q, max_seqlen_k;
  int32_t causal;       /* must be nonzero: the backward is causal */
  int64_t window;       /* keys per row at most; 0: none */
  double softmax_scale; /* 0: 1 / sqrt(D) */
  uint64_t workspace;   /* device address */
  uint64_t workspace_bytes;
} SinkAttnVarlenBackwardArgs;

/* The backward of the BSHD forward (version 3): the forward's tensors and
   lse view (SinkAttnForwardArgs), dout, dq, dk and dv [B, S, heads, D]
   like q and k, evenly spaced like them; the rest as the varlen
   backward's. */
typedef struct SinkAttnBackwardArgs {
  SinkAttnTensor q, k, v, out, lse;
  SinkAttnTensor dout, dq, dk, dv;
  SinkAttnTensor sinks;  /* [H] f32 or bf16; data 0 and rank 0: no sink */
  SinkAttnTensor dsinks; /* [H] f32, written; with sinks only */
  int32_t causal;        /* must be nonzero */
  int64_t window;
  double softmax_scale;
  uint64_t workspace;
  uint64_t workspace_bytes;
} SinkAttnBackwardArgs;

typedef struct SinkAttnLibrary SinkAttnLibrary;

/* SINKATTN_C_API_VERSION of the loaded library. */
int32_t sinkattnApiVersion(void);

/* The message of the last call on this thread that did not succeed (""
   before any). Valid until this thread's next call. */
const char *sinkattnLastError(void);

/* The kernel library built and installed with libsinkattn.so (share/
   sinkattn/kernels beside its lib/): one kernel per supported variant and
   form; "" where it cannot tell its own path. A runtime-only build has
   none (it cannot compile): give a directory. */
const char *sinkattnDefaultKernelLibrary(void);

/* Opens the kernel library in `directory` (null: the installed one) on GPU
   `device` (its primary context) and stores it in `*library`. Errors: a
   null pointer to store it in, no driver or GPU, a directory without
   kernels compiled for run-time shapes. */
SinkAttnStatus sinkattnLibraryOpen(const char *directory, int32_t device,
                                   SinkAttnLibrary **library);

/* Releases the library (a null library is ignored). The caller must not
   use it, or have work of it queued that it still needs, after this. */
void sinkattnLibraryClose(SinkAttnLibrary *library);

/* Checks `args` without a GPU: SINKATTN_SUCCESS or
   SINKATTN_ERROR_INVALID_ARGUMENT. */
SinkAttnStatus
sinkattnValidateVarlenForward(const SinkAttnVarlenForwardArgs *args);

/* Validates `args` and queues the forward on `stream` (a CUstream of the
   library's device; null: its legacy default stream), asynchronously; the
   variant's kernel is loaded on its first call (its SASS for this GPU where
   the library has it, else JIT-compiled from PTX). The calling thread's
   current context is left as it was. */
SinkAttnStatus sinkattnVarlenForward(SinkAttnLibrary *library,
                                     const SinkAttnVarlenForwardArgs *args,
                                     void *stream);

/* sinkattnValidateVarlenForward for a BSHD call (version 2). */
SinkAttnStatus sinkattnValidateForward(const SinkAttnForwardArgs *args);

/* sinkattnVarlenForward for a BSHD call (version 2); the library uploads
   the offsets it runs with on its first BSHD call. */
SinkAttnStatus sinkattnForward(SinkAttnLibrary *library,
                               const SinkAttnForwardArgs *args, void *stream);

/* Checks a backward call's arguments without a GPU (its workspace is
   checked at launch): SINKATTN_SUCCESS or SINKATTN_ERROR_INVALID_ARGUMENT
   (version 3). */
SinkAttnStatus
sinkattnValidateVarlenBackward(const SinkAttnVarlenBackwardArgs *args);

/* Stores in `*bytes` the workspace a backward call needs (its workspace
   fields are not read); SINKATTN_ERROR_NOT_SUPPORTED where the library has
   no backward kernel for the call's variant (version 3). */
SinkAttnStatus
sinkattnVarlenBackwardWorkspaceBytes(SinkAttnLibrary *library,
                                     const SinkAttnVarlenBackwardArgs *args,
                                     uint64_t *bytes);

/* Validates `args` and queues the backward on `stream`, as
   sinkattnVarlenForward does the forward (version 3). */
SinkAttnStatus sinkattnVarlenBackward(SinkAttnLibrary *library,
                                      const SinkAttnVarlenBackwardArgs *args,
                                      void *stream);

/* The three functions above for a BSHD backward call (version 3). */
SinkAttnStatus sinkattnValidateBackward(const SinkAttnBackwardArgs *args);
SinkAttnStatus sinkattnBackwardWorkspaceBytes(SinkAttnLibrary *library,
                                              const SinkAttnBackwardArgs *args,
                                              uint64_t *bytes);
SinkAttnStatus sinkattnBackward(SinkAttnLibrary *library,
                                const SinkAttnBackwardArgs *args, void *stream);

/* How many of the library's kernels have been loaded so far (-1 for a null
   library). */
int64_t sinkattnLibraryCompiledKernels(const SinkAttnLibrary *library);

#ifdef __cplusplus
}
#endif

#endif /* SINKATTN_C_ATTENTION_H */
