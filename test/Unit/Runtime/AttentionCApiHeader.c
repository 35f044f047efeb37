/*===- AttentionCApiHeader.c - The C ABI's header is C --------------------===*/
/* Compiled as C: the header must not need a C++ compiler, and a C
   compiler must lay the structs out as C++ does (the C++ test compares). */

#include "SinkAttn-c/Attention.h"

#include <stddef.h>

void sinkattnLayoutAsC(size_t layout[12]) {
  layout[0] = sizeof(SinkAttnTensor);
  layout[1] = sizeof(SinkAttnVarlenForwardArgs);
  layout[2] = offsetof(SinkAttnVarlenForwardArgs, window);
  layout[3] = offsetof(SinkAttnVarlenForwardArgs, softmax_scale);
  layout[4] = sizeof(SinkAttnForwardArgs);
  layout[5] = offsetof(SinkAttnForwardArgs, window);
  layout[6] = offsetof(SinkAttnForwardArgs, softmax_scale);
  layout[7] = sizeof(SinkAttnVarlenBackwardArgs);
  layout[8] = offsetof(SinkAttnVarlenBackwardArgs, window);
  layout[9] = offsetof(SinkAttnVarlenBackwardArgs, workspace_bytes);
  layout[10] = sizeof(SinkAttnBackwardArgs);
  layout[11] = offsetof(SinkAttnBackwardArgs, workspace_bytes);
}
