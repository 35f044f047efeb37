//===- Bundle.cpp - Compiled-kernel bundles (kernel.ptx + manifest) -------===//

#include "SinkAttn/Runtime/Bundle.h"
#include "SinkAttn/Runtime/Float16.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <numeric>
#include <set>

namespace sinkattn::rt {

const char *paramKindName(ParamKind kind) {
  switch (kind) {
  case ParamKind::Buffer:
    return "buffer";
  case ParamKind::Scalar:
    return "scalar";
  case ParamKind::TensorMap:
    return "tensor_map";
  }
  return "?";
}

const char *bufferRoleName(BufferRole role) {
  return role == BufferRole::Input ? "input" : "output";
}

bool BundleParam::operator==(const BundleParam &o) const {
  return name == o.name && kind == o.kind && dtype == o.dtype &&
         intValue == o.intValue && floatValue == o.floatValue &&
         shape == o.shape && role == o.role && kernelArg == o.kernelArg &&
         descriptor == o.descriptor && dynamicDims == o.dynamicDims &&
         strides == o.strides && buffer == o.buffer && tensorMap == o.tensorMap;
}

bool BundleLaunch::operator==(const BundleLaunch &o) const {
  return entry == o.entry && grid == o.grid && block == o.block &&
         cluster == o.cluster && sharedMemoryBytes == o.sharedMemoryBytes &&
         args == o.args && setup == o.setup && overlapsNext == o.overlapsNext;
}

bool Bundle::operator==(const Bundle &o) const {
  return formatVersion == o.formatVersion && kernel == o.kernel &&
         entry == o.entry && grid == o.grid && block == o.block &&
         cluster == o.cluster && sharedMemoryBytes == o.sharedMemoryBytes &&
         launches == o.launches && config == o.config && params == o.params &&
         ptx == o.ptx && reference == o.reference && sass == o.sass;
}

std::string ptxFingerprint(std::string_view ptx) {
  uint64_t hash = 0xcbf29ce484222325ull;
  for (unsigned char c : ptx) {
    hash ^= c;
    hash *= 0x100000001b3ull;
  }
  static const char kDigits[] = "0123456789abcdef";
  std::string text(16, '0');
  for (int i = 15; i >= 0; --i, hash >>= 4)
    text[i] = kDigits[hash & 15];
  return text;
}

Expected<std::pair<int, int>> sassComputeCapability(std::string_view arch) {
  // "a": the arch-specific features (wgmma, setmaxnreg) of exactly that GPU.
  std::string_view digits = arch;
  if (!digits.empty() && digits.back() == 'a')
    digits.remove_suffix(1);
  bool wellFormed = digits.size() >= 5 && digits.size() <= 6 &&
                    digits.substr(0, 3) == "sm_" && digits[3] != '0';
  for (size_t i = 3; wellFormed && i < digits.size(); ++i)
    wellFormed = digits[i] >= '0' && digits[i] <= '9';
  if (!wellFormed)
    return Status::error("'" + std::string(arch) +
                         "' is not a GPU architecture such as sm_90a");
  int number = std::stoi(std::string(digits.substr(3)));
  return std::pair<int, int>(number / 10, number % 10);
}

bool sassRunsOn(const BundleSass &sass, int major, int minor) {
  Expected<std::pair<int, int>> built = sassComputeCapability(sass.arch);
  if (!built.ok() || built->first != major)
    return false;
  return sass.arch.back() == 'a' ? built->second == minor
                                 : built->second <= minor;
}

std::vector<BundleLaunch> launchesOf(const Bundle &bundle) {
  if (!bundle.launches.empty())
    return bundle.launches;
  BundleLaunch launch;
  launch.entry = bundle.entry;
  launch.grid = bundle.grid;
  launch.block = bundle.block;
  launch.cluster = bundle.cluster;
  launch.sharedMemoryBytes = bundle.sharedMemoryBytes;
  for (const BundleParam &param : bundle.params)
    if (param.kind != ParamKind::Buffer || param.kernelArg)
      launch.args.push_back(param.name);
  return {launch};
}

uint64_t bufferBytes(const BundleParam &param) {
  if (param.kind != ParamKind::Buffer)
    return 0;
  if (param.strides.empty() || param.strides.size() != param.shape.size()) {
    uint64_t bytes = dtypeSize(param.dtype);
    for (uint64_t d : param.shape)
      if (__builtin_mul_overflow(bytes, d, &bytes))
        return UINT64_MAX;
    return bytes;
  }
  // A strided view spans its first to its last element.
  uint64_t last = 0;
  for (size_t d = 0; d < param.shape.size(); ++d) {
    if (param.shape[d] == 0)
      return 0;
    uint64_t term;
    if (__builtin_mul_overflow(param.shape[d] - 1, param.strides[d], &term) ||
        __builtin_add_overflow(last, term, &last))
      return UINT64_MAX;
  }
  uint64_t bytes;
  if (__builtin_add_overflow(last, uint64_t(1), &last) ||
      __builtin_mul_overflow(last, uint64_t(dtypeSize(param.dtype)), &bytes))
    return UINT64_MAX;
  return bytes;
}

std::vector<uint64_t> bufferStrides(const BundleParam &param) {
  if (!param.strides.empty())
    return param.strides;
  std::vector<uint64_t> strides(param.shape.size(), 1);
  for (size_t d = param.shape.size(); d-- > 1;)
    strides[d - 1] = strides[d] * param.shape[d];
  return strides;
}

TensorMapSpec tensorMapOverBuffer(const TensorMapSpec &spec,
                                  const BundleParam &buffer) {
  TensorMapSpec over = spec;
  std::vector<uint64_t> strides = bufferStrides(buffer);
  over.globalDims.assign(buffer.shape.rbegin(), buffer.shape.rend());
  over.globalStridesBytes.clear();
  // Innermost first; the innermost dimension's stride is the element's.
  for (size_t d = strides.empty() ? 0 : strides.size() - 1; d-- > 0;)
    over.globalStridesBytes.push_back(strides[d] * dtypeSize(buffer.dtype));
  return over;
}

Expected<int64_t> configInteger(const Bundle &bundle, const std::string &key) {
  auto it = bundle.config.find(key);
  if (it == bundle.config.end())
    return Status::error("config has no '" + key + "'");
  if (const int64_t *value = std::get_if<int64_t>(&it->second))
    return *value;
  return Status::error("config '" + key + "' is not an integer");
}

Expected<std::string> configText(const Bundle &bundle, const std::string &key) {
  auto it = bundle.config.find(key);
  if (it == bundle.config.end())
    return Status::error("config has no '" + key + "'");
  if (const std::string *value = std::get_if<std::string>(&it->second))
    return *value;
  return Status::error("config '" + key + "' is not text");
}

Expected<std::string> configTextOr(const Bundle &bundle, const std::string &key,
                                   const std::string &fallback) {
  if (!bundle.config.count(key))
    return fallback;
  return configText(bundle, key);
}

const BundleParam *findParam(const Bundle &bundle, std::string_view name) {
  for (const BundleParam &p : bundle.params)
    if (p.name == name)
      return &p;
  return nullptr;
}

//===----------------------------------------------------------------------===//
// Semantic validation
//===----------------------------------------------------------------------===//

static bool isPtxIdentifier(std::string_view s) {
  if (s.empty() || (s[0] >= '0' && s[0] <= '9'))
    return false;
  for (char c : s)
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
          (c >= '0' && c <= '9') || c == '_' || c == '$' || c == '%'))
      return false;
  return true;
}

/// True if `ptx` contains ".entry <name>" followed by a non-identifier char.
static bool ptxDeclaresEntry(std::string_view ptx, std::string_view name) {
  for (size_t at = ptx.find(".entry"); at != std::string_view::npos;
       at = ptx.find(".entry", at + 1)) {
    size_t p = at + 6;
    size_t ws = p;
    while (p < ptx.size() && (ptx[p] == ' ' || ptx[p] == '\t' ||
                              ptx[p] == '\n' || ptx[p] == '\r'))
      ++p;
    if (p == ws || ptx.substr(p, name.size()) != name)
      continue;
    p += name.size();
    if (p >= ptx.size() || !isPtxIdentifier(std::string_view(&ptx[p], 1)))
      return true;
  }
  return false;
}

/// A file name inside the bundle directory: no directories (so a manifest
/// cannot make the reader open or the writer create files elsewhere), no
/// hidden or special names, and not one of the bundle's fixed files.
static bool isPlainBundleFileName(std::string_view s) {
  if (s.empty() || s.size() > 255 || s[0] == '.' || s == kBundlePtxFile ||
      s == kBundleManifestFile)
    return false;
  for (char c : s)
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
          (c >= '0' && c <= '9') || c == '_' || c == '-' || c == '.'))
      return false;
  return true;
}

static std::string versionRange() {
  return "this runtime reads versions " +
         std::to_string(kBundleOldestFormatVersion) + " to " +
         std::to_string(kBundleFormatVersion);
}

static Status checkFormatVersion(int64_t version) {
  if (version < kBundleOldestFormatVersion || version > kBundleFormatVersion)
    return Status::error("unsupported format_version " +
                         std::to_string(version) + "; " + versionRange());
  return Status();
}

/// "[1024, 64]".
static std::string formatShape(const std::vector<uint64_t> &shape) {
  std::string text = "[";
  for (size_t d = 0; d < shape.size(); ++d)
    text += (d ? ", " : "") + std::to_string(shape[d]);
  return text + "]";
}

static std::string paramWhere(size_t i, const BundleParam &p) {
  return "params[" + std::to_string(i) + "] ('" + p.name + "'): ";
}

/// Scalar value -> ABI bytes; fails if out of range for the dtype.
static Expected<std::vector<uint8_t>> scalarBytes(const BundleParam &p) {
  auto bytesOf = [](const auto &v) {
    std::vector<uint8_t> out(sizeof(v));
    std::memcpy(out.data(), &v, sizeof(v));
    return out;
  };
  auto intRange = [&](int64_t lo, int64_t hi) -> Status {
    if (p.intValue < lo || p.intValue > hi)
      return Status::error("value " + std::to_string(p.intValue) +
                           " is out of range for " + dtypeName(p.dtype) +
                           " [" + std::to_string(lo) + ", " +
                           std::to_string(hi) + "]");
    return Status();
  };
  auto finite = [&](double converted) -> Status {
    if (!std::isfinite(p.floatValue) || !std::isfinite(converted))
      return Status::error("value is not a finite " +
                           std::string(dtypeName(p.dtype)));
    return Status();
  };
  switch (p.dtype) {
  case DType::U8:
    SINKATTN_RT_TRY(intRange(0, UINT8_MAX));
    return bytesOf(static_cast<uint8_t>(p.intValue));
  case DType::U16:
    SINKATTN_RT_TRY(intRange(0, UINT16_MAX));
    return bytesOf(static_cast<uint16_t>(p.intValue));
  case DType::U32:
    SINKATTN_RT_TRY(intRange(0, UINT32_MAX));
    return bytesOf(static_cast<uint32_t>(p.intValue));
  case DType::I32:
    SINKATTN_RT_TRY(intRange(INT32_MIN, INT32_MAX));
    return bytesOf(static_cast<int32_t>(p.intValue));
  case DType::U64:
    SINKATTN_RT_TRY(intRange(0, INT64_MAX));
    return bytesOf(static_cast<uint64_t>(p.intValue));
  case DType::I64:
    return bytesOf(p.intValue);
  case DType::F16: {
    uint16_t h = floatToHalf(static_cast<float>(p.floatValue));
    SINKATTN_RT_TRY(finite(halfToFloat(h)));
    return bytesOf(h);
  }
  case DType::BF16: {
    uint16_t b = floatToBf16(static_cast<float>(p.floatValue));
    SINKATTN_RT_TRY(finite(bf16ToFloat(b)));
    return bytesOf(b);
  }
  case DType::F32:
  case DType::F32Ftz:
  case DType::TF32:
  case DType::TF32Ftz: {
    float f = static_cast<float>(p.floatValue);
    SINKATTN_RT_TRY(finite(f));
    return bytesOf(f);
  }
  case DType::F64:
    SINKATTN_RT_TRY(finite(p.floatValue));
    return bytesOf(p.floatValue);
  }
  return Status::error("unknown dtype");
}

/// A buffer's descriptor fields: only on a descriptor buffer (format
/// version 5), dynamic dims in range and ascending, strides one per dim
/// with the innermost 1.
static Status validateDescriptorFields(const Bundle &b, const BundleParam &p) {
  if (!p.descriptor) {
    if (!p.dynamicDims.empty() || !p.strides.empty())
      return Status::error("dynamic_dims and strides need \"descriptor\": "
                           "true (a buffer passed as a pointer has the "
                           "shape it was compiled for)");
    return Status();
  }
  if (b.formatVersion < kBundleDescriptorFormatVersion)
    return Status::error("descriptor: needs format_version " +
                         std::to_string(kBundleDescriptorFormatVersion));
  if (!p.kernelArg)
    return Status::error("descriptor: a buffer with kernel_arg false is no "
                         "argument");
  for (size_t k = 0; k < p.dynamicDims.size(); ++k) {
    if (p.dynamicDims[k] >= p.shape.size())
      return Status::error("dynamic_dims[" + std::to_string(k) + "] is " +
                           std::to_string(p.dynamicDims[k]) +
                           "; the shape has " + std::to_string(p.shape.size()) +
                           " dimensions");
    if (k > 0 && p.dynamicDims[k] <= p.dynamicDims[k - 1])
      return Status::error("dynamic_dims must be ascending, without repeats");
  }
  if (p.strides.empty())
    return Status();
  if (p.strides.size() != p.shape.size())
    return Status::error("strides has " + std::to_string(p.strides.size()) +
                         " entries for " + std::to_string(p.shape.size()) +
                         " dimensions");
  if (p.strides.back() != 1)
    return Status::error("the innermost stride is " +
                         std::to_string(p.strides.back()) +
                         "; it must be 1 (elements of a row are contiguous)");
  // The kernels take rows 16 bytes apart (tensor maps, paired stores).
  const uint64_t rowMultiple = 16 / std::gcd<uint64_t>(16, dtypeSize(p.dtype));
  for (size_t d = 0; d + 1 < p.strides.size(); ++d)
    if (p.shape[d] > 1 && p.strides[d] % rowMultiple != 0)
      return Status::error(
          "stride " + std::to_string(p.strides[d]) + " of dimension " +
          std::to_string(d) + " is not a multiple of 16 bytes (" +
          std::to_string(rowMultiple) + " " + dtypeName(p.dtype) +
          " elements; the kernels take rows 16-byte aligned)");
  return Status();
}

Status validateBundle(const Bundle &b) {
  SINKATTN_RT_TRY(checkFormatVersion(b.formatVersion));
  if (b.kernel.empty())
    return Status::error("kernel: must be a non-empty string");
  if (b.launches.empty()) {
    if (!isPtxIdentifier(b.entry))
      return Status::error("entry: '" + b.entry +
                           "' is not a valid PTX identifier");
    SINKATTN_RT_TRY(validateLaunchConfig(launchConfigFor(b)));
  } else {
    if (b.formatVersion < kBundleLaunchesFormatVersion)
      return Status::error("launches: several kernels per bundle need "
                           "format_version " +
                           std::to_string(kBundleLaunchesFormatVersion));
    if (!b.entry.empty())
      return Status::error("entry: a bundle with launches has no top-level "
                           "entry (each launch names its own)");
    if (b.grid != Dim3() || b.block != Dim3() || b.cluster != Dim3() ||
        b.sharedMemoryBytes != 0)
      return Status::error("grid, block, cluster, shared_memory_bytes: a "
                           "bundle with launches has no top-level launch "
                           "shape (each launch has its own)");
    bool timed = false;
    for (size_t i = 0; i < b.launches.size(); ++i) {
      const BundleLaunch &launch = b.launches[i];
      std::string where = "launches[" + std::to_string(i) + "]";
      if (!isPtxIdentifier(launch.entry))
        return Status::error(where + ".entry: '" + launch.entry +
                             "' is not a valid PTX identifier");
      SINKATTN_RT_TRY(validateLaunchConfig(launchConfigFor(launch))
                          .withContext(where + " ('" + launch.entry + "'): "));
      for (size_t a = 0; a < launch.args.size(); ++a) {
        const BundleParam *param = findParam(b, launch.args[a]);
        std::string argWhere =
            where + ".args[" + std::to_string(a) + "]: '" + launch.args[a] + "' ";
        if (!param)
          return Status::error(argWhere + "is not a param of this bundle");
        if (param->kind == ParamKind::Buffer && !param->kernelArg)
          return Status::error(argWhere + "is a buffer with kernel_arg false");
      }
      if (launch.setup && timed)
        return Status::error(where + ".setup: setup launches come first (they "
                             "run once before the others)");
      timed = timed || !launch.setup;
      if (launch.overlapsNext) {
        if (b.formatVersion < kBundleOverlapFormatVersion)
          return Status::error(where + ".overlaps_next: needs format_version " +
                               std::to_string(kBundleOverlapFormatVersion));
        if (launch.setup)
          return Status::error(where + ".overlaps_next: a setup launch runs "
                               "alone, before the others");
        if (i + 1 == b.launches.size())
          return Status::error(where + ".overlaps_next: the last launch has "
                               "no next launch to overlap");
        if (b.launches[i + 1].overlapsNext)
          return Status::error(
              where + ".overlaps_next: launches[" + std::to_string(i + 1) +
              "] overlaps its next launch too; only two launches run "
              "together");
      }
    }
    if (!timed)
      return Status::error("launches: every launch is a setup launch; at "
                           "least one must be the kernel itself");
  }
  for (const auto &[key, value] : b.config) {
    if (key.empty())
      return Status::error("config: keys must be non-empty");
    if (const double *number = std::get_if<double>(&value)) {
      if (!std::isfinite(*number))
        return Status::error("config." + key + ": not a finite number");
      if (b.formatVersion < 2)
        return Status::error("config." + key +
                             ": floating-point config values need "
                             "format_version 2");
    }
  }
  if (b.reference) {
    const BundleReference &r = *b.reference;
    // A version-1 reader would reject the unknown field anyway; saying which
    // version is needed is the clearer message.
    if (b.formatVersion < 2)
      return Status::error("reference: a reference kernel needs "
                           "format_version 2");
    if (!isPtxIdentifier(r.entry))
      return Status::error("reference.entry: '" + r.entry +
                           "' is not a valid PTX identifier");
    if (!isPlainBundleFileName(r.ptxFile))
      return Status::error(
          "reference.ptx: '" + r.ptxFile +
          "' is not a plain file name in the bundle directory (letters, "
          "digits, '_', '-', '.'; not starting with '.'; not " +
          kBundlePtxFile + " or " + kBundleManifestFile + ")");
    if (!r.ptx.empty() && !ptxDeclaresEntry(r.ptx, r.entry))
      return Status::error(r.ptxFile + " declares no '.entry " + r.entry +
                           "' (the manifest's reference.entry)");
  }

  if (b.sass) {
    const BundleSass &sass = *b.sass;
    if (b.formatVersion < kBundleSassFormatVersion)
      return Status::error("sass: a kernel assembled ahead of time needs "
                           "format_version " +
                           std::to_string(kBundleSassFormatVersion));
    SINKATTN_RT_TRY(
        sassComputeCapability(sass.arch).status().withContext("sass.arch: "));
    if (!isPlainBundleFileName(sass.cubinFile) ||
        (b.reference && sass.cubinFile == b.reference->ptxFile))
      return Status::error(
          "sass.cubin: '" + sass.cubinFile +
          "' is not a plain file name in the bundle directory (letters, "
          "digits, '_', '-', '.'; not starting with '.'; not " +
          kBundlePtxFile + ", " + kBundleManifestFile +
          " or the reference kernel's PTX)");
    bool hex = sass.ptxFingerprint.size() == 16;
    for (char c : sass.ptxFingerprint)
      hex = hex && ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'));
    if (!hex)
      return Status::error("sass.ptx_fingerprint: '" + sass.ptxFingerprint +
                           "' is not 16 lower-case hex digits");
    if (!b.ptx.empty() && ptxFingerprint(b.ptx) != sass.ptxFingerprint)
      return Status::error(
          "sass: " + sass.cubinFile + " was assembled from another " +
          kBundlePtxFile + " (fingerprint " + sass.ptxFingerprint + "; " +
          kBundlePtxFile + " has " + ptxFingerprint(b.ptx) +
          "): assemble it again, or remove it and the manifest's 'sass'");
    if (!sass.cubin.empty() && sass.cubin.compare(0, 4,
                                                  "\x7f"
                                                  "ELF") != 0)
      return Status::error("sass: " + sass.cubinFile +
                           " is not a cubin (no ELF header)");
  }

  // The calling convention is the kernel's: every memref argument a
  // descriptor, or none.
  const BundleParam *descriptor = nullptr, *pointer = nullptr;
  for (const BundleParam &p : b.params)
    if (p.kind == ParamKind::Buffer && p.kernelArg)
      (p.descriptor ? descriptor : pointer) = &p;
  if (descriptor && pointer)
    return Status::error("params: buffer '" + descriptor->name +
                         "' is passed as a descriptor and buffer '" +
                         pointer->name + "' as a pointer; a kernel takes "
                         "all its buffers one way");
  std::set<std::string> names;
  for (size_t i = 0; i < b.params.size(); ++i) {
    const BundleParam &p = b.params[i];
    if (p.name.empty())
      return Status::error("params[" + std::to_string(i) +
                           "]: name must be a non-empty string");
    if (!names.insert(p.name).second)
      return Status::error(paramWhere(i, p) + "duplicate param name");
    if (!p.kernelArg && p.kind != ParamKind::Buffer)
      return Status::error(paramWhere(i, p) +
                           "only buffers can be left out of the kernel ABI");
    switch (p.kind) {
    case ParamKind::Scalar: {
      Expected<std::vector<uint8_t>> bytes = scalarBytes(p);
      if (!bytes.ok())
        return bytes.status().withContext(paramWhere(i, p));
      break;
    }
    case ParamKind::Buffer: {
      if (p.shape.empty() || p.shape.size() > 8)
        return Status::error(paramWhere(i, p) + "shape has " +
                             std::to_string(p.shape.size()) +
                             " dimensions; buffers need 1 to 8");
      for (size_t d = 0; d < p.shape.size(); ++d)
        if (p.shape[d] == 0)
          return Status::error(paramWhere(i, p) + "shape dimension " +
                               std::to_string(d) + " is 0");
      // The context is built on an error only: this runs for every call of
      // the attention library.
      if (Status fields = validateDescriptorFields(b, p); !fields.ok())
        return fields.withContext(paramWhere(i, p));
      // 2^48 bytes (256 TiB) is far beyond any GPU and keeps size arithmetic
      // in the runner free of overflow.
      if (bufferBytes(p) > (uint64_t(1) << 48))
        return Status::error(paramWhere(i, p) + "buffer is larger than 2^48 "
                                                "bytes");
      break;
    }
    case ParamKind::TensorMap: {
      if (p.tensorMap.dtype != p.dtype)
        return Status::error(paramWhere(i, p) +
                             "tensor map dtype differs from the param dtype");
      if (Status map = validate(p.tensorMap); !map.ok())
        return map.withContext(paramWhere(i, p));
      const BundleParam *target = findParam(b, p.buffer);
      if (!target || target->kind != ParamKind::Buffer)
        return Status::error(paramWhere(i, p) + "buffer '" + p.buffer +
                             "' is not a buffer param of this bundle");
      if (target->descriptor &&
          p.tensorMap != tensorMapOverBuffer(p.tensorMap, *target))
        return Status::error(paramWhere(i, p) +
                             "tensor map over descriptor buffer '" + p.buffer +
                             "' must have its sizes and strides "
                             "(global_dims innermost first)");
      uint64_t extent = globalExtentBytes(p.tensorMap);
      uint64_t available = bufferBytes(*target);
      if (extent > available)
        return Status::error(paramWhere(i, p) + "tensor map spans " +
                             std::to_string(extent) + " bytes but buffer '" +
                             p.buffer + "' has only " +
                             std::to_string(available) + " bytes");
      break;
    }
    }
  }
  if (!b.ptx.empty())
    for (const BundleLaunch &launch : launchesOf(b))
      if (!ptxDeclaresEntry(b.ptx, launch.entry))
        return Status::error(std::string(kBundlePtxFile) +
                             " declares no '.entry " + launch.entry + "' (" +
                             (b.launches.empty() ? "the manifest's entry"
                                                 : "a launch's entry") +
                             ")");
  return Status();
}

//===----------------------------------------------------------------------===//
// Bundle -> JSON
//===----------------------------------------------------------------------===//

template <typename T> static JsonValue toArray(const std::vector<T> &v) {
  JsonValue a = JsonValue::array();
  for (const T &e : v)
    a.push(JsonValue(e));
  return a;
}

static JsonValue dimToJson(const Dim3 &d) {
  return JsonValue::array({JsonValue(d.x), JsonValue(d.y), JsonValue(d.z)});
}

JsonValue manifestToJson(const Bundle &b) {
  JsonValue m = JsonValue::object();
  m.set("format_version", b.formatVersion);
  m.set("kernel", b.kernel);
  if (b.launches.empty()) {
    m.set("entry", b.entry);
    m.set("grid", dimToJson(b.grid));
    m.set("block", dimToJson(b.block));
    m.set("cluster", dimToJson(b.cluster));
    m.set("shared_memory_bytes", b.sharedMemoryBytes);
  } else {
    JsonValue launches = JsonValue::array();
    for (const BundleLaunch &launch : b.launches) {
      JsonValue l = JsonValue::object();
      l.set("entry", launch.entry);
      l.set("grid", dimToJson(launch.grid));
      l.set("block", dimToJson(launch.block));
      l.set("cluster", dimToJson(launch.cluster));
      l.set("shared_memory_bytes", launch.sharedMemoryBytes);
      JsonValue args = JsonValue::array();
      for (const std::string &arg : launch.args)
        args.push(JsonValue(arg));
      l.set("args", std::move(args));
      if (launch.setup)
        l.set("setup", true);
      if (launch.overlapsNext)
        l.set("overlaps_next", true);
      launches.push(std::move(l));
    }
    m.set("launches", std::move(launches));
  }
  JsonValue config = JsonValue::object();
  for (const auto &[key, value] : b.config) {
    if (const auto *s = std::get_if<std::string>(&value))
      config.set(key, *s);
    else if (const auto *i = std::get_if<int64_t>(&value))
      config.set(key, *i);
    else
      config.set(key, std::get<double>(value));
  }
  m.set("config", std::move(config));
  if (b.reference) {
    JsonValue reference = JsonValue::object();
    reference.set("ptx", b.reference->ptxFile);
    reference.set("entry", b.reference->entry);
    m.set("reference", std::move(reference));
  }
  if (b.sass) {
    JsonValue sass = JsonValue::object();
    sass.set("cubin", b.sass->cubinFile);
    sass.set("arch", b.sass->arch);
    sass.set("ptx_fingerprint", b.sass->ptxFingerprint);
    m.set("sass", std::move(sass));
  }

  JsonValue params = JsonValue::array();
  for (const BundleParam &p : b.params) {
    JsonValue j = JsonValue::object();
    j.set("name", p.name);
    j.set("kind", paramKindName(p.kind));
    j.set("dtype", dtypeName(p.dtype));
    switch (p.kind) {
    case ParamKind::Scalar:
      if (isFloatingPoint(p.dtype))
        j.set("value", p.floatValue);
      else
        j.set("value", p.intValue);
      break;
    case ParamKind::Buffer:
      j.set("shape", toArray(p.shape));
      j.set("role", bufferRoleName(p.role));
      if (!p.kernelArg)
        j.set("kernel_arg", false);
      if (p.descriptor) {
        j.set("descriptor", true);
        j.set("dynamic_dims", toArray(p.dynamicDims));
        if (!p.strides.empty())
          j.set("strides", toArray(p.strides));
      }
      break;
    case ParamKind::TensorMap: {
      const TensorMapSpec &t = p.tensorMap;
      j.set("buffer", p.buffer);
      j.set("mode", t.isIm2col() ? "im2col" : "tiled");
      j.set("global_dims", toArray(t.globalDims));
      j.set("global_strides", toArray(t.globalStridesBytes));
      if (!t.isIm2col())
        j.set("box_dims", toArray(t.boxDims));
      j.set("element_strides", toArray(t.elementStrides));
      j.set("interleave", interleaveName(t.interleave));
      j.set("swizzle", swizzleName(t.swizzle));
      j.set("l2_promotion", l2PromotionName(t.l2Promotion));
      j.set("oob_fill", oobFillName(t.oobFill));
      if (t.isIm2col()) {
        j.set("pixel_box_lower_corner", toArray(t.im2col->pixelBoxLowerCorner));
        j.set("pixel_box_upper_corner", toArray(t.im2col->pixelBoxUpperCorner));
        j.set("channels_per_pixel", t.im2col->channelsPerPixel);
        j.set("pixels_per_column", t.im2col->pixelsPerColumn);
      }
      break;
    }
    }
    params.push(std::move(j));
  }
  m.set("params", std::move(params));
  return m;
}

//===----------------------------------------------------------------------===//
// JSON -> Bundle
//===----------------------------------------------------------------------===//

namespace {
/// Reads the fields of one JSON object, producing errors that carry the
/// object's path, and rejects members it was never asked about (typos in
/// optional fields must not be silently ignored).
class ObjectReader {
public:
  ObjectReader(const JsonValue &object, std::string path)
      : object(object), path(std::move(path)) {}

  Status error(const std::string &field, const std::string &what) const {
    return Status::error(qualified(field) + ": " + what);
  }

  /// The member, marking it as consumed; nullptr when absent.
  const JsonValue *get(const std::string &field) {
    seen.insert(field);
    return object.find(field);
  }

  Expected<const JsonValue *> require(const std::string &field) {
    const JsonValue *v = get(field);
    if (!v)
      return Status::error((path.empty() ? std::string() : path + ": ") +
                           "missing required field '" + field + "'");
    return v;
  }

  Status wrongType(const std::string &field, const char *expected,
                   const JsonValue &v) const {
    return error(field, std::string("expected ") + expected + ", got " +
                            jsonKindName(v.kind()));
  }

  Status readString(const std::string &field, std::string &out,
                    bool required = true) {
    const JsonValue *v = get(field);
    if (!v)
      return required ? require(field).status() : Status();
    if (!v->isString())
      return wrongType(field, "a string", *v);
    out = v->asString();
    return Status();
  }

  /// An optional boolean: `out` keeps its value when the field is absent.
  Status readOptionalBool(const std::string &field, bool &out) {
    const JsonValue *v = get(field);
    if (!v)
      return Status();
    if (!v->isBool())
      return wrongType(field, "a boolean", *v);
    out = v->asBool();
    return Status();
  }

  Status readInt(const std::string &field, int64_t &out, int64_t lo,
                 int64_t hi, bool required = true) {
    const JsonValue *v = get(field);
    if (!v)
      return required ? require(field).status() : Status();
    if (!v->isInt())
      return wrongType(field, "an integer", *v);
    if (v->asInt() < lo || v->asInt() > hi)
      return error(field, "value " + std::to_string(v->asInt()) +
                              " is out of range [" + std::to_string(lo) +
                              ", " + std::to_string(hi) + "]");
    out = v->asInt();
    return Status();
  }

  /// Integer array with every element in [lo, hi].
  template <typename T>
  Status readIntArray(const std::string &field, std::vector<T> &out,
                      int64_t lo, int64_t hi, bool required = true) {
    const JsonValue *v = get(field);
    if (!v)
      return required ? require(field).status() : Status();
    if (!v->isArray())
      return wrongType(field, "an array of integers", *v);
    out.clear();
    const auto &elements = v->asArray();
    for (size_t i = 0; i < elements.size(); ++i) {
      const JsonValue &e = elements[i];
      std::string where = field + "[" + std::to_string(i) + "]";
      if (!e.isInt())
        return wrongType(where, "an integer", e);
      if (e.asInt() < lo || e.asInt() > hi)
        return error(where, "value " + std::to_string(e.asInt()) +
                                " is out of range [" + std::to_string(lo) +
                                ", " + std::to_string(hi) + "]");
      out.push_back(static_cast<T>(e.asInt()));
    }
    return Status();
  }

  Status readDim3(const std::string &field, Dim3 &out, bool required = true) {
    std::vector<uint32_t> v;
    SINKATTN_RT_TRY(readIntArray(field, v, 1, UINT32_MAX, required));
    if (!get(field))
      return Status(); // Optional and absent: keep the default.
    if (v.size() != 3)
      return error(field, "expected an array of 3 integers [x, y, z], got " +
                              std::to_string(v.size()) + " elements");
    out = Dim3{v[0], v[1], v[2]};
    return Status();
  }

  /// Reads an enum spelled as a string via `parse`; absent -> keep default.
  template <typename E, typename ParseFn>
  Status readEnum(const std::string &field, E &out, ParseFn parse,
                  const char *choices, bool required = false) {
    std::string s;
    bool present = object.find(field) != nullptr;
    SINKATTN_RT_TRY(readString(field, s, required));
    if (!present)
      return Status();
    auto parsed = parse(s);
    if (!parsed)
      return error(field, "unknown value '" + s + "'; expected one of " +
                              choices);
    out = *parsed;
    return Status();
  }

  /// Fails on the first member never requested through get().
  Status finish(const std::string &what) const {
    for (const auto &member : object.asObject())
      if (!seen.count(member.first))
        return Status::error((path.empty() ? std::string() : path + ": ") +
                             "unknown field '" + member.first + "'" + what);
    return Status();
  }

private:
  std::string qualified(const std::string &field) const {
    return path.empty() ? field : path + "." + field;
  }

  const JsonValue &object;
  std::string path;
  std::set<std::string> seen;
};

Status readTensorMap(ObjectReader &r, BundleParam &p) {
  TensorMapSpec &t = p.tensorMap;
  t.dtype = p.dtype;
  SINKATTN_RT_TRY(r.readString("buffer", p.buffer));
  std::string mode = "tiled";
  SINKATTN_RT_TRY(r.readString("mode", mode, /*required=*/false));
  if (mode != "tiled" && mode != "im2col")
    return r.error("mode", "unknown value '" + mode +
                               "'; expected one of tiled, im2col");
  const int64_t maxI64 = INT64_MAX;
  SINKATTN_RT_TRY(r.readIntArray("global_dims", t.globalDims, 0, maxI64));
  SINKATTN_RT_TRY(
      r.readIntArray("global_strides", t.globalStridesBytes, 0, maxI64));
  if (mode == "tiled")
    SINKATTN_RT_TRY(r.readIntArray("box_dims", t.boxDims, 0, UINT32_MAX));
  if (r.get("element_strides"))
    SINKATTN_RT_TRY(
        r.readIntArray("element_strides", t.elementStrides, 0, UINT32_MAX));
  else
    t.elementStrides.assign(t.globalDims.size(), 1);
  SINKATTN_RT_TRY(r.readEnum("interleave", t.interleave, parseInterleave,
                             "none, 16B, 32B"));
  SINKATTN_RT_TRY(r.readEnum("swizzle", t.swizzle, parseSwizzle,
                             "none, 32B, 64B, 128B"));
  SINKATTN_RT_TRY(r.readEnum("l2_promotion", t.l2Promotion, parseL2Promotion,
                             "none, 64B, 128B, 256B"));
  SINKATTN_RT_TRY(r.readEnum("oob_fill", t.oobFill, parseOobFill,
                             "none, nan_request_zero_fma"));
  if (mode == "im2col") {
    Im2colSpec ic;
    SINKATTN_RT_TRY(r.readIntArray("pixel_box_lower_corner",
                                   ic.pixelBoxLowerCorner, INT32_MIN,
                                   INT32_MAX));
    SINKATTN_RT_TRY(r.readIntArray("pixel_box_upper_corner",
                                   ic.pixelBoxUpperCorner, INT32_MIN,
                                   INT32_MAX));
    int64_t channels = 0, pixels = 0;
    SINKATTN_RT_TRY(r.readInt("channels_per_pixel", channels, 0, UINT32_MAX));
    SINKATTN_RT_TRY(r.readInt("pixels_per_column", pixels, 0, UINT32_MAX));
    ic.channelsPerPixel = static_cast<uint32_t>(channels);
    ic.pixelsPerColumn = static_cast<uint32_t>(pixels);
    t.im2col = std::move(ic);
  }
  return Status();
}

Status readParam(const JsonValue &j, size_t index, BundleParam &p) {
  std::string path = "params[" + std::to_string(index) + "]";
  if (!j.isObject())
    return Status::error(path + ": expected an object, got " +
                         jsonKindName(j.kind()));
  ObjectReader r(j, path);
  SINKATTN_RT_TRY(r.readString("name", p.name));
  std::string kind, dtype;
  SINKATTN_RT_TRY(r.readString("kind", kind));
  if (kind == "buffer")
    p.kind = ParamKind::Buffer;
  else if (kind == "scalar")
    p.kind = ParamKind::Scalar;
  else if (kind == "tensor_map")
    p.kind = ParamKind::TensorMap;
  else
    return r.error("kind", "unknown value '" + kind +
                               "'; expected one of buffer, scalar, tensor_map");
  SINKATTN_RT_TRY(r.readString("dtype", dtype));
  std::optional<DType> parsed = parseDType(dtype);
  if (!parsed)
    return r.error("dtype", "unknown dtype '" + dtype + "'; expected one of " +
                                allDTypeNames());
  p.dtype = *parsed;

  switch (p.kind) {
  case ParamKind::Scalar: {
    SINKATTN_RT_ASSIGN_OR_RETURN(const JsonValue *value, r.require("value"));
    if (isFloatingPoint(p.dtype)) {
      if (!value->isNumber())
        return r.wrongType("value", "a number", *value);
      p.floatValue = value->asDouble();
    } else {
      if (!value->isInt())
        return r.wrongType("value", "an integer", *value);
      p.intValue = value->asInt();
    }
    break;
  }
  case ParamKind::Buffer: {
    SINKATTN_RT_TRY(r.readIntArray("shape", p.shape, 0, INT64_MAX));
    std::string role;
    SINKATTN_RT_TRY(r.readString("role", role));
    if (role == "input")
      p.role = BufferRole::Input;
    else if (role == "output")
      p.role = BufferRole::Output;
    else
      return r.error("role", "unknown value '" + role +
                                 "'; expected one of input, output");
    SINKATTN_RT_TRY(r.readOptionalBool("kernel_arg", p.kernelArg));
    SINKATTN_RT_TRY(r.readOptionalBool("descriptor", p.descriptor));
    SINKATTN_RT_TRY(r.readIntArray("dynamic_dims", p.dynamicDims, 0, 7,
                                   /*required=*/false));
    SINKATTN_RT_TRY(
        r.readIntArray("strides", p.strides, 1, INT64_MAX, /*required=*/false));
    break;
  }
  case ParamKind::TensorMap:
    SINKATTN_RT_TRY(readTensorMap(r, p));
    break;
  }
  return r.finish(std::string(" for a ") + paramKindName(p.kind) + " param");
}

/// entry, grid, block, optional cluster, shared_memory_bytes.
Status readLaunchShape(ObjectReader &r, std::string &entry, Dim3 &grid,
                       Dim3 &block, Dim3 &cluster, uint32_t &sharedMemoryBytes) {
  SINKATTN_RT_TRY(r.readString("entry", entry));
  SINKATTN_RT_TRY(r.readDim3("grid", grid));
  SINKATTN_RT_TRY(r.readDim3("block", block));
  SINKATTN_RT_TRY(r.readDim3("cluster", cluster, /*required=*/false));
  int64_t smem = 0;
  SINKATTN_RT_TRY(r.readInt("shared_memory_bytes", smem, 0, UINT32_MAX));
  sharedMemoryBytes = static_cast<uint32_t>(smem);
  return Status();
}

Status readLaunch(const JsonValue &j, size_t index, Bundle &b) {
  std::string where = "launches[" + std::to_string(index) + "]";
  if (!j.isObject())
    return Status::error(where + ": expected an object, got " +
                         std::string(jsonKindName(j.kind())));
  ObjectReader r(j, where);
  BundleLaunch launch;
  SINKATTN_RT_TRY(readLaunchShape(r, launch.entry, launch.grid, launch.block,
                                  launch.cluster, launch.sharedMemoryBytes));
  SINKATTN_RT_ASSIGN_OR_RETURN(const JsonValue *args, r.require("args"));
  if (!args->isArray())
    return r.wrongType("args", "an array of param names", *args);
  for (size_t a = 0; a < args->asArray().size(); ++a) {
    const JsonValue &arg = args->asArray()[a];
    if (!arg.isString())
      return r.wrongType("args[" + std::to_string(a) + "]", "a param name",
                         arg);
    launch.args.push_back(arg.asString());
  }
  SINKATTN_RT_TRY(r.readOptionalBool("setup", launch.setup));
  SINKATTN_RT_TRY(r.readOptionalBool("overlaps_next", launch.overlapsNext));
  SINKATTN_RT_TRY(r.finish(""));
  b.launches.push_back(std::move(launch));
  return Status();
}

Expected<Bundle> readManifestObject(const JsonValue &root) {
  if (!root.isObject())
    return Status::error("expected a JSON object at the top level, got " +
                         std::string(jsonKindName(root.kind())));
  Bundle b;
  ObjectReader r(root, "");
  // The version is checked first: a future format may change everything
  // else, and "unsupported version" is the useful message then.
  SINKATTN_RT_TRY(r.readInt("format_version", b.formatVersion, INT64_MIN,
                            INT64_MAX));
  SINKATTN_RT_TRY(checkFormatVersion(b.formatVersion));
  SINKATTN_RT_TRY(r.readString("kernel", b.kernel));
  if (const JsonValue *launches = r.get("launches")) {
    if (b.formatVersion < kBundleLaunchesFormatVersion)
      return Status::error("launches: several kernels per bundle need "
                           "format_version " +
                           std::to_string(kBundleLaunchesFormatVersion));
    if (!launches->isArray())
      return r.wrongType("launches", "an array of launch objects", *launches);
    if (launches->asArray().empty())
      return Status::error("launches: is empty; a bundle with launches needs "
                           "at least one");
    for (const char *field :
         {"entry", "grid", "block", "cluster", "shared_memory_bytes"})
      if (root.find(field))
        return Status::error(std::string(field) +
                             ": not allowed next to 'launches' (each launch "
                             "has its own)");
    for (size_t i = 0; i < launches->asArray().size(); ++i)
      SINKATTN_RT_TRY(readLaunch(launches->asArray()[i], i, b));
  } else {
    SINKATTN_RT_TRY(readLaunchShape(r, b.entry, b.grid, b.block, b.cluster,
                                    b.sharedMemoryBytes));
  }

  SINKATTN_RT_ASSIGN_OR_RETURN(const JsonValue *config, r.require("config"));
  if (!config->isObject())
    return r.wrongType("config", "an object", *config);
  for (const auto &[key, value] : config->asObject()) {
    if (value.isString())
      b.config[key] = value.asString();
    else if (value.isInt())
      b.config[key] = value.asInt();
    else if (value.isNumber() && b.formatVersion >= 2)
      b.config[key] = value.asDouble();
    else
      return r.wrongType("config." + key,
                         b.formatVersion >= 2
                             ? "a string or a number"
                             : "a string or an integer (format_version 1)",
                         value);
  }

  if (const JsonValue *reference = r.get("reference")) {
    if (b.formatVersion < 2)
      return Status::error("reference: a reference kernel needs "
                           "format_version 2");
    if (!reference->isObject())
      return r.wrongType("reference", "an object", *reference);
    ObjectReader rr(*reference, "reference");
    BundleReference ref;
    SINKATTN_RT_TRY(rr.readString("ptx", ref.ptxFile));
    SINKATTN_RT_TRY(rr.readString("entry", ref.entry));
    SINKATTN_RT_TRY(rr.finish(""));
    b.reference = std::move(ref);
  }

  if (const JsonValue *sass = r.get("sass")) {
    if (b.formatVersion < kBundleSassFormatVersion)
      return Status::error("sass: a kernel assembled ahead of time needs "
                           "format_version " +
                           std::to_string(kBundleSassFormatVersion));
    if (!sass->isObject())
      return r.wrongType("sass", "an object", *sass);
    ObjectReader sr(*sass, "sass");
    BundleSass compiled;
    SINKATTN_RT_TRY(sr.readString("cubin", compiled.cubinFile));
    SINKATTN_RT_TRY(sr.readString("arch", compiled.arch));
    SINKATTN_RT_TRY(sr.readString("ptx_fingerprint", compiled.ptxFingerprint));
    SINKATTN_RT_TRY(sr.finish(""));
    b.sass = std::move(compiled);
  }

  SINKATTN_RT_ASSIGN_OR_RETURN(const JsonValue *params, r.require("params"));
  if (!params->isArray())
    return r.wrongType("params", "an array", *params);
  for (size_t i = 0; i < params->asArray().size(); ++i) {
    BundleParam p;
    SINKATTN_RT_TRY(readParam(params->asArray()[i], i, p));
    b.params.push_back(std::move(p));
  }
  SINKATTN_RT_TRY(r.finish(""));
  SINKATTN_RT_TRY(validateBundle(b));
  return b;
}

Expected<std::string> readFile(const std::filesystem::path &path,
                               uint64_t maxBytes) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec))
    return Status::error("cannot read " + path.string() +
                         ": no such file (or not a regular file)");
  uint64_t size = std::filesystem::file_size(path, ec);
  if (ec)
    return Status::error("cannot read " + path.string() + ": " + ec.message());
  if (size > maxBytes)
    return Status::error(path.string() + " is " + std::to_string(size) +
                         " bytes; the limit is " + std::to_string(maxBytes));
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return Status::error("cannot open " + path.string() + ": " +
                         std::strerror(errno));
  std::string data(size, '\0');
  in.read(data.data(), static_cast<std::streamsize>(size));
  if (static_cast<uint64_t>(in.gcount()) != size)
    return Status::error("short read from " + path.string());
  return data;
}

Status writeFile(const std::filesystem::path &path, const std::string &data) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out)
    return Status::error("cannot open " + path.string() + " for writing: " +
                         std::strerror(errno));
  out.write(data.data(), static_cast<std::streamsize>(data.size()));
  out.close();
  if (!out)
    return Status::error("failed writing " + path.string());
  return Status();
}
} // namespace

Expected<Bundle> parseManifest(std::string_view json) {
  Expected<JsonValue> root = parseJson(json);
  if (!root.ok())
    return root.status().withContext(std::string(kBundleManifestFile) + ": ");
  Expected<Bundle> b = readManifestObject(*root);
  if (!b.ok())
    return b.status().withContext(std::string(kBundleManifestFile) + ": ");
  return b;
}

Status writeBundle(const std::string &directory, const Bundle &bundle) {
  SINKATTN_RT_TRY(validateBundle(bundle).withContext(
      "refusing to write an invalid bundle: "));
  if (bundle.ptx.empty())
    return Status::error("refusing to write a bundle without PTX");
  if (bundle.reference && bundle.reference->ptx.empty())
    return Status::error("refusing to write a bundle whose reference kernel "
                         "has no PTX");
  if (bundle.sass && bundle.sass->cubin.empty())
    return Status::error("refusing to write a bundle whose assembled kernel "
                         "has no cubin");
  std::error_code ec;
  std::filesystem::create_directories(directory, ec);
  if (ec)
    return Status::error("cannot create bundle directory " + directory + ": " +
                         ec.message());
  std::filesystem::path dir(directory);
  SINKATTN_RT_TRY(writeFile(dir / kBundlePtxFile, bundle.ptx));
  if (bundle.reference)
    SINKATTN_RT_TRY(
        writeFile(dir / bundle.reference->ptxFile, bundle.reference->ptx));
  if (bundle.sass)
    SINKATTN_RT_TRY(
        writeFile(dir / bundle.sass->cubinFile, bundle.sass->cubin));
  // The manifest last: a bundle interrupted while being written lacks it
  // and is rejected as a whole.
  return writeFile(dir / kBundleManifestFile,
                   writeJson(manifestToJson(bundle)));
}

Expected<Bundle> readBundle(const std::string &directory) {
  std::filesystem::path dir(directory);
  SINKATTN_RT_ASSIGN_OR_RETURN(std::string manifest,
                               readFile(dir / kBundleManifestFile, 16u << 20));
  SINKATTN_RT_ASSIGN_OR_RETURN(std::string ptx,
                               readFile(dir / kBundlePtxFile, 1ull << 30));
  SINKATTN_RT_ASSIGN_OR_RETURN(Bundle b, parseManifest(manifest));
  b.ptx = std::move(ptx);
  if (b.ptx.empty())
    return Status::error((dir / kBundlePtxFile).string() + " is empty");
  if (b.reference) {
    // parseManifest checked the name is a plain file name in `dir`.
    std::filesystem::path path = dir / b.reference->ptxFile;
    Expected<std::string> text = readFile(path, 1ull << 30);
    if (!text.ok())
      return text.status().withContext("reference kernel: ");
    if (text->empty())
      return Status::error("reference kernel: " + path.string() + " is empty");
    b.reference->ptx = text.take();
  }
  if (b.sass) {
    std::filesystem::path path = dir / b.sass->cubinFile;
    Expected<std::string> image = readFile(path, 1ull << 30);
    if (!image.ok())
      return image.status().withContext("sass: ");
    if (image->empty())
      return Status::error("sass: " + path.string() + " is empty");
    b.sass->cubin = image.take();
  }
  SINKATTN_RT_TRY(validateBundle(b).withContext(directory + ": "));
  return b;
}

uint32_t launchedBlocks(const Bundle &bundle, int smCount) {
  Expected<int64_t> tileLists = configInteger(bundle, "tile_lists");
  if ((tileLists.ok() && *tileLists == 1) || findParam(bundle, "tiles"))
    return bundle.grid.x;
  Expected<int64_t> persistent = configInteger(bundle, "persistent_blocks");
  if (persistent.ok() && *persistent > 0 && smCount > 0)
    return std::min<uint32_t>(bundle.grid.x, uint32_t(smCount));
  return bundle.grid.x;
}

LaunchConfig launchConfigFor(const Bundle &bundle, CUstream stream) {
  BundleLaunch single;
  single.grid = bundle.grid;
  single.block = bundle.block;
  single.cluster = bundle.cluster;
  single.sharedMemoryBytes = bundle.sharedMemoryBytes;
  return launchConfigFor(single, stream);
}

LaunchConfig launchConfigFor(const BundleLaunch &launch, CUstream stream) {
  LaunchConfig c;
  c.grid = launch.grid;
  c.block = launch.block;
  c.cluster = launch.cluster;
  c.dynamicSharedMemoryBytes = launch.sharedMemoryBytes;
  c.stream = stream;
  return c;
}

BundleParam scalarParam(std::string name, DType dtype, double value) {
  BundleParam param;
  param.name = std::move(name);
  param.kind = ParamKind::Scalar;
  param.dtype = dtype;
  if (isFloatingPoint(dtype))
    param.floatValue = value;
  else
    param.intValue = int64_t(value);
  return param;
}

Expected<Bundle>
withTensorShapes(const Bundle &bundle,
                 const std::map<std::string, TensorShape> &shapes) {
  Bundle shaped = bundle;
  for (const auto &[name, shape] : shapes) {
    auto found = std::find_if(
        shaped.params.begin(), shaped.params.end(),
        [&](const BundleParam &param) { return param.name == name; });
    std::string where = "tensor '" + name + "': ";
    if (found == shaped.params.end() || found->kind != ParamKind::Buffer)
      return Status::error(where + "the kernel has no buffer of that name");
    BundleParam &buffer = *found;
    if (!buffer.descriptor)
      return Status::error(where + "the kernel was compiled for shape " +
                           formatShape(buffer.shape) +
                           " only (it takes a pointer, not sizes)");
    if (shape.sizes.size() != buffer.shape.size())
      return Status::error(where + "has " + std::to_string(shape.sizes.size()) +
                           " dimensions; the kernel takes " +
                           std::to_string(buffer.shape.size()));
    for (size_t d = 0; d < shape.sizes.size(); ++d) {
      bool dynamic =
          std::find(buffer.dynamicDims.begin(), buffer.dynamicDims.end(), d) !=
          buffer.dynamicDims.end();
      if (shape.sizes[d] == 0)
        return Status::error(where + "dimension " + std::to_string(d) +
                             " is 0; the kernel needs at least one element");
      if (!dynamic && shape.sizes[d] != buffer.shape[d])
        return Status::error(where + "dimension " + std::to_string(d) + " is " +
                             std::to_string(shape.sizes[d]) +
                             "; the kernel was compiled for " +
                             std::to_string(buffer.shape[d]));
    }
    BundleParam resized = buffer;
    resized.shape = shape.sizes;
    resized.strides.clear();
    std::vector<uint64_t> dense = bufferStrides(resized);
    if (!shape.strides.empty()) {
      if (shape.strides.size() != shape.sizes.size())
        return Status::error(
            where + "has " + std::to_string(shape.strides.size()) +
            " strides for " + std::to_string(shape.sizes.size()) +
            " dimensions");
      if (shape.strides.back() != 1)
        return Status::error(where + "innermost stride is " +
                             std::to_string(shape.strides.back()) +
                             "; the kernel needs 1 (contiguous rows)");
      if (buffer.strides.empty() && shape.strides != dense)
        return Status::error(where + "strides " + formatShape(shape.strides) +
                             " are not row-major; the kernel takes a dense "
                             "tensor (row-major strides " +
                             formatShape(dense) + ")");
    }
    if (!buffer.strides.empty())
      resized.strides = shape.strides.empty() ? dense : shape.strides;
    SINKATTN_RT_TRY(
        validateDescriptorFields(shaped, resized).withContext(where));
    if (bufferBytes(resized) > (uint64_t(1) << 48))
      return Status::error(where + "spans more than 2^48 bytes");
    buffer = std::move(resized);
  }
  // Every tensor map over a descriptor buffer follows its sizes and strides.
  for (BundleParam &param : shaped.params) {
    if (param.kind != ParamKind::TensorMap)
      continue;
    const BundleParam *buffer = findParam(shaped, param.buffer);
    if (buffer && buffer->descriptor)
      param.tensorMap = tensorMapOverBuffer(param.tensorMap, *buffer);
  }
  SINKATTN_RT_TRY(validateBundle(shaped));
  return shaped;
}

Expected<KernelArgs>
buildKernelArgs(const Bundle &bundle,
                const std::map<std::string, CUdeviceptr> &bufferAddresses,
                const CudaDriver *driver) {
  return buildKernelArgs(bundle, launchesOf(bundle).front(), bufferAddresses,
                         driver);
}

Expected<KernelArgs>
buildKernelArgs(const Bundle &bundle, const BundleLaunch &launch,
                const std::map<std::string, CUdeviceptr> &bufferAddresses,
                const CudaDriver *driver) {
  KernelArgs args;
  auto addressOf = [&](const std::string &name) -> Expected<CUdeviceptr> {
    auto it = bufferAddresses.find(name);
    if (it == bufferAddresses.end())
      return Status::error("no device address supplied for buffer '" + name +
                           "'");
    return it->second;
  };
  for (const std::string &name : launch.args) {
    auto found = std::find_if(
        bundle.params.begin(), bundle.params.end(),
        [&](const BundleParam &param) { return param.name == name; });
    if (found == bundle.params.end())
      return Status::error("launch of '" + launch.entry + "': no param '" +
                           name + "'");
    size_t i = size_t(found - bundle.params.begin());
    const BundleParam &p = *found;
    switch (p.kind) {
    case ParamKind::Buffer: {
      if (!p.kernelArg)
        return Status::error(paramWhere(i, p) +
                             "a buffer with kernel_arg false is no argument");
      Expected<CUdeviceptr> address = addressOf(p.name);
      if (!address.ok())
        return address.status().withContext(paramWhere(i, p));
      args.addPointer(*address);
      if (p.descriptor) {
        // The rest of upstream's memref descriptor: the aligned pointer, the
        // offset (none), the sizes and the strides.
        args.addPointer(*address);
        args.addScalar<int64_t>(0);
        for (uint64_t size : p.shape)
          args.addScalar<int64_t>(int64_t(size));
        for (uint64_t stride : bufferStrides(p))
          args.addScalar<int64_t>(int64_t(stride));
      }
      break;
    }
    case ParamKind::Scalar: {
      Expected<std::vector<uint8_t>> bytes = scalarBytes(p);
      if (!bytes.ok())
        return bytes.status().withContext(paramWhere(i, p));
      args.addBytes(bytes->data(), bytes->size(), bytes->size());
      break;
    }
    case ParamKind::TensorMap: {
      if (!driver)
        return Status::error(paramWhere(i, p) +
                             "encoding a tensor map needs the CUDA driver");
      Expected<CUdeviceptr> address = addressOf(p.buffer);
      if (!address.ok())
        return address.status().withContext(paramWhere(i, p));
      Expected<CUtensorMap> map = encode(*driver, p.tensorMap, *address);
      if (!map.ok())
        return map.status().withContext(paramWhere(i, p));
      args.addTensorMap(*map);
      break;
    }
    }
  }
  return args;
}

} // namespace sinkattn::rt
