//===- Npy.h - NumPy .npy reading and writing ------------------*- C++ -*-===//
//
// Writes and reads the subset of the .npy format SinkAttn exchanges with
// Python reference implementations: format version 1.0 (2.0 is accepted
// when reading), little-endian, C order, dtypes
//   '<f4' float32, '<f2' float16, '<i4' int32, and
//   '<u2' for bfloat16: NumPy has no bf16, so bf16 tensors are stored as
//         their raw uint16 bit patterns.  In Python recover them with
//         `torch.from_numpy(a.astype(np.int16)).view(torch.bfloat16)` or
//         `(a.astype(np.uint32) << 16).view(np.float32)`.
// Every '<u2' file therefore reads back as NpyDType::BF16Bits.
//
//===----------------------------------------------------------------------===//

#ifndef SINKATTN_RUNTIME_NPY_H
#define SINKATTN_RUNTIME_NPY_H

#include "SinkAttn/Runtime/Status.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace sinkattn::rt {

enum class NpyDType { F32, F16, BF16Bits, I32 };

/// "<f4", "<f2", "<u2", "<i4".
const char *npyDescr(NpyDType dtype);
size_t npyElementSize(NpyDType dtype);

struct NpyArray {
  NpyDType dtype = NpyDType::F32;
  /// Empty shape = 0-d array holding one element.
  std::vector<uint64_t> shape;
  /// Little-endian element bytes, C order; size = elementCount()*element size.
  std::vector<uint8_t> data;

  uint64_t elementCount() const;
  bool operator==(const NpyArray &o) const {
    return dtype == o.dtype && shape == o.shape && data == o.data;
  }
};

NpyArray makeNpyF32(std::vector<uint64_t> shape, const std::vector<float> &values);
NpyArray makeNpyF16(std::vector<uint64_t> shape, const std::vector<uint16_t> &bits);
NpyArray makeNpyBf16(std::vector<uint64_t> shape, const std::vector<uint16_t> &bits);
NpyArray makeNpyI32(std::vector<uint64_t> shape, const std::vector<int32_t> &values);

/// Element accessors; fail when the dtype does not match (F32 / I32 / the
/// two 16-bit dtypes respectively).
Expected<std::vector<float>> npyAsF32(const NpyArray &array);
Expected<std::vector<int32_t>> npyAsI32(const NpyArray &array);
Expected<std::vector<uint16_t>> npyAsU16Bits(const NpyArray &array);

/// Serializes to .npy bytes; fails if data.size() does not match the shape.
Expected<std::string> encodeNpy(const NpyArray &array);
/// Parses .npy bytes (never crashes on malformed input).
Expected<NpyArray> decodeNpy(std::string_view bytes);

Status writeNpy(const std::string &path, const NpyArray &array);
Expected<NpyArray> readNpy(const std::string &path);

} // namespace sinkattn::rt

#endif // SINKATTN_RUNTIME_NPY_H
