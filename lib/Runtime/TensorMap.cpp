//===- TensorMap.cpp - TMA descriptor specs, validation, encoding ---------===//
//
// The rules mirror the "requirements" list of cuTensorMapEncodeTiled /
// cuTensorMapEncodeIm2col in cuda.h.  Checking them ourselves matters because
// the driver answers every violation with a bare CUDA_ERROR_INVALID_VALUE.
//
//===----------------------------------------------------------------------===//

#include "SinkAttn/Runtime/TensorMap.h"

#include <algorithm>
#include <cstdio>
#include <string>

namespace sinkattn::rt {

bool Im2colSpec::operator==(const Im2colSpec &o) const {
  return pixelBoxLowerCorner == o.pixelBoxLowerCorner &&
         pixelBoxUpperCorner == o.pixelBoxUpperCorner &&
         channelsPerPixel == o.channelsPerPixel &&
         pixelsPerColumn == o.pixelsPerColumn;
}

bool TensorMapSpec::operator==(const TensorMapSpec &o) const {
  return dtype == o.dtype && globalDims == o.globalDims &&
         globalStridesBytes == o.globalStridesBytes && boxDims == o.boxDims &&
         elementStrides == o.elementStrides && interleave == o.interleave &&
         swizzle == o.swizzle && l2Promotion == o.l2Promotion &&
         oobFill == o.oobFill && im2col == o.im2col;
}

//===----------------------------------------------------------------------===//
// Enum spellings
//===----------------------------------------------------------------------===//

namespace {
template <typename E> struct NamedEnum {
  E value;
  const char *name;
};
constexpr NamedEnum<TensorMapInterleave> kInterleaves[] = {
    {TensorMapInterleave::None, "none"},
    {TensorMapInterleave::B16, "16B"},
    {TensorMapInterleave::B32, "32B"}};
constexpr NamedEnum<TensorMapSwizzle> kSwizzles[] = {
    {TensorMapSwizzle::None, "none"},
    {TensorMapSwizzle::B32, "32B"},
    {TensorMapSwizzle::B64, "64B"},
    {TensorMapSwizzle::B128, "128B"}};
constexpr NamedEnum<TensorMapL2Promotion> kL2Promotions[] = {
    {TensorMapL2Promotion::None, "none"},
    {TensorMapL2Promotion::B64, "64B"},
    {TensorMapL2Promotion::B128, "128B"},
    {TensorMapL2Promotion::B256, "256B"}};
constexpr NamedEnum<TensorMapOobFill> kOobFills[] = {
    {TensorMapOobFill::None, "none"},
    {TensorMapOobFill::NanRequestZeroFma, "nan_request_zero_fma"}};

template <typename E, size_t N>
const char *nameOf(const NamedEnum<E> (&table)[N], E v) {
  for (const auto &e : table)
    if (e.value == v)
      return e.name;
  return "?";
}
template <typename E, size_t N>
std::optional<E> parseOf(const NamedEnum<E> (&table)[N], std::string_view s) {
  for (const auto &e : table)
    if (s == e.name)
      return e.value;
  return std::nullopt;
}
} // namespace

const char *interleaveName(TensorMapInterleave v) { return nameOf(kInterleaves, v); }
const char *swizzleName(TensorMapSwizzle v) { return nameOf(kSwizzles, v); }
const char *l2PromotionName(TensorMapL2Promotion v) { return nameOf(kL2Promotions, v); }
const char *oobFillName(TensorMapOobFill v) { return nameOf(kOobFills, v); }
std::optional<TensorMapInterleave> parseInterleave(std::string_view s) {
  return parseOf(kInterleaves, s);
}
std::optional<TensorMapSwizzle> parseSwizzle(std::string_view s) {
  return parseOf(kSwizzles, s);
}
std::optional<TensorMapL2Promotion> parseL2Promotion(std::string_view s) {
  return parseOf(kL2Promotions, s);
}
std::optional<TensorMapOobFill> parseOobFill(std::string_view s) {
  return parseOf(kOobFills, s);
}

//===----------------------------------------------------------------------===//
// Validation
//===----------------------------------------------------------------------===//

uint32_t swizzleSpanBytes(TensorMapSwizzle swizzle) {
  switch (swizzle) {
  case TensorMapSwizzle::None:
    return 0;
  case TensorMapSwizzle::B32:
    return 32;
  case TensorMapSwizzle::B64:
    return 64;
  case TensorMapSwizzle::B128:
    return 128;
  }
  return 0;
}

uint32_t maxInnerBoxElements(DType dtype, TensorMapSwizzle swizzle) {
  uint32_t span = swizzleSpanBytes(swizzle);
  return span ? span / static_cast<uint32_t>(dtypeSize(dtype)) : 0;
}

static std::string str(uint64_t v) { return std::to_string(v); }

Status validate(const TensorMapSpec &spec) {
  const size_t rank = spec.rank();
  const bool im2col = spec.isIm2col();
  const uint64_t elemBytes = dtypeSize(spec.dtype);

  if (im2col) {
    if (rank < 3 || rank > 5)
      return Status::error("im2col tensor map rank is " + str(rank) +
                           "; im2col tensor maps must have rank 3 to 5");
  } else if (rank < 2 || rank > 5) {
    return Status::error("tensor map rank is " + str(rank) +
                         "; tiled tensor maps must have rank 2 to 5 (TMA "
                         "supports at most 5 dimensions)");
  }
  if (spec.interleave != TensorMapInterleave::None && rank < 3)
    return Status::error("interleaved tensor maps need rank >= 3, got " +
                         str(rank));

  if (spec.globalStridesBytes.size() != rank - 1)
    return Status::error("a rank-" + str(rank) + " tensor map needs " +
                         str(rank - 1) + " global strides (dimensions 1.." +
                         str(rank - 1) + "), got " +
                         str(spec.globalStridesBytes.size()));
  if (spec.elementStrides.size() != rank)
    return Status::error("a rank-" + str(rank) + " tensor map needs " +
                         str(rank) + " element strides, got " +
                         str(spec.elementStrides.size()));
  if (!im2col && spec.boxDims.size() != rank)
    return Status::error("a rank-" + str(rank) + " tensor map needs " +
                         str(rank) + " box dimensions, got " +
                         str(spec.boxDims.size()));
  if (im2col && !spec.boxDims.empty())
    return Status::error("im2col tensor maps take no box dimensions; the box "
                         "is channels_per_pixel x pixels_per_column");

  for (size_t i = 0; i < rank; ++i) {
    uint64_t d = spec.globalDims[i];
    if (d == 0 || d > (uint64_t(1) << 32))
      return Status::error("global dimension " + str(i) + " is " + str(d) +
                           "; TMA global dimensions must be between 1 and "
                           "2^32");
  }

  const uint64_t strideAlign =
      spec.interleave == TensorMapInterleave::B32 ? 32 : 16;
  for (size_t i = 0; i + 1 < rank; ++i) {
    uint64_t s = spec.globalStridesBytes[i];
    if (s % strideAlign != 0)
      return Status::error(
          "global stride of dimension " + str(i + 1) + " is " + str(s) +
          " bytes; TMA global strides must be multiples of " +
          str(strideAlign) + " bytes" +
          (strideAlign == 32 ? " with 32B interleave" : ""));
    if (s >= (uint64_t(1) << 40))
      return Status::error("global stride of dimension " + str(i + 1) +
                           " is " + str(s) +
                           " bytes; TMA global strides must be below 2^40");
  }

  for (size_t i = 0; i < spec.boxDims.size(); ++i) {
    uint32_t b = spec.boxDims[i];
    if (b == 0)
      return Status::error("box dimension " + str(i) +
                           " is 0; TMA box dimensions must be at least 1");
    if (b > 256)
      return Status::error("box dimension " + str(i) + " is " + str(b) +
                           "; TMA boxes are at most 256 elements per "
                           "dimension");
  }

  for (size_t i = 0; i < rank; ++i) {
    uint32_t e = spec.elementStrides[i];
    if (e < 1 || e > 8)
      return Status::error("element stride " + str(i) + " is " + str(e) +
                           "; TMA element strides must be between 1 and 8");
  }

  // The "inner box" is the contiguous run of bytes one box row covers.
  uint64_t innerElems = 0;
  const char *innerWhat = "";
  if (im2col) {
    const Im2colSpec &ic = *spec.im2col;
    if (ic.channelsPerPixel < 1 || ic.channelsPerPixel > 256)
      return Status::error("channels_per_pixel is " +
                           str(ic.channelsPerPixel) +
                           "; im2col tensor maps need 1 to 256 channels per "
                           "pixel");
    if (ic.pixelsPerColumn < 1 || ic.pixelsPerColumn > 1024)
      return Status::error("pixels_per_column is " + str(ic.pixelsPerColumn) +
                           "; im2col tensor maps need 1 to 1024 pixels per "
                           "column");
    const size_t spatial = rank - 2;
    if (ic.pixelBoxLowerCorner.size() != spatial ||
        ic.pixelBoxUpperCorner.size() != spatial)
      return Status::error("a rank-" + str(rank) +
                           " im2col tensor map needs " + str(spatial) +
                           " entries in each pixel box corner, got " +
                           str(ic.pixelBoxLowerCorner.size()) + " and " +
                           str(ic.pixelBoxUpperCorner.size()));
    // Corner offsets are stored in 16 bits total per corner, shared by the
    // spatial dimensions, hence the rank-dependent range.
    const int32_t limit = rank == 3 ? 32768 : rank == 4 ? 128 : 16;
    for (size_t i = 0; i < spatial; ++i) {
      for (int32_t v : {ic.pixelBoxLowerCorner[i], ic.pixelBoxUpperCorner[i]})
        if (v < -limit || v > limit - 1)
          return Status::error(
              "pixel box corner offset " + std::to_string(v) +
              " (spatial dimension " + str(i) + ") is out of range; a rank-" +
              str(rank) + " im2col tensor map allows [" +
              std::to_string(-limit) + ", " + std::to_string(limit - 1) + "]");
      int64_t extent = int64_t(spec.globalDims[i + 1]) +
                       ic.pixelBoxUpperCorner[i] - ic.pixelBoxLowerCorner[i];
      if (extent <= 0)
        return Status::error("the im2col pixel bounding box is empty along "
                             "spatial dimension " +
                             str(i) + "; it must have non-zero area");
    }
    innerElems = ic.channelsPerPixel;
    innerWhat = "channels_per_pixel";
  } else {
    innerElems = spec.boxDims[0];
    innerWhat = "box dimension 0";
  }

  const uint64_t innerBytes = innerElems * elemBytes;
  if (spec.interleave == TensorMapInterleave::None) {
    if (!im2col && innerBytes % 16 != 0)
      return Status::error(
          "inner box extent is " + str(innerElems) + " x " +
          dtypeName(spec.dtype) + " = " + str(innerBytes) +
          " bytes; TMA requires the inner box extent to be a multiple of 16 "
          "bytes");
    uint32_t span = swizzleSpanBytes(spec.swizzle);
    if (span && innerBytes > span)
      return Status::error(
          "inner box extent is " + str(innerBytes) + " bytes (" +
          std::string(innerWhat) + " = " + str(innerElems) + " x " +
          dtypeName(spec.dtype) + ") but " + swizzleName(spec.swizzle) +
          " swizzle spans only " + str(span) +
          " bytes; use an inner box of at most " +
          str(span / elemBytes) +
          " elements and issue several boxes per tile");
  }
  if (spec.interleave == TensorMapInterleave::B32 &&
      spec.swizzle != TensorMapSwizzle::B32)
    return Status::error(std::string("32B interleave requires 32B swizzle, "
                                     "got ") +
                         swizzleName(spec.swizzle));

  if (spec.oobFill == TensorMapOobFill::NanRequestZeroFma &&
      !isFloatingPoint(spec.dtype))
    return Status::error(std::string("oob_fill nan_request_zero_fma needs a "
                                     "floating-point dtype, got ") +
                         dtypeName(spec.dtype));
  return Status();
}

Status validateGlobalAddress(const TensorMapSpec &spec, uint64_t address) {
  uint64_t align = spec.interleave == TensorMapInterleave::B32 ? 32 : 16;
  if (address % align != 0)
    return Status::error("tensor map global address 0x" + [&] {
      char buf[32];
      snprintf(buf, sizeof(buf), "%llx",
               static_cast<unsigned long long>(address));
      return std::string(buf);
    }() + " is not " + str(align) + "-byte aligned, as TMA requires");
  return Status();
}

uint64_t globalExtentBytes(const TensorMapSpec &spec) {
  if (spec.globalDims.empty())
    return 0;
  uint64_t total = 0;
  if (__builtin_mul_overflow(spec.globalDims[0], dtypeSize(spec.dtype), &total))
    return UINT64_MAX;
  for (size_t i = 1; i < spec.globalDims.size(); ++i) {
    if (spec.globalDims[i] == 0)
      return 0;
    uint64_t stride =
        i - 1 < spec.globalStridesBytes.size() ? spec.globalStridesBytes[i - 1] : 0;
    uint64_t term = 0;
    if (__builtin_mul_overflow(spec.globalDims[i] - 1, stride, &term) ||
        __builtin_add_overflow(total, term, &total))
      return UINT64_MAX;
  }
  return total;
}

TensorMapSpec makeRowMajorTiledSpec(DType dtype,
                                    const std::vector<uint64_t> &shape,
                                    const std::vector<uint32_t> &box,
                                    TensorMapSwizzle swizzle) {
  TensorMapSpec spec;
  spec.dtype = dtype;
  spec.swizzle = swizzle;
  spec.globalDims.assign(shape.rbegin(), shape.rend());
  spec.boxDims.assign(box.rbegin(), box.rend());
  spec.elementStrides.assign(spec.globalDims.size(), 1);
  uint64_t stride = dtypeSize(dtype);
  for (size_t i = 0; i + 1 < spec.globalDims.size(); ++i) {
    stride *= spec.globalDims[i];
    spec.globalStridesBytes.push_back(stride);
  }
  return spec;
}

//===----------------------------------------------------------------------===//
// Encoding
//===----------------------------------------------------------------------===//

static CUtensorMapDataType toCu(DType t) {
  switch (t) {
  case DType::U8:
    return CU_TENSOR_MAP_DATA_TYPE_UINT8;
  case DType::U16:
    return CU_TENSOR_MAP_DATA_TYPE_UINT16;
  case DType::U32:
    return CU_TENSOR_MAP_DATA_TYPE_UINT32;
  case DType::I32:
    return CU_TENSOR_MAP_DATA_TYPE_INT32;
  case DType::U64:
    return CU_TENSOR_MAP_DATA_TYPE_UINT64;
  case DType::I64:
    return CU_TENSOR_MAP_DATA_TYPE_INT64;
  case DType::F16:
    return CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
  case DType::BF16:
    return CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
  case DType::F32:
    return CU_TENSOR_MAP_DATA_TYPE_FLOAT32;
  case DType::F64:
    return CU_TENSOR_MAP_DATA_TYPE_FLOAT64;
  case DType::F32Ftz:
    return CU_TENSOR_MAP_DATA_TYPE_FLOAT32_FTZ;
  case DType::TF32:
    return CU_TENSOR_MAP_DATA_TYPE_TFLOAT32;
  case DType::TF32Ftz:
    return CU_TENSOR_MAP_DATA_TYPE_TFLOAT32_FTZ;
  }
  return CU_TENSOR_MAP_DATA_TYPE_UINT8;
}

static CUtensorMapInterleave toCu(TensorMapInterleave v) {
  switch (v) {
  case TensorMapInterleave::None:
    return CU_TENSOR_MAP_INTERLEAVE_NONE;
  case TensorMapInterleave::B16:
    return CU_TENSOR_MAP_INTERLEAVE_16B;
  case TensorMapInterleave::B32:
    return CU_TENSOR_MAP_INTERLEAVE_32B;
  }
  return CU_TENSOR_MAP_INTERLEAVE_NONE;
}

static CUtensorMapSwizzle toCu(TensorMapSwizzle v) {
  switch (v) {
  case TensorMapSwizzle::None:
    return CU_TENSOR_MAP_SWIZZLE_NONE;
  case TensorMapSwizzle::B32:
    return CU_TENSOR_MAP_SWIZZLE_32B;
  case TensorMapSwizzle::B64:
    return CU_TENSOR_MAP_SWIZZLE_64B;
  case TensorMapSwizzle::B128:
    return CU_TENSOR_MAP_SWIZZLE_128B;
  }
  return CU_TENSOR_MAP_SWIZZLE_NONE;
}

static CUtensorMapL2promotion toCu(TensorMapL2Promotion v) {
  switch (v) {
  case TensorMapL2Promotion::None:
    return CU_TENSOR_MAP_L2_PROMOTION_NONE;
  case TensorMapL2Promotion::B64:
    return CU_TENSOR_MAP_L2_PROMOTION_L2_64B;
  case TensorMapL2Promotion::B128:
    return CU_TENSOR_MAP_L2_PROMOTION_L2_128B;
  case TensorMapL2Promotion::B256:
    return CU_TENSOR_MAP_L2_PROMOTION_L2_256B;
  }
  return CU_TENSOR_MAP_L2_PROMOTION_NONE;
}

static CUtensorMapFloatOOBfill toCu(TensorMapOobFill v) {
  return v == TensorMapOobFill::NanRequestZeroFma
             ? CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA
             : CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE;
}

Expected<CUtensorMap> encode(const CudaDriver &driver,
                             const TensorMapSpec &spec,
                             CUdeviceptr globalAddress) {
  SINKATTN_RT_TRY(validate(spec));
  SINKATTN_RT_TRY(validateGlobalAddress(spec, globalAddress));

  // The driver takes fixed-size C arrays; validate() guaranteed the sizes.
  cuuint64_t dims[5] = {}, strides[5] = {};
  cuuint32_t box[5] = {}, elemStrides[5] = {};
  const size_t rank = spec.rank();
  for (size_t i = 0; i < rank; ++i) {
    dims[i] = spec.globalDims[i];
    elemStrides[i] = spec.elementStrides[i];
    if (!spec.isIm2col())
      box[i] = spec.boxDims[i];
  }
  for (size_t i = 0; i + 1 < rank; ++i)
    strides[i] = spec.globalStridesBytes[i];

  CUtensorMap map;
  void *address = reinterpret_cast<void *>(static_cast<uintptr_t>(globalAddress));
  Status st;
  if (spec.isIm2col()) {
    const Im2colSpec &ic = *spec.im2col;
    int lower[3] = {}, upper[3] = {};
    std::copy(ic.pixelBoxLowerCorner.begin(), ic.pixelBoxLowerCorner.end(), lower);
    std::copy(ic.pixelBoxUpperCorner.begin(), ic.pixelBoxUpperCorner.end(), upper);
    st = SINKATTN_RT_CU(driver, cuTensorMapEncodeIm2col, &map, toCu(spec.dtype),
                        static_cast<cuuint32_t>(rank), address, dims, strides,
                        lower, upper, ic.channelsPerPixel, ic.pixelsPerColumn,
                        elemStrides, toCu(spec.interleave), toCu(spec.swizzle),
                        toCu(spec.l2Promotion), toCu(spec.oobFill));
  } else {
    st = SINKATTN_RT_CU(driver, cuTensorMapEncodeTiled, &map, toCu(spec.dtype),
                        static_cast<cuuint32_t>(rank), address, dims, strides,
                        box, elemStrides, toCu(spec.interleave),
                        toCu(spec.swizzle), toCu(spec.l2Promotion),
                        toCu(spec.oobFill));
  }
  SINKATTN_RT_TRY(st);
  return map;
}

} // namespace sinkattn::rt
