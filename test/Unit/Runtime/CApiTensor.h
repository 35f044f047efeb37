//===- CApiTensor.h - The C ABI's tensor of a DeviceTensor, for tests -----===//

#ifndef SINKATTN_TEST_UNIT_RUNTIME_CAPITENSOR_H
#define SINKATTN_TEST_UNIT_RUNTIME_CAPITENSOR_H

#include "SinkAttn-c/Attention.h"
#include "SinkAttn/Runtime/Attention.h"

/// The C ABI's tensor for `t` (strides empty: all zero, dense).
inline SinkAttnTensor cTensor(const sinkattn::rt::DeviceTensor &t) {
  using sinkattn::rt::DType;
  SinkAttnTensor c = {};
  c.data = t.data;
  c.dtype = t.dtype == DType::BF16  ? SINKATTN_DTYPE_BF16
            : t.dtype == DType::F16 ? SINKATTN_DTYPE_F16
            : t.dtype == DType::F32 ? SINKATTN_DTYPE_F32
                                    : SINKATTN_DTYPE_I32;
  c.rank = int32_t(t.sizes.size());
  for (size_t d = 0; d < t.sizes.size(); ++d)
    c.sizes[d] = t.sizes[d];
  for (size_t d = 0; d < t.strides.size(); ++d)
    c.strides[d] = t.strides[d];
  return c;
}

#endif // SINKATTN_TEST_UNIT_RUNTIME_CAPITENSOR_H
