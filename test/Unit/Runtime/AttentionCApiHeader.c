/*===- AttentionCApiHeader.c - The C ABI's header is C --------------------===*/
/* Compiled as C: the header must not need a C++ compiler. */

#include "SinkAttn-c/Attention.h"

int sinkattnHeaderCompilesAsC(void) {
  SinkAttnVarlenForwardArgs args = {0};
  args.q.dtype = SINKATTN_DTYPE_BF16;
  args.q.rank = SINKATTN_MAX_RANK;
  return args.q.rank == 4 ? SINKATTN_C_API_VERSION : -1;
}
