//===- TensorMap.h - TMA descriptor specs, validation, encoding -*- C++ -*-===//
//
// A TensorMapSpec is the plain-data description of a CUtensorMap (what
// cuTensorMapEncodeTiled / cuTensorMapEncodeIm2col take, minus the address).
// It lives in bundle manifests, so it can be validated on any machine.
//
// Dimension order: **innermost first**, exactly like the driver API.  For a
// row-major [rows, cols] matrix, globalDims = {cols, rows}, boxDims =
// {boxCols, boxRows}, globalStridesBytes = {rowPitchBytes}.  Dimension 0 is
// the contiguous one; its stride is implicitly the element size, so
// globalStridesBytes has rank-1 entries: globalStridesBytes[i] is the byte
// stride of dimension i+1.
//
//===----------------------------------------------------------------------===//

#ifndef SINKATTN_RUNTIME_TENSORMAP_H
#define SINKATTN_RUNTIME_TENSORMAP_H

#include "SinkAttn/Runtime/CudaDriver.h"
#include "SinkAttn/Runtime/DType.h"

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

namespace sinkattn::rt {

enum class TensorMapInterleave { None, B16, B32 };
enum class TensorMapSwizzle { None, B32, B64, B128 };
enum class TensorMapL2Promotion { None, B64, B128, B256 };
enum class TensorMapOobFill { None, NanRequestZeroFma };

/// Im2col-mode parameters (cuTensorMapEncodeIm2col).  Corners have rank-2
/// entries, innermost spatial dimension first (W, H, D), matching
/// globalDims[1..rank-2].
struct Im2colSpec {
  std::vector<int32_t> pixelBoxLowerCorner;
  std::vector<int32_t> pixelBoxUpperCorner;
  uint32_t channelsPerPixel = 0;
  uint32_t pixelsPerColumn = 0;

  bool operator==(const Im2colSpec &o) const;
  bool operator!=(const Im2colSpec &o) const { return !(*this == o); }
};

struct TensorMapSpec {
  DType dtype = DType::BF16;
  /// Elements per dimension, innermost first; size() is the rank.
  std::vector<uint64_t> globalDims;
  /// Byte strides of dimensions 1..rank-1 (rank-1 entries).
  std::vector<uint64_t> globalStridesBytes;
  /// Box extent per dimension (tiled mode, rank entries).  Must be empty in
  /// im2col mode, where channelsPerPixel/pixelsPerColumn define the box.
  std::vector<uint32_t> boxDims;
  /// Traversal step per dimension (rank entries, usually all 1).
  std::vector<uint32_t> elementStrides;
  TensorMapInterleave interleave = TensorMapInterleave::None;
  TensorMapSwizzle swizzle = TensorMapSwizzle::None;
  TensorMapL2Promotion l2Promotion = TensorMapL2Promotion::None;
  TensorMapOobFill oobFill = TensorMapOobFill::None;
  /// Set for an im2col tensor map; unset for a tiled one.
  std::optional<Im2colSpec> im2col;

  size_t rank() const { return globalDims.size(); }
  bool isIm2col() const { return im2col.has_value(); }

  bool operator==(const TensorMapSpec &o) const;
  bool operator!=(const TensorMapSpec &o) const { return !(*this == o); }
};

/// Checks every TMA rule that does not depend on the address; the message
/// names the rule broken, e.g. "box dimension 1 is 300; TMA boxes are at most
/// 256 elements per dimension".  Rules: tiled rank 2..5 (hardware allows 1,
/// SinkAttn never uses it), im2col rank 3..5, rank >= 3 with interleave;
/// global dims 1..2^32; global strides multiples of 16 bytes (32 with 32B
/// interleave) and < 2^40; box dims 1..256; without interleave the inner box
/// is a multiple of 16 bytes and, with swizzle, at most the swizzle span
/// (32/64/128 bytes); 32B interleave needs 32B swizzle; element strides
/// 1..8; NaN OOB fill only for floating-point types; im2col corner ranges,
/// channelsPerPixel 1..256, pixelsPerColumn 1..1024.
Status validate(const TensorMapSpec &spec);

/// The encode-time rule: 16-byte aligned base (32 with 32B interleave).
Status validateGlobalAddress(const TensorMapSpec &spec, uint64_t address);

/// Bytes the swizzle pattern spans (0 for None).
uint32_t swizzleSpanBytes(TensorMapSwizzle swizzle);

/// Largest inner box (elements of `dtype`) a swizzle mode admits; e.g. 64
/// for bf16 with 128B swizzle, which is why a d=128 bf16 tile is loaded as
/// two 64-column boxes.  0 means "no swizzle limit".
uint32_t maxInnerBoxElements(DType dtype, TensorMapSwizzle swizzle);

/// Bytes from the base address to one past the last byte the map can
/// address (dtypeSize*dims[0] + sum (dims[i]-1)*stride[i-1]); saturates at
/// UINT64_MAX.  Used to check that a map stays inside its buffer.
uint64_t globalExtentBytes(const TensorMapSpec &spec);

/// A tiled spec for a dense row-major tensor.  `shape` and `box` are given
/// outermost first (the way a user writes [B, H, S, D]) and are reversed
/// into the driver's innermost-first order; strides are contiguous.
TensorMapSpec makeRowMajorTiledSpec(DType dtype,
                                    const std::vector<uint64_t> &shape,
                                    const std::vector<uint32_t> &box,
                                    TensorMapSwizzle swizzle);

/// validate() + validateGlobalAddress(), then cuTensorMapEncodeTiled or
/// cuTensorMapEncodeIm2col.
Expected<CUtensorMap> encode(const CudaDriver &driver,
                             const TensorMapSpec &spec,
                             CUdeviceptr globalAddress);

// Manifest spellings.  Swizzle: "none", "32B", "64B", "128B".  Interleave:
// "none", "16B", "32B".  L2 promotion: "none", "64B", "128B", "256B".  OOB
// fill: "none", "nan_request_zero_fma".
const char *interleaveName(TensorMapInterleave v);
const char *swizzleName(TensorMapSwizzle v);
const char *l2PromotionName(TensorMapL2Promotion v);
const char *oobFillName(TensorMapOobFill v);
std::optional<TensorMapInterleave> parseInterleave(std::string_view s);
std::optional<TensorMapSwizzle> parseSwizzle(std::string_view s);
std::optional<TensorMapL2Promotion> parseL2Promotion(std::string_view s);
std::optional<TensorMapOobFill> parseOobFill(std::string_view s);

} // namespace sinkattn::rt

#endif // SINKATTN_RUNTIME_TENSORMAP_H
