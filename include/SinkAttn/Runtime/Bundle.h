//===- Bundle.h - Compiled-kernel bundles (kernel.ptx + manifest) -*- C++ -*-=//
//
// A bundle is a directory holding `kernel.ptx` and `manifest.json` (and,
// optionally, `reference.ptx`: an independent reference implementation that
// the runner checks the kernel against); the manifest describes how to
// launch the PTX entry (grid, block, cluster, dynamic shared memory) and its
// ABI (the ordered parameter list).  The format is specified in
// docs/bundle.md.  The compiler writes bundles with writeBundle();
// sinkattn-runner reads them with readBundle().
//
//===----------------------------------------------------------------------===//

#ifndef SINKATTN_RUNTIME_BUNDLE_H
#define SINKATTN_RUNTIME_BUNDLE_H

#include "SinkAttn/Runtime/DType.h"
#include "SinkAttn/Runtime/Json.h"
#include "SinkAttn/Runtime/Launch.h"
#include "SinkAttn/Runtime/TensorMap.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace sinkattn::rt {

/// The newest manifest format version this runtime reads and writes.
/// Version 2 added the optional `reference` kernel and floating-point
/// config values; version 3 added `launches` (several kernels per bundle);
/// version 4 a launch's `overlaps_next`; version 5 buffers passed as memref
/// descriptors, whose sizes and strides may change at launch; version 6 the
/// kernel assembled ahead of time (`sass`).
inline constexpr int64_t kBundleFormatVersion = 6;
/// The version new bundles default to: a single-kernel bundle needs nothing
/// newer, so older runtimes still read it.
inline constexpr int64_t kBundleDefaultFormatVersion = 2;
/// The version a bundle with `launches` needs.
inline constexpr int64_t kBundleLaunchesFormatVersion = 3;
/// The version a bundle with an `overlaps_next` launch needs (a runtime
/// that would run the pair one after the other, or not know the field,
/// then says "unsupported format_version").
inline constexpr int64_t kBundleOverlapFormatVersion = 4;
/// The version a buffer passed as a memref descriptor needs.
inline constexpr int64_t kBundleDescriptorFormatVersion = 5;
/// The version a bundle with `sass` needs.
inline constexpr int64_t kBundleSassFormatVersion = 6;
/// The oldest version it still reads: version-1 manifests are version 2
/// without those two features.
inline constexpr int64_t kBundleOldestFormatVersion = 1;
inline constexpr const char *kBundlePtxFile = "kernel.ptx";
inline constexpr const char *kBundleManifestFile = "manifest.json";
/// File name writeBundle() gives the reference kernel's PTX by default.
inline constexpr const char *kBundleReferencePtxFile = "reference.ptx";
/// File name writeBundle() gives the kernel's SASS by default.
inline constexpr const char *kBundleCubinFile = "kernel.cubin";

enum class ParamKind { Buffer, Scalar, TensorMap };
enum class BufferRole { Input, Output };

const char *paramKindName(ParamKind kind);   // "buffer", "scalar", "tensor_map"
const char *bufferRoleName(BufferRole role); // "input", "output"

/// One kernel parameter, in ABI order.  Which fields are meaningful depends
/// on `kind`; the others keep their defaults (and are compared anyway, so
/// keep them default when building bundles).
struct BundleParam {
  std::string name;
  ParamKind kind = ParamKind::Scalar;
  /// Element type of a buffer, type of a scalar, or data type of a tensor
  /// map (tensorMap.dtype is kept equal to it).
  DType dtype = DType::F32;

  // kind == Scalar.  Integer dtypes use intValue, floating ones floatValue.
  int64_t intValue = 0;
  double floatValue = 0;

  // kind == Buffer: passed to the kernel as a 64-bit device pointer.
  std::vector<uint64_t> shape; ///< Outermost first, row-major.
  BufferRole role = BufferRole::Input;
  /// False for a buffer the kernel reaches only through tensor maps: the
  /// runner still allocates and fills it, but it is not a kernel parameter
  /// and takes no slot in the ABI.  Manifest field "kernel_arg".
  bool kernelArg = true;
  /// Passed as an MLIR memref descriptor (upstream's calling convention for
  /// memrefs with run-time sizes or strides): allocated and aligned pointer
  /// (both the buffer's address), offset 0, then `shape` and the element
  /// strides as 64-bit integers. Such a buffer's sizes in `dynamicDims` and
  /// its strides may change at launch (withTensorShapes); `shape` holds this
  /// instance's. Manifest field "descriptor" (format version 5).
  bool descriptor = false;
  /// Descriptor buffers: the dimensions whose sizes the kernel reads at run
  /// time (the others are compiled in). Manifest field "dynamic_dims".
  std::vector<uint64_t> dynamicDims;
  /// Descriptor buffers: element strides, outermost first, the innermost 1,
  /// for a kernel that takes a strided view (any strides at launch); empty
  /// for one that takes a dense row-major tensor. Manifest field "strides".
  std::vector<uint64_t> strides;

  // kind == TensorMap: passed by value as a 128-byte CUtensorMap.
  std::string buffer; ///< Name of the buffer param it points into.
  TensorMapSpec tensorMap;

  bool operator==(const BundleParam &o) const;
  bool operator!=(const BundleParam &o) const { return !(*this == o); }
};

/// A config value: text, an integer, or (format version 2) a finite
/// floating-point number such as a softmax scale.
using ConfigValue = std::variant<std::string, int64_t, double>;

/// An independent reference implementation of the bundle's kernel (manifest
/// field "reference", format version 2): PTX the runner JIT-links next to
/// the kernel and runs on the same inputs to check the kernel's outputs.
/// Its ABI and launch shape are fixed per kernel kind (for "sink-fwd":
/// SinkAttn/Runtime/AttentionReference.h) rather than described here.
struct BundleReference {
  /// File in the bundle directory holding the PTX: a plain file name (no
  /// directories), not one of kernel.ptx or manifest.json.
  std::string ptxFile = kBundleReferencePtxFile;
  /// `.entry` symbol in that PTX.
  std::string entry;
  /// Contents of the PTX file (not part of the manifest).
  std::string ptx;

  bool operator==(const BundleReference &o) const {
    return ptxFile == o.ptxFile && entry == o.entry && ptx == o.ptx;
  }
  bool operator!=(const BundleReference &o) const { return !(*this == o); }
};

/// kernel.ptx assembled ahead of time for one GPU architecture (manifest
/// field "sass", format version 6), so that loading the bundle on that GPU
/// needs no JIT compile.
struct BundleSass {
  /// File in the bundle directory holding the cubin (an ELF image): a plain
  /// file name, not one of kernel.ptx, manifest.json or the reference's PTX.
  std::string cubinFile = kBundleCubinFile;
  /// The architecture it was assembled for, as ptxas names it ("sm_90a").
  std::string arch;
  /// ptxFingerprint() of the kernel.ptx it was assembled from: a bundle
  /// whose PTX was changed after its cubin was built is refused.
  std::string ptxFingerprint;
  /// Contents of the cubin file (not part of the manifest).
  std::string cubin;

  bool operator==(const BundleSass &o) const {
    return cubinFile == o.cubinFile && arch == o.arch &&
           ptxFingerprint == o.ptxFingerprint && cubin == o.cubin;
  }
  bool operator!=(const BundleSass &o) const { return !(*this == o); }
};

/// The fingerprint BundleSass records of the PTX: its 64-bit FNV-1a hash as
/// 16 lower-case hex digits.
std::string ptxFingerprint(std::string_view ptx);
/// The compute capability an architecture name ("sm_90a", "sm_80") is for:
/// {9, 0}, {8, 0}; an error for anything else.
Expected<std::pair<int, int>> sassComputeCapability(std::string_view arch);
/// Whether `sass` runs on a GPU of compute capability major.minor: an
/// arch-specific cubin ("sm_90a") on exactly that one, another on the same
/// major with at least its minor.
bool sassRunsOn(const BundleSass &sass, int major, int minor);

/// One kernel launch of a multi-kernel bundle (manifest field "launches",
/// format version 3). The launches run in order, each with the arguments it
/// names (rt::LoadedBundle::run; overlapsNext pairs side by side).
struct BundleLaunch {
  std::string entry; ///< PTX .entry symbol.
  Dim3 grid;
  Dim3 block;
  Dim3 cluster; ///< (1,1,1) = no clusters.
  uint32_t sharedMemoryBytes = 0;
  /// The kernel's parameters in ABI order, by param name: buffers (as
  /// device pointers), scalars and tensor maps of the bundle.
  std::vector<std::string> args;
  /// A setup launch computes inputs of the launches after it (the forward
  /// pass whose O and LSE a backward reads): the runner runs it once after
  /// filling the inputs and does not time it. Manifest field "setup".
  bool setup = false;
  /// This launch and the next one depend only on the launches before them,
  /// not on each other (the backward's dK/dV and dQ kernels): the runner
  /// starts this one on a second stream beside the next, and the launch
  /// after them waits for both, so each fills the other's tail. Manifest
  /// field "overlaps_next".
  bool overlapsNext = false;

  bool operator==(const BundleLaunch &o) const;
  bool operator!=(const BundleLaunch &o) const { return !(*this == o); }
};

struct Bundle {
  int64_t formatVersion = kBundleDefaultFormatVersion;
  std::string kernel; ///< Kernel kind, e.g. "gemm", "attention_fwd".
  /// A single-kernel bundle: its PTX .entry symbol and launch shape (the
  /// kernel takes every param in order). Unused (entry empty) when
  /// `launches` is not empty.
  std::string entry;
  Dim3 grid;
  Dim3 block;
  Dim3 cluster; ///< (1,1,1) = no clusters.
  uint32_t sharedMemoryBytes = 0; ///< Dynamic shared memory per block.
  /// A multi-kernel bundle (format version 3): the kernels of kernel.ptx,
  /// launched in this order.
  std::vector<BundleLaunch> launches;
  std::map<std::string, ConfigValue> config; ///< Compile options.
  std::vector<BundleParam> params;
  /// Contents of kernel.ptx (not part of the manifest).
  std::string ptx;
  /// The reference kernel, when the compiler provides one.
  std::optional<BundleReference> reference;
  /// kernel.ptx assembled ahead of time, when the compiler was asked to.
  std::optional<BundleSass> sass;

  bool operator==(const Bundle &o) const;
  bool operator!=(const Bundle &o) const { return !(*this == o); }
};

/// Bytes a buffer param spans (product(shape) * dtypeSize, or from its first
/// to its last element for a strided one), saturating at UINT64_MAX; 0 for
/// non-buffers.
uint64_t bufferBytes(const BundleParam &param);
/// A buffer's element strides: `strides`, or row-major ones of `shape`.
std::vector<uint64_t> bufferStrides(const BundleParam &param);
/// The tensor map a descriptor buffer's sizes and strides imply for `spec`
/// (its global dims and strides; the box and the rest kept).
TensorMapSpec tensorMapOverBuffer(const TensorMapSpec &spec,
                                  const BundleParam &buffer);

/// A tensor's sizes and element strides at launch (strides empty: dense,
/// row-major).
struct TensorShape {
  std::vector<uint64_t> sizes, strides;
};
/// `bundle` for tensors of other shapes: each buffer named in `shapes` (a
/// descriptor buffer) takes those sizes and strides, and the tensor maps
/// over it follow. Errors name the buffer: not a descriptor buffer, another
/// rank, a size the kernel compiled in that differs or a size of 0, strides
/// for a kernel that takes a dense tensor or dense strides that are not
/// row-major, an innermost stride other than 1, or a tensor beyond 2^48
/// bytes. Launch grids stay as they are: the caller, which knows the kernel
/// kind, sets them for the new shapes.
Expected<Bundle>
withTensorShapes(const Bundle &bundle,
                 const std::map<std::string, TensorShape> &shapes);
/// A scalar param: `value` as an integer for integer dtypes.
BundleParam scalarParam(std::string name, DType dtype, double value);
/// The param called `name`, or nullptr.
const BundleParam *findParam(const Bundle &bundle, std::string_view name);

/// The config value `key` as an integer or as text; errors "config has no
/// 'key'" and "config 'key' is not an integer" / "... is not text".
Expected<int64_t> configInteger(const Bundle &bundle, const std::string &key);
Expected<std::string> configText(const Bundle &bundle, const std::string &key);
/// The text value of `key`, or `fallback` when the config has none (an
/// error when it is not text).
Expected<std::string> configTextOr(const Bundle &bundle, const std::string &key,
                                   const std::string &fallback);

/// Semantic checks shared by reader and writer: format version (1 to 5;
/// a reference kernel and floating config values need 2, launches 3,
/// overlapping launches 4, descriptor buffers 5),
/// non-empty kernel/entry and launch shape (validateLaunchConfig), or with
/// launches: no top-level entry or launch shape, valid entries and shapes,
/// args that name kernel-argument params, setup launches first and at
/// least one launch that is not setup; finite
/// config numbers, unique param names, scalar values in range for their
/// dtype, buffers with 1..8 non-zero dims (a descriptor buffer's dynamic
/// dims in range and ascending, its strides one per dim, the innermost 1;
/// dynamic dims and strides only on descriptor buffers), tensor maps that
/// pass validate(), reference an existing buffer, and stay inside it (a
/// map over a descriptor buffer: the one tensorMapOverBuffer gives); when
/// `ptx` is non-empty it must declare every launched `.entry`. A reference
/// needs a valid entry and a plain file name, and its PTX, when non-empty,
/// must declare its entry.
Status validateBundle(const Bundle &bundle);

/// The manifest as JSON (ptx excluded).
JsonValue manifestToJson(const Bundle &bundle);
/// Manifest JSON text -> Bundle (ptx left empty), with every check of
/// validateBundle.  Errors name the offending field, e.g.
/// "manifest: params[2].shape: expected an array, got string".
/// Never crashes on arbitrary input.
Expected<Bundle> parseManifest(std::string_view json);

/// Creates `directory` if needed and writes kernel.ptx, the reference's PTX
/// (if any) and manifest.json; refuses (writing nothing) if validateBundle
/// fails or a PTX text is empty.
Status writeBundle(const std::string &directory, const Bundle &bundle);
/// Reads and validates a bundle directory, including the reference's PTX
/// file when the manifest names one.
Expected<Bundle> readBundle(const std::string &directory);

/// The bundle's launches: `launches`, or for a single-kernel bundle one
/// launch of `entry` with every kernel-argument param in order.
std::vector<BundleLaunch> launchesOf(const Bundle &bundle);

/// Builds the launch configuration of a single-kernel bundle, or of one
/// launch.
LaunchConfig launchConfigFor(const Bundle &bundle, CUstream stream = nullptr);
/// The blocks a launch of `bundle`'s kernel gets on a GPU of `smCount` SMs:
/// its grid's x, at most `smCount` for a persistent kernel (config
/// `persistent_blocks` > 0): it strides over its tiles by the grid it is
/// launched with, one block per SM, so a second wave of blocks would only
/// wait. A persistent kernel whose blocks each have a list of tiles (config
/// `tile_lists` = 1, or a `tiles` buffer: the sink-fwd forward, its lists
/// fixed when it was built or filled at launch) gets its grid as is.
/// `smCount` <= 0: the grid's x.
uint32_t launchedBlocks(const Bundle &bundle, int smCount);
LaunchConfig launchConfigFor(const BundleLaunch &launch,
                             CUstream stream = nullptr);

/// Kernel arguments in ABI order: buffers as device pointers from
/// `bufferAddresses` (keyed by param name; buffers with kernelArg == false
/// are skipped), scalars converted to their
/// dtype's bytes (f16/bf16 rounded to nearest even), tensor maps encoded
/// against their buffer's address.  `driver` may be null when the bundle has
/// no tensor maps.
Expected<KernelArgs>
buildKernelArgs(const Bundle &bundle,
                const std::map<std::string, CUdeviceptr> &bufferAddresses,
                const CudaDriver *driver);
/// The arguments of one launch (its `args`, in order).
Expected<KernelArgs>
buildKernelArgs(const Bundle &bundle, const BundleLaunch &launch,
                const std::map<std::string, CUdeviceptr> &bufferAddresses,
                const CudaDriver *driver);

} // namespace sinkattn::rt

#endif // SINKATTN_RUNTIME_BUNDLE_H
