//===- BundleTest.cpp - Bundle manifests ----------------------------------===//

#include "SinkAttn/Runtime/Bundle.h"
#include "SinkAttn/Runtime/Random.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <unistd.h>

using namespace sinkattn::rt;
namespace fs = std::filesystem;

namespace {

const char *kPtx = ".version 8.0\n.target sm_90a\n.address_size 64\n\n"
                   ".visible .entry attn_fwd(\n  .param .u64 attn_fwd_param_0\n"
                   ")\n{\n  ret;\n}\n";

BundleParam bufferParam(const std::string &name, DType dtype,
                        std::vector<uint64_t> shape, BufferRole role) {
  BundleParam p;
  p.name = name;
  p.kind = ParamKind::Buffer;
  p.dtype = dtype;
  p.shape = std::move(shape);
  p.role = role;
  return p;
}

BundleParam scalarParam(const std::string &name, DType dtype, int64_t i,
                        double f) {
  BundleParam p;
  p.name = name;
  p.kind = ParamKind::Scalar;
  p.dtype = dtype;
  p.intValue = i;
  p.floatValue = f;
  return p;
}

/// An attention-like bundle exercising every param kind.
Bundle sampleBundle() {
  Bundle b;
  b.kernel = "attention_fwd";
  b.entry = "attn_fwd";
  b.grid = {16, 2, 1};
  b.block = {384, 1, 1};
  b.cluster = {2, 1, 1};
  b.sharedMemoryBytes = 200 * 1024;
  b.config["head_dim"] = int64_t(128);
  b.config["dtype"] = std::string("bf16");
  b.config["causal"] = int64_t(0);
  b.params.push_back(
      bufferParam("q", DType::BF16, {1, 2, 1024, 128}, BufferRole::Input));
  b.params.push_back(
      bufferParam("o", DType::F32, {1, 2, 1024, 128}, BufferRole::Output));
  b.params.push_back(
      bufferParam("img", DType::BF16, {2, 16, 16, 64}, BufferRole::Input));
  b.params.back().kernelArg = false; // Only reached through img_tma.
  b.params.push_back(scalarParam("scale", DType::F32, 0, 0.08838834764831845));
  b.params.push_back(scalarParam("seq_len", DType::I32, 1024, 0));
  b.params.push_back(scalarParam("half_scale", DType::BF16, 0, 0.5));

  BundleParam q;
  q.name = "q_tma";
  q.kind = ParamKind::TensorMap;
  q.dtype = DType::BF16;
  q.buffer = "q";
  q.tensorMap = makeRowMajorTiledSpec(DType::BF16, {2048, 128}, {128, 64},
                                      TensorMapSwizzle::B128);
  q.tensorMap.l2Promotion = TensorMapL2Promotion::B256;
  q.tensorMap.oobFill = TensorMapOobFill::NanRequestZeroFma;
  b.params.push_back(q);

  BundleParam im;
  im.name = "img_tma";
  im.kind = ParamKind::TensorMap;
  im.dtype = DType::BF16;
  im.buffer = "img";
  im.tensorMap.dtype = DType::BF16;
  im.tensorMap.globalDims = {64, 16, 16, 2};
  im.tensorMap.globalStridesBytes = {128, 2048, 32768};
  im.tensorMap.elementStrides = {1, 1, 1, 1};
  im.tensorMap.swizzle = TensorMapSwizzle::B128;
  im.tensorMap.im2col = Im2colSpec{{-1, -1}, {-1, -1}, 64, 128};
  b.params.push_back(im);
  b.ptx = kPtx;
  return b;
}

const char *kReferencePtx =
    ".version 8.0\n.target sm_90a\n.address_size 64\n\n"
    ".visible .entry sink_fwd_reference(\n  .param .u64 p0\n)\n{\n  ret;\n}\n";

/// The sample with a reference kernel and a floating-point config value
/// (both format version 2).
Bundle sampleWithReference() {
  Bundle b = sampleBundle();
  b.config["scale"] = 0.08838834764831845;
  BundleReference reference;
  reference.entry = "sink_fwd_reference";
  reference.ptx = kReferencePtx;
  b.reference = reference;
  return b;
}

fs::path tempDir(const std::string &name) {
  fs::path dir = fs::temp_directory_path() /
                 ("sinkattn_bundle_test_" + std::to_string(getpid()) + "_" +
                  name);
  fs::remove_all(dir);
  return dir;
}

/// Manifest text of the sample bundle, with `edit` applied to its JSON.
template <typename Fn> std::string editedManifest(Fn edit) {
  JsonValue m = manifestToJson(sampleBundle());
  edit(m);
  return writeJson(m);
}

/// Rebuilds a JSON object without `key` (JsonValue has no erase on purpose).
JsonValue without(const JsonValue &object, const std::string &key) {
  JsonValue out = JsonValue::object();
  for (const auto &[k, v] : object.asObject())
    if (k != key)
      out.set(k, v);
  return out;
}

/// Replaces params[index] by `edit(params[index])`.
template <typename Fn> void editParam(JsonValue &m, size_t index, Fn edit) {
  JsonValue params = JsonValue::array();
  const auto &old = m.find("params")->asArray();
  for (size_t i = 0; i < old.size(); ++i)
    params.push(i == index ? edit(old[i]) : old[i]);
  m.set("params", params);
}

std::string manifestError(const std::string &text) {
  Expected<Bundle> b = parseManifest(text);
  EXPECT_FALSE(b.ok()) << "accepted:\n" << text;
  return b.ok() ? std::string() : b.message();
}

#define EXPECT_CONTAINS(haystack, needle)                                      \
  EXPECT_NE(std::string(haystack).find(needle), std::string::npos)             \
      << "message: " << (haystack)

TEST(Bundle, SampleIsValid) {
  Status st = validateBundle(sampleBundle());
  EXPECT_TRUE(st.ok()) << st.message();
}

TEST(Bundle, LaunchedBlocks) {
  Bundle b = sampleBundle(); // grid.x 16, no persistent_blocks
  EXPECT_EQ(launchedBlocks(b, 8), 16u);
  b.grid.x = 200;
  b.config["persistent_blocks"] = int64_t(200);
  EXPECT_EQ(launchedBlocks(b, 132), 132u); // one block per SM
  EXPECT_EQ(launchedBlocks(b, 0), 200u);   // SM count unknown
  b.grid.x = 100;
  b.config["persistent_blocks"] = int64_t(100);
  EXPECT_EQ(launchedBlocks(b, 132), 100u); // fewer blocks than SMs
  b.config["persistent_blocks"] = int64_t(0);
  EXPECT_EQ(launchedBlocks(b, 8), 100u);   // one block per tile
  // Lists of tiles fixed per block: every block of the grid runs.
  b.grid.x = 200;
  b.config["persistent_blocks"] = int64_t(200);
  b.config["tile_lists"] = int64_t(1);
  EXPECT_EQ(launchedBlocks(b, 132), 200u);
  b.config["tile_lists"] = int64_t(0);
  EXPECT_EQ(launchedBlocks(b, 132), 132u);
  // A tile table filled at launch says so too, whatever the config.
  BundleParam tiles;
  tiles.name = "tiles";
  tiles.kind = ParamKind::Buffer;
  tiles.dtype = DType::I32;
  tiles.shape = {300};
  b.params.push_back(tiles);
  EXPECT_EQ(launchedBlocks(b, 132), 200u);
}

TEST(Bundle, WriteReadRoundTrip) {
  Bundle b = sampleBundle();
  fs::path dir = tempDir("roundtrip");
  Status st = writeBundle(dir.string(), b);
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_TRUE(fs::exists(dir / "kernel.ptx"));
  EXPECT_TRUE(fs::exists(dir / "manifest.json"));
  Expected<Bundle> back = readBundle(dir.string());
  ASSERT_TRUE(back.ok()) << back.message();
  EXPECT_EQ(*back, b);
  // Writing again gives byte-identical files (stable output).
  std::string first = writeJson(manifestToJson(b));
  EXPECT_EQ(writeJson(manifestToJson(*back)), first);
  fs::remove_all(dir);
}

TEST(Bundle, ManifestTextRoundTrip) {
  Bundle b = sampleBundle();
  std::string text = writeJson(manifestToJson(b));
  Expected<Bundle> back = parseManifest(text);
  ASSERT_TRUE(back.ok()) << back.message();
  b.ptx.clear();
  EXPECT_EQ(*back, b);
  EXPECT_CONTAINS(text, "\"format_version\": 2");
  EXPECT_CONTAINS(text, "\"global_dims\": [128, 2048]");
  EXPECT_CONTAINS(text, "\"swizzle\": \"128B\"");
  EXPECT_CONTAINS(text, "\"kernel_arg\": false");
}

TEST(Bundle, OptionalFieldsTakeDefaults) {
  std::string text = R"({
    "format_version": 1, "kernel": "gemm", "entry": "attn_fwd",
    "grid": [4, 1, 1], "block": [128, 1, 1], "shared_memory_bytes": 0,
    "config": {"m": 256},
    "params": [
      {"name": "a", "kind": "buffer", "dtype": "f16", "shape": [256, 64],
       "role": "input"},
      {"name": "a_tma", "kind": "tensor_map", "dtype": "f16", "buffer": "a",
       "global_dims": [64, 256], "global_strides": [128],
       "box_dims": [64, 64]},
      {"name": "alpha", "kind": "scalar", "dtype": "f32", "value": 2}
    ]})";
  Expected<Bundle> b = parseManifest(text);
  ASSERT_TRUE(b.ok()) << b.message();
  EXPECT_EQ(b->cluster, (Dim3{1, 1, 1}));
  const BundleParam *m = findParam(*b, "a_tma");
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->tensorMap.elementStrides, (std::vector<uint32_t>{1, 1}));
  EXPECT_EQ(m->tensorMap.swizzle, TensorMapSwizzle::None);
  EXPECT_FALSE(m->tensorMap.isIm2col());
  EXPECT_EQ(findParam(*b, "alpha")->floatValue, 2.0);
  EXPECT_EQ(std::get<int64_t>(b->config.at("m")), 256);
  EXPECT_EQ(bufferBytes(*findParam(*b, "a")), 256u * 64 * 2);
}

TEST(Bundle, MalformedManifests) {
  EXPECT_CONTAINS(manifestError(editedManifest(
                      [](JsonValue &m) { m = without(m, "entry"); })),
                  "manifest.json: missing required field 'entry'");
  EXPECT_CONTAINS(manifestError(editedManifest(
                      [](JsonValue &m) { m = without(m, "format_version"); })),
                  "missing required field 'format_version'");
  EXPECT_CONTAINS(
      manifestError(
          editedManifest([](JsonValue &m) { m.set("format_version", 7); })),
      "unsupported format_version 7; this runtime reads versions 1 to 6");
  EXPECT_CONTAINS(
      manifestError(
          editedManifest([](JsonValue &m) { m.set("format_version", 0); })),
      "unsupported format_version 0; this runtime reads versions 1 to 6");
  EXPECT_CONTAINS(
      manifestError(editedManifest(
          [](JsonValue &m) { m.set("format_version", "1"); })),
      "format_version: expected an integer, got string");
  EXPECT_CONTAINS(manifestError(editedManifest(
                      [](JsonValue &m) { m.set("grid", "16,2,1"); })),
                  "grid: expected an array of integers, got string");
  EXPECT_CONTAINS(
      manifestError(editedManifest([](JsonValue &m) {
        m.set("block", JsonValue::array({128, 1}));
      })),
      "block: expected an array of 3 integers [x, y, z], got 2 elements");
  EXPECT_CONTAINS(
      manifestError(editedManifest(
          [](JsonValue &m) { m.set("grid", JsonValue::array({15, 2, 1})); })),
      "not a multiple of the cluster shape");
  EXPECT_CONTAINS(
      manifestError(editedManifest(
          [](JsonValue &m) { m.set("shard_memory_bytes", 5); })),
      "unknown field 'shard_memory_bytes'");
  EXPECT_CONTAINS(
      manifestError(editedManifest(
          [](JsonValue &m) { m.set("shared_memory_bytes", -1); })),
      "shared_memory_bytes: value -1 is out of range");
  EXPECT_CONTAINS(
      manifestError(editedManifest([](JsonValue &m) {
        m.set("config", JsonValue::object({{"head_dim", true}}));
      })),
      "config.head_dim: expected a string or a number, got boolean");
  EXPECT_CONTAINS(
      manifestError(editedManifest([](JsonValue &m) {
        m.set("format_version", 1);
        m.set("config", JsonValue::object({{"scale", 1.5}}));
      })),
      "config.scale: expected a string or an integer (format_version 1), got "
      "number");
  EXPECT_CONTAINS(manifestError(editedManifest(
                      [](JsonValue &m) { m.set("params", "none"); })),
                  "params: expected an array, got string");
  EXPECT_CONTAINS(manifestError("[1, 2]"),
                  "expected a JSON object at the top level, got array");
  EXPECT_CONTAINS(manifestError("{\"format_version\": 1,"),
                  "manifest.json: JSON parse error at line 1");
}

TEST(Bundle, MalformedParams) {
  auto paramError = [](size_t index, auto edit) {
    return manifestError(editedManifest(
        [&](JsonValue &m) { editParam(m, index, edit); }));
  };
  EXPECT_CONTAINS(paramError(1,
                             [](JsonValue p) {
                               p.set("shape", "1x2");
                               return p;
                             }),
                  "params[1].shape: expected an array of integers, got string");
  EXPECT_CONTAINS(
      paramError(0, [](JsonValue p) { return without(p, "dtype"); }),
      "params[0]: missing required field 'dtype'");
  EXPECT_CONTAINS(paramError(0,
                             [](JsonValue p) {
                               p.set("dtype", "float");
                               return p;
                             }),
                  "params[0].dtype: unknown dtype 'float'");
  EXPECT_CONTAINS(paramError(0,
                             [](JsonValue p) {
                               p.set("kind", "pointer");
                               return p;
                             }),
                  "params[0].kind: unknown value 'pointer'");
  EXPECT_CONTAINS(paramError(0,
                             [](JsonValue p) {
                               p.set("role", "inout");
                               return p;
                             }),
                  "params[0].role: unknown value 'inout'");
  EXPECT_CONTAINS(paramError(0,
                             [](JsonValue p) {
                               p.set("kernel_arg", 0);
                               return p;
                             }),
                  "params[0].kernel_arg: expected a boolean, got integer");
  EXPECT_CONTAINS(paramError(6,
                             [](JsonValue p) {
                               p.set("kernel_arg", false);
                               return p;
                             }),
                  "unknown field 'kernel_arg' for a tensor_map param");
  EXPECT_CONTAINS(paramError(3,
                             [](JsonValue p) {
                               p.set("shape", JsonValue::array({1}));
                               return p;
                             }),
                  "params[3]: unknown field 'shape' for a scalar param");
  EXPECT_CONTAINS(paramError(4,
                             [](JsonValue p) {
                               p.set("value", int64_t(1) << 31);
                               return p;
                             }),
                  "params[4] ('seq_len'): value 2147483648 is out of range "
                  "for i32");
  EXPECT_CONTAINS(paramError(4,
                             [](JsonValue p) {
                               p.set("value", 1.5);
                               return p;
                             }),
                  "params[4].value: expected an integer, got number");
  EXPECT_CONTAINS(paramError(1,
                             [](JsonValue p) {
                               p.set("name", "q");
                               return p;
                             }),
                  "params[1] ('q'): duplicate param name");
  EXPECT_CONTAINS(paramError(0,
                             [](JsonValue p) {
                               p.set("shape", JsonValue::array({1, 0}));
                               return p;
                             }),
                  "shape dimension 1 is 0");
  EXPECT_CONTAINS(manifestError(editedManifest([](JsonValue &m) {
                    editParam(m, 0, [](JsonValue) { return JsonValue(7); });
                  })),
                  "params[0]: expected an object, got integer");
}

TEST(Bundle, MalformedTensorMaps) {
  auto tmaError = [](auto edit) {
    return manifestError(editedManifest(
        [&](JsonValue &m) { editParam(m, 6, edit); }));
  };
  EXPECT_CONTAINS(tmaError([](JsonValue p) {
                    p.set("box_dims", JsonValue::array({64, 300}));
                    return p;
                  }),
                  "params[6] ('q_tma'): box dimension 1 is 300; TMA boxes are "
                  "at most 256 elements per dimension");
  EXPECT_CONTAINS(tmaError([](JsonValue p) {
                    p.set("box_dims", JsonValue::array({128, 64}));
                    return p;
                  }),
                  "128B swizzle spans only 128 bytes");
  EXPECT_CONTAINS(tmaError([](JsonValue p) {
                    p.set("global_strides", JsonValue::array({200}));
                    return p;
                  }),
                  "multiples of 16 bytes");
  EXPECT_CONTAINS(tmaError([](JsonValue p) {
                    p.set("swizzle", "256B");
                    return p;
                  }),
                  "params[6].swizzle: unknown value '256B'");
  EXPECT_CONTAINS(tmaError([](JsonValue p) {
                    p.set("buffer", "k");
                    return p;
                  }),
                  "buffer 'k' is not a buffer param of this bundle");
  EXPECT_CONTAINS(tmaError([](JsonValue p) {
                    p.set("buffer", "scale");
                    return p;
                  }),
                  "buffer 'scale' is not a buffer param");
  EXPECT_CONTAINS(tmaError([](JsonValue p) {
                    p.set("global_dims", JsonValue::array({128, 4096}));
                    return p;
                  }),
                  "tensor map spans 1048576 bytes but buffer 'q' has only "
                  "524288 bytes");
  EXPECT_CONTAINS(tmaError([](JsonValue p) { return without(p, "box_dims"); }),
                  "params[6]: missing required field 'box_dims'");
  EXPECT_CONTAINS(tmaError([](JsonValue p) {
                    p.set("global_dims", JsonValue::array({128, -1}));
                    return p;
                  }),
                  "params[6].global_dims[1]: value -1 is out of range");
  EXPECT_CONTAINS(tmaError([](JsonValue p) {
                    p.set("mode", "wide");
                    return p;
                  }),
                  "params[6].mode: unknown value 'wide'");
  EXPECT_CONTAINS(tmaError([](JsonValue p) {
                    p.set("channels_per_pixel", 64);
                    return p;
                  }),
                  "unknown field 'channels_per_pixel' for a tensor_map param");
}

TEST(Bundle, ReaderChecksFilesAndEntry) {
  Expected<Bundle> missing = readBundle("/nonexistent/bundle");
  ASSERT_FALSE(missing.ok());
  EXPECT_CONTAINS(missing.message(), "manifest.json");

  Bundle b = sampleBundle();
  b.ptx = ".version 8.0\n.visible .entry attn_fwd_v2(\n)\n{\nret;\n}\n";
  EXPECT_CONTAINS(validateBundle(b).message(),
                  "kernel.ptx declares no '.entry attn_fwd'");
  fs::path dir = tempDir("badentry");
  EXPECT_FALSE(writeBundle(dir.string(), b).ok());
  EXPECT_FALSE(fs::exists(dir / "manifest.json"));

  // A hand-edited PTX file that lost the entry is caught by readBundle.
  ASSERT_TRUE(writeBundle(dir.string(), sampleBundle()).ok());
  {
    std::ofstream ptx(dir / "kernel.ptx", std::ios::trunc);
    ptx << ".version 8.0\n";
  }
  Expected<Bundle> edited = readBundle(dir.string());
  ASSERT_FALSE(edited.ok());
  EXPECT_CONTAINS(edited.message(), "declares no '.entry attn_fwd'");
  fs::remove_all(dir);

  b = sampleBundle();
  b.entry = "attn fwd";
  EXPECT_CONTAINS(validateBundle(b).message(), "not a valid PTX identifier");
}

TEST(Bundle, KernelArgsWithoutDriver) {
  Bundle b = sampleBundle();
  // Drop the tensor maps: they need the driver to encode.
  b.params.resize(6);
  std::map<std::string, CUdeviceptr> addrs = {
      {"q", 0x10000}, {"o", 0x20000}, {"img", 0x30000}};
  Expected<KernelArgs> args = buildKernelArgs(b, addrs, nullptr);
  ASSERT_TRUE(args.ok()) << args.message();
  auto e = args->entries();
  // "img" has kernel_arg false, so q, o, scale, seq_len, half_scale remain.
  ASSERT_EQ(e.size(), 5u);
  CUdeviceptr p;
  std::memcpy(&p, e[1].first, 8);
  EXPECT_EQ(p, 0x20000u);
  EXPECT_EQ(e[2].second, 4u);
  float scale;
  std::memcpy(&scale, e[2].first, 4);
  EXPECT_EQ(scale, 0.08838834764831845f);
  int32_t seq;
  std::memcpy(&seq, e[3].first, 4);
  EXPECT_EQ(seq, 1024);
  uint16_t half;
  ASSERT_EQ(e[4].second, 2u);
  std::memcpy(&half, e[4].first, 2);
  EXPECT_EQ(half, 0x3F00); // 0.5 in bf16

  addrs.erase("o");
  Expected<KernelArgs> noAddr = buildKernelArgs(b, addrs, nullptr);
  ASSERT_FALSE(noAddr.ok());
  EXPECT_CONTAINS(noAddr.message(), "no device address supplied for buffer 'o'");

  Expected<KernelArgs> noDriver =
      buildKernelArgs(sampleBundle(), {{"q", 0x10000}, {"o", 0x20000},
                                       {"img", 0x30000}},
                      nullptr);
  ASSERT_FALSE(noDriver.ok());
  EXPECT_CONTAINS(noDriver.message(), "needs the CUDA driver");

  LaunchConfig lc = launchConfigFor(sampleBundle());
  EXPECT_EQ(lc.grid, (Dim3{16, 2, 1}));
  EXPECT_EQ(lc.cluster, (Dim3{2, 1, 1}));
  EXPECT_EQ(lc.dynamicSharedMemoryBytes, 200u * 1024);
}

TEST(Bundle, ReferenceRoundTrip) {
  Bundle b = sampleWithReference();
  ASSERT_TRUE(validateBundle(b).ok()) << validateBundle(b).message();
  fs::path dir = tempDir("reference");
  Status st = writeBundle(dir.string(), b);
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_TRUE(fs::exists(dir / "reference.ptx"));
  Expected<Bundle> back = readBundle(dir.string());
  ASSERT_TRUE(back.ok()) << back.message();
  EXPECT_EQ(*back, b);
  ASSERT_TRUE(back->reference.has_value());
  EXPECT_EQ(back->reference->ptx, kReferencePtx);
  EXPECT_EQ(std::get<double>(back->config.at("scale")), 0.08838834764831845);

  std::string text = writeJson(manifestToJson(b));
  EXPECT_CONTAINS(text, "\"reference\": {");
  EXPECT_CONTAINS(text, "\"ptx\": \"reference.ptx\"");
  EXPECT_CONTAINS(text, "\"entry\": \"sink_fwd_reference\"");
  EXPECT_CONTAINS(text, "\"scale\": 0.08838834764831845");
  // The manifest alone: the reference without its PTX text.
  Expected<Bundle> parsed = parseManifest(text);
  ASSERT_TRUE(parsed.ok()) << parsed.message();
  ASSERT_TRUE(parsed->reference.has_value());
  EXPECT_EQ(parsed->reference->ptxFile, "reference.ptx");
  EXPECT_EQ(parsed->reference->entry, "sink_fwd_reference");
  EXPECT_TRUE(parsed->reference->ptx.empty());
  fs::remove_all(dir);

  // Another file name is kept and used.
  b.reference->ptxFile = "sink-fwd.reference_v2.ptx";
  dir = tempDir("reference_name");
  ASSERT_TRUE(writeBundle(dir.string(), b).ok());
  EXPECT_TRUE(fs::exists(dir / "sink-fwd.reference_v2.ptx"));
  EXPECT_FALSE(fs::exists(dir / "reference.ptx"));
  back = readBundle(dir.string());
  ASSERT_TRUE(back.ok()) << back.message();
  EXPECT_EQ(*back, b);
  fs::remove_all(dir);
}

TEST(Bundle, VersionOneManifestsStillRead) {
  JsonValue m = manifestToJson(sampleBundle());
  m.set("format_version", 1);
  Expected<Bundle> b = parseManifest(writeJson(m));
  ASSERT_TRUE(b.ok()) << b.message();
  EXPECT_EQ(b->formatVersion, 1);
  EXPECT_FALSE(b->reference.has_value());
  // ... and are written back as version 1, unchanged.
  EXPECT_EQ(writeJson(manifestToJson(*b)), writeJson(m));

  // Version-2 features in a version-1 bundle built in code.
  Bundle v1 = sampleWithReference();
  v1.formatVersion = 1;
  v1.config.erase("scale");
  EXPECT_CONTAINS(validateBundle(v1).message(),
                  "reference: a reference kernel needs format_version 2");
  v1 = sampleWithReference();
  v1.formatVersion = 1;
  v1.reference.reset();
  EXPECT_CONTAINS(validateBundle(v1).message(),
                  "config.scale: floating-point config values need "
                  "format_version 2");
}

TEST(Bundle, MalformedReferences) {
  // The sample's manifest with `edit` applied to it and to its reference.
  auto manifestWith = [](auto edit) {
    JsonValue m = manifestToJson(sampleWithReference());
    JsonValue reference = *m.find("reference");
    edit(m, reference);
    return m;
  };
  // ... with only the reference object edited.
  auto referenceError = [&](auto edit) {
    return manifestError(writeJson(manifestWith([&](JsonValue &m, JsonValue &r) {
      edit(r);
      m.set("reference", r);
    })));
  };
  EXPECT_CONTAINS(manifestError(writeJson(manifestWith([](JsonValue &m, JsonValue &) {
                    m.set("format_version", 1);
                    m.set("config", JsonValue::object());
                  }))),
                  "manifest.json: reference: a reference kernel needs "
                  "format_version 2");
  EXPECT_CONTAINS(manifestError(writeJson(manifestWith([](JsonValue &m, JsonValue &) {
                    m.set("reference", "reference.ptx");
                  }))),
                  "reference: expected an object, got string");
  EXPECT_CONTAINS(referenceError([](JsonValue &r) { r = without(r, "entry"); }),
                  "reference: missing required field 'entry'");
  EXPECT_CONTAINS(referenceError([](JsonValue &r) { r = without(r, "ptx"); }),
                  "reference: missing required field 'ptx'");
  EXPECT_CONTAINS(referenceError([](JsonValue &r) { r.set("ptx", 5); }),
                  "reference.ptx: expected a string, got integer");
  EXPECT_CONTAINS(referenceError([](JsonValue &r) { r.set("entry", "sink fwd"); }),
                  "reference.entry: 'sink fwd' is not a valid PTX identifier");
  EXPECT_CONTAINS(referenceError([](JsonValue &r) {
                    r.set("grid", JsonValue::array({1, 1, 1}));
                  }),
                  "reference: unknown field 'grid'");
  for (const char *name : {"../reference.ptx", "/tmp/reference.ptx",
                           "sub/reference.ptx", "kernel.ptx", "manifest.json",
                           ".reference.ptx", "", ".."})
    EXPECT_CONTAINS(referenceError([&](JsonValue &r) { r.set("ptx", name); }),
                    "is not a plain file name in the bundle directory")
        << "file name: " << name;

  Bundle b = sampleWithReference();
  b.config["scale"] = std::nan("");
  EXPECT_CONTAINS(validateBundle(b).message(), "config.scale: not a finite number");
  b = sampleWithReference();
  b.reference->ptx = kPtx; // declares attn_fwd, not sink_fwd_reference
  EXPECT_CONTAINS(validateBundle(b).message(),
                  "reference.ptx declares no '.entry sink_fwd_reference' (the "
                  "manifest's reference.entry)");
}

TEST(Bundle, ReaderChecksReferenceFile) {
  fs::path dir = tempDir("reference_file");
  // The writer needs the reference's PTX and writes nothing without it.
  Bundle b = sampleWithReference();
  b.reference->ptx.clear();
  EXPECT_CONTAINS(writeBundle(dir.string(), b).message(),
                  "refusing to write a bundle whose reference kernel has no PTX");
  EXPECT_FALSE(fs::exists(dir / "manifest.json"));

  ASSERT_TRUE(writeBundle(dir.string(), sampleWithReference()).ok());
  fs::remove(dir / "reference.ptx");
  Expected<Bundle> missing = readBundle(dir.string());
  ASSERT_FALSE(missing.ok());
  EXPECT_CONTAINS(missing.message(), "reference kernel: cannot read");
  EXPECT_CONTAINS(missing.message(), "reference.ptx: no such file");

  { std::ofstream empty(dir / "reference.ptx", std::ios::trunc); }
  Expected<Bundle> empty = readBundle(dir.string());
  ASSERT_FALSE(empty.ok());
  EXPECT_CONTAINS(empty.message(), "reference.ptx is empty");

  {
    std::ofstream other(dir / "reference.ptx", std::ios::trunc);
    other << kPtx;
  }
  Expected<Bundle> wrongEntry = readBundle(dir.string());
  ASSERT_FALSE(wrongEntry.ok());
  EXPECT_CONTAINS(wrongEntry.message(),
                  "reference.ptx declares no '.entry sink_fwd_reference'");

  // A reference.ptx the manifest does not name is ignored.
  ASSERT_TRUE(writeBundle(dir.string(), sampleBundle()).ok());
  Expected<Bundle> plain = readBundle(dir.string());
  ASSERT_TRUE(plain.ok()) << plain.message();
  EXPECT_FALSE(plain->reference.has_value());
  fs::remove_all(dir);
}

/// The sample with SASS: a stand-in cubin (an ELF header and bytes that
/// include NULs, which the reader and writer must keep).
Bundle sampleWithSass() {
  Bundle b = sampleWithReference();
  b.formatVersion = kBundleSassFormatVersion;
  BundleSass sass;
  sass.arch = "sm_90a";
  sass.ptxFingerprint = ptxFingerprint(b.ptx);
  sass.cubin = std::string("\x7f"
                           "ELF\x02\x01\x01\x00\x00\x33",
                           10);
  b.sass = sass;
  return b;
}

TEST(Bundle, PtxFingerprintAndArchitectures) {
  // 64-bit FNV-1a's published values.
  EXPECT_EQ(ptxFingerprint(""), "cbf29ce484222325");
  EXPECT_EQ(ptxFingerprint("a"), "af63dc4c8601ec8c");
  EXPECT_NE(ptxFingerprint(kPtx), ptxFingerprint(std::string(kPtx) + " "));

  EXPECT_EQ(*sassComputeCapability("sm_90a"), (std::pair<int, int>(9, 0)));
  EXPECT_EQ(*sassComputeCapability("sm_86"), (std::pair<int, int>(8, 6)));
  EXPECT_EQ(*sassComputeCapability("sm_100a"), (std::pair<int, int>(10, 0)));
  for (const char *bad : {"", "sm_", "sm_9", "sm_90b", "compute_90a", "sm_1000",
                          "sm_09", "SM_90", "sm_9x", "a"})
    EXPECT_CONTAINS(sassComputeCapability(bad).message(),
                    "is not a GPU architecture such as sm_90a")
        << "arch: " << bad;

  BundleSass sass;
  sass.arch = "sm_90a"; // arch-specific: that GPU only
  EXPECT_TRUE(sassRunsOn(sass, 9, 0));
  EXPECT_FALSE(sassRunsOn(sass, 9, 1));
  EXPECT_FALSE(sassRunsOn(sass, 10, 0));
  EXPECT_FALSE(sassRunsOn(sass, 8, 0));
  sass.arch = "sm_80"; // the same major, this minor or a later one
  EXPECT_TRUE(sassRunsOn(sass, 8, 0));
  EXPECT_TRUE(sassRunsOn(sass, 8, 6));
  EXPECT_FALSE(sassRunsOn(sass, 9, 0));
  sass.arch = "sm_86";
  EXPECT_FALSE(sassRunsOn(sass, 8, 0));
  sass.arch = "bogus";
  EXPECT_FALSE(sassRunsOn(sass, 9, 0));
}

TEST(Bundle, SassRoundTrip) {
  Bundle b = sampleWithSass();
  ASSERT_TRUE(validateBundle(b).ok()) << validateBundle(b).message();
  fs::path dir = tempDir("sass");
  Status st = writeBundle(dir.string(), b);
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_EQ(fs::file_size(dir / "kernel.cubin"), 10u);
  Expected<Bundle> back = readBundle(dir.string());
  ASSERT_TRUE(back.ok()) << back.message();
  EXPECT_EQ(*back, b);
  ASSERT_TRUE(back->sass.has_value());
  EXPECT_EQ(back->sass->cubin, b.sass->cubin);

  std::string text = writeJson(manifestToJson(b));
  EXPECT_CONTAINS(text, "\"sass\": {");
  EXPECT_CONTAINS(text, "\"cubin\": \"kernel.cubin\"");
  EXPECT_CONTAINS(text, "\"arch\": \"sm_90a\"");
  EXPECT_CONTAINS(text,
                  "\"ptx_fingerprint\": \"" + ptxFingerprint(kPtx) + "\"");
  Expected<Bundle> parsed = parseManifest(text);
  ASSERT_TRUE(parsed.ok()) << parsed.message();
  ASSERT_TRUE(parsed->sass.has_value());
  EXPECT_TRUE(parsed->sass->cubin.empty());
  fs::remove_all(dir);

  // Another file name is kept and used.
  b.sass->cubinFile = "attn_fwd.sm_90a.cubin";
  dir = tempDir("sass_name");
  ASSERT_TRUE(writeBundle(dir.string(), b).ok());
  EXPECT_TRUE(fs::exists(dir / "attn_fwd.sm_90a.cubin"));
  EXPECT_FALSE(fs::exists(dir / "kernel.cubin"));
  back = readBundle(dir.string());
  ASSERT_TRUE(back.ok()) << back.message();
  EXPECT_EQ(*back, b);
  fs::remove_all(dir);
}

TEST(Bundle, MalformedSass) {
  auto sassError = [](auto edit) {
    JsonValue m = manifestToJson(sampleWithSass());
    JsonValue sass = *m.find("sass");
    edit(sass);
    m.set("sass", sass);
    return manifestError(writeJson(m));
  };
  JsonValue old = manifestToJson(sampleWithSass());
  old.set("format_version", 5);
  EXPECT_CONTAINS(manifestError(writeJson(old)),
                  "manifest.json: sass: a kernel assembled ahead of time needs "
                  "format_version 6");
  EXPECT_CONTAINS(
      sassError([](JsonValue &s) { s = JsonValue("kernel.cubin"); }),
      "sass: expected an object, got string");
  for (const char *field : {"cubin", "arch", "ptx_fingerprint"})
    EXPECT_CONTAINS(sassError([&](JsonValue &s) { s = without(s, field); }),
                    std::string("sass: missing required field '") + field +
                        "'");
  EXPECT_CONTAINS(sassError([](JsonValue &s) { s.set("arch", 90); }),
                  "sass.arch: expected a string, got integer");
  EXPECT_CONTAINS(
      sassError([](JsonValue &s) { s.set("arch", "hopper"); }),
      "sass.arch: 'hopper' is not a GPU architecture such as sm_90a");
  EXPECT_CONTAINS(
      sassError([](JsonValue &s) { s.set("ptx_fingerprint", "12ab"); }),
      "sass.ptx_fingerprint: '12ab' is not 16 lower-case hex digits");
  EXPECT_CONTAINS(sassError([](JsonValue &s) {
                    s.set("ptx_fingerprint", "CBF29CE484222325");
                  }),
                  "is not 16 lower-case hex digits");
  EXPECT_CONTAINS(sassError([](JsonValue &s) { s.set("options", "-O3"); }),
                  "sass: unknown field 'options'");
  for (const char *name : {"../kernel.cubin", "sub/kernel.cubin", "kernel.ptx",
                           "manifest.json", "reference.ptx", ".cubin", ""})
    EXPECT_CONTAINS(sassError([&](JsonValue &s) { s.set("cubin", name); }),
                    "is not a plain file name in the bundle directory")
        << "file name: " << name;

  Bundle b = sampleWithSass();
  b.sass->cubin = "not an image";
  EXPECT_CONTAINS(validateBundle(b).message(),
                  "sass: kernel.cubin is not a cubin (no ELF header)");
}

TEST(Bundle, ReaderChecksSassFile) {
  fs::path dir = tempDir("sass_file");
  Bundle b = sampleWithSass();
  b.sass->cubin.clear();
  EXPECT_CONTAINS(writeBundle(dir.string(), b).message(),
                  "refusing to write a bundle whose assembled kernel has no "
                  "cubin");
  EXPECT_FALSE(fs::exists(dir / "manifest.json"));

  ASSERT_TRUE(writeBundle(dir.string(), sampleWithSass()).ok());
  fs::remove(dir / "kernel.cubin");
  Expected<Bundle> missing = readBundle(dir.string());
  ASSERT_FALSE(missing.ok());
  EXPECT_CONTAINS(missing.message(), "sass: cannot read");
  EXPECT_CONTAINS(missing.message(), "kernel.cubin: no such file");

  { std::ofstream empty(dir / "kernel.cubin", std::ios::trunc); }
  EXPECT_CONTAINS(readBundle(dir.string()).message(), "kernel.cubin is empty");

  // kernel.ptx edited after its SASS was assembled.
  ASSERT_TRUE(writeBundle(dir.string(), sampleWithSass()).ok());
  {
    std::ofstream edited(dir / "kernel.ptx", std::ios::app);
    edited << "// edited\n";
  }
  Expected<Bundle> stale = readBundle(dir.string());
  ASSERT_FALSE(stale.ok());
  EXPECT_CONTAINS(stale.message(),
                  "sass: kernel.cubin was assembled from another kernel.ptx "
                  "(fingerprint " +
                      ptxFingerprint(kPtx) + "; kernel.ptx has " +
                      ptxFingerprint(std::string(kPtx) + "// edited\n") +
                      "): assemble it again, or remove it and the manifest's "
                      "'sass'");

  // A kernel.cubin the manifest does not name is ignored.
  fs::remove_all(dir);
  ASSERT_TRUE(writeBundle(dir.string(), sampleWithSass()).ok());
  ASSERT_TRUE(writeBundle(dir.string(), sampleWithReference()).ok());
  EXPECT_TRUE(fs::exists(dir / "kernel.cubin"));
  Expected<Bundle> plain = readBundle(dir.string());
  ASSERT_TRUE(plain.ok()) << plain.message();
  EXPECT_FALSE(plain->sass.has_value());
  fs::remove_all(dir);
}

TEST(Bundle, MutatedManifestsNeverCrash) {
  const std::string plain = writeJson(manifestToJson(sampleBundle()));
  const std::string withReference =
      writeJson(manifestToJson(sampleWithReference()));
  const std::string withSass = writeJson(manifestToJson(sampleWithSass()));
  Rng rng(2024);
  for (int i = 0; i < 6000; ++i) {
    const std::string &good = i % 3 == 0   ? plain
                              : i % 3 == 1 ? withReference
                                           : withSass;
    std::string s = good;
    int edits = 1 + static_cast<int>(rng.next() % 4);
    for (int e = 0; e < edits; ++e) {
      size_t at = rng.next() % s.size();
      switch (rng.next() % 4) {
      case 0:
        s[at] = static_cast<char>(rng.next());
        break;
      case 1:
        s.erase(at, 1 + rng.next() % 16);
        break;
      case 2:
        s.insert(at, 1, "{}[]\",:-019e"[rng.next() % 12]);
        break;
      case 3:
        s.resize(at);
        break;
      }
      if (s.empty())
        s = "{";
    }
    (void)parseManifest(s);
  }
}

} // namespace

/// The sample as a two-kernel bundle (format version 3): a setup launch
/// and the kernel, each taking some of the params.
Bundle sampleWithLaunches() {
  Bundle b = sampleBundle();
  b.formatVersion = 3;
  // The top-level launch fields are unused with launches.
  b.entry.clear();
  b.grid = b.block = b.cluster = Dim3();
  b.sharedMemoryBytes = 0;
  b.ptx += "\n.visible .entry attn_bwd(\n  .param .u64 p0\n)\n{\n  ret;\n}\n";
  BundleLaunch setup;
  setup.entry = "attn_fwd";
  setup.grid = {4, 1, 1};
  setup.block = {128, 1, 1};
  setup.args = {"q", "o"};
  setup.setup = true;
  BundleLaunch kernel;
  kernel.entry = "attn_bwd";
  kernel.grid = {8, 2, 1};
  kernel.block = {256, 1, 1};
  kernel.sharedMemoryBytes = 1024;
  kernel.args = {"o", "seq_len", "q"};
  b.launches = {setup, kernel};
  return b;
}

TEST(Bundle, LaunchesRoundTripAndArgs) {
  Bundle b = sampleWithLaunches();
  Status st = validateBundle(b);
  ASSERT_TRUE(st.ok()) << st.message();
  Expected<Bundle> parsed = parseManifest(writeJson(manifestToJson(b)));
  ASSERT_TRUE(parsed.ok()) << parsed.message();
  parsed->ptx = b.ptx;
  EXPECT_EQ(*parsed, b);
  EXPECT_EQ(launchesOf(b), b.launches);

  // A launch that overlaps the next one (a third launch to overlap).
  Bundle overlapping = b;
  overlapping.formatVersion = kBundleOverlapFormatVersion;
  BundleLaunch next = overlapping.launches[1];
  overlapping.launches[1].overlapsNext = true;
  overlapping.launches.push_back(next);
  st = validateBundle(overlapping);
  ASSERT_TRUE(st.ok()) << st.message();
  std::string text = writeJson(manifestToJson(overlapping));
  EXPECT_CONTAINS(text, "\"overlaps_next\": true");
  Expected<Bundle> reparsed = parseManifest(text);
  ASSERT_TRUE(reparsed.ok()) << reparsed.message();
  reparsed->ptx = overlapping.ptx;
  EXPECT_EQ(*reparsed, overlapping);
  EXPECT_TRUE(reparsed->launches[1].overlapsNext);
  EXPECT_FALSE(reparsed->launches[2].overlapsNext);
  reparsed->launches[1].overlapsNext = false;
  EXPECT_NE(*reparsed, overlapping);

  // Each launch gets its own arguments, in its order.
  std::map<std::string, CUdeviceptr> addrs = {
      {"q", 0x10000}, {"o", 0x20000}, {"img", 0x30000}};
  Expected<KernelArgs> args = buildKernelArgs(b, b.launches[1], addrs, nullptr);
  ASSERT_TRUE(args.ok()) << args.message();
  auto e = args->entries();
  ASSERT_EQ(e.size(), 3u);
  CUdeviceptr p;
  std::memcpy(&p, e[0].first, 8);
  EXPECT_EQ(p, 0x20000u);
  int32_t seq;
  std::memcpy(&seq, e[1].first, 4);
  EXPECT_EQ(seq, 1024);
  std::memcpy(&p, e[2].first, 8);
  EXPECT_EQ(p, 0x10000u);
  LaunchConfig lc = launchConfigFor(b.launches[1]);
  EXPECT_EQ(lc.grid, (Dim3{8, 2, 1}));
  EXPECT_EQ(lc.dynamicSharedMemoryBytes, 1024u);

  // A single-kernel bundle is one launch of every kernel argument.
  std::vector<BundleLaunch> single = launchesOf(sampleBundle());
  ASSERT_EQ(single.size(), 1u);
  EXPECT_EQ(single[0].entry, "attn_fwd");
  EXPECT_EQ(single[0].args,
            (std::vector<std::string>{"q", "o", "scale", "seq_len",
                                      "half_scale", "q_tma", "img_tma"}));
}

TEST(Bundle, MalformedLaunches) {
  auto invalid = [](auto edit) {
    Bundle b = sampleWithLaunches();
    edit(b);
    Status st = validateBundle(b);
    EXPECT_FALSE(st.ok());
    return st.message();
  };
  EXPECT_EQ(invalid([](Bundle &b) { b.formatVersion = 2; }),
            "launches: several kernels per bundle need format_version 3");
  EXPECT_EQ(invalid([](Bundle &b) { b.entry = "attn_fwd"; }),
            "entry: a bundle with launches has no top-level entry (each "
            "launch names its own)");
  EXPECT_EQ(invalid([](Bundle &b) { b.launches[1].entry = "9x"; }),
            "launches[1].entry: '9x' is not a valid PTX identifier");
  EXPECT_CONTAINS(invalid([](Bundle &b) { b.launches[0].block = {2048, 1, 1}; }),
                  "launches[0] ('attn_fwd'): block (2048, 1, 1)");
  EXPECT_EQ(invalid([](Bundle &b) { b.launches[1].args.push_back("dq"); }),
            "launches[1].args[3]: 'dq' is not a param of this bundle");
  EXPECT_EQ(invalid([](Bundle &b) { b.launches[0].args.push_back("img"); }),
            "launches[0].args[2]: 'img' is a buffer with kernel_arg false");
  EXPECT_EQ(invalid([](Bundle &b) {
              b.launches[0].setup = false;
              b.launches[1].setup = true;
            }),
            "launches[1].setup: setup launches come first (they run once "
            "before the others)");
  EXPECT_EQ(invalid([](Bundle &b) { b.launches[1].setup = true; }),
            "launches: every launch is a setup launch; at least one must be "
            "the kernel itself");
  EXPECT_EQ(invalid([](Bundle &b) {
              b.launches.push_back(b.launches[1]);
              b.launches[1].overlapsNext = true;
            }),
            "launches[1].overlaps_next: needs format_version 4");
  EXPECT_EQ(invalid([](Bundle &b) {
              b.formatVersion = 4;
              b.launches[1].overlapsNext = true;
            }),
            "launches[1].overlaps_next: the last launch has no next launch "
            "to overlap");
  EXPECT_EQ(invalid([](Bundle &b) {
              b.formatVersion = 4;
              b.launches[0].overlapsNext = true;
            }),
            "launches[0].overlaps_next: a setup launch runs alone, before the "
            "others");
  EXPECT_EQ(invalid([](Bundle &b) {
              b.formatVersion = 4;
              b.launches.push_back(b.launches[1]);
              b.launches.push_back(b.launches[1]);
              b.launches[1].overlapsNext = true;
              b.launches[2].overlapsNext = true;
            }),
            "launches[1].overlaps_next: launches[2] overlaps its next launch "
            "too; only two launches run together");
  EXPECT_EQ(invalid([](Bundle &b) { b.grid = {2, 1, 1}; }),
            "grid, block, cluster, shared_memory_bytes: a bundle with "
            "launches has no top-level launch shape (each launch has its own)");
  EXPECT_EQ(invalid([](Bundle &b) { b.launches[1].entry = "attn_dq"; }),
            "kernel.ptx declares no '.entry attn_dq' (a launch's entry)");

  // The manifest: launches replace the top-level launch fields.
  JsonValue good = manifestToJson(sampleWithLaunches());
  auto edited = [&](auto edit) {
    JsonValue m = good;
    edit(m);
    return manifestError(writeJson(m));
  };
  EXPECT_EQ(edited([](JsonValue &m) { m.set("grid", JsonValue::array()); }),
            "manifest.json: grid: not allowed next to 'launches' (each launch has its own)");
  EXPECT_EQ(edited([](JsonValue &m) { m.set("launches", JsonValue::array()); }),
            "manifest.json: launches: is empty; a bundle with launches needs "
            "at least one");
  EXPECT_EQ(edited([](JsonValue &m) { m.set("launches", JsonValue(1)); }),
            "manifest.json: launches: expected an array of launch objects, "
            "got integer");
  EXPECT_EQ(edited([](JsonValue &m) { m.set("format_version", 2); }),
            "manifest.json: launches: several kernels per bundle need format_version 3");
  EXPECT_EQ(edited([](JsonValue &m) {
              JsonValue launches = JsonValue::array();
              launches.push(JsonValue(3));
              m.set("launches", launches);
            }),
            "manifest.json: launches[0]: expected an object, got integer");
  EXPECT_EQ(edited([](JsonValue &m) {
              JsonValue launch = m.find("launches")->asArray()[0];
              launch.set("setup", 1);
              JsonValue launches = JsonValue::array();
              launches.push(launch);
              m.set("launches", launches);
            }),
            "manifest.json: launches[0].setup: expected a boolean, got integer");
  EXPECT_EQ(edited([](JsonValue &m) {
              JsonValue launch = m.find("launches")->asArray()[0];
              launch.set("overlaps_next", "yes");
              JsonValue launches = JsonValue::array();
              launches.push(launch);
              m.set("launches", launches);
            }),
            "manifest.json: launches[0].overlaps_next: expected a boolean, got "
            "string");
  EXPECT_EQ(edited([](JsonValue &m) {
              JsonValue launch = without(m.find("launches")->asArray()[0], "args");
              JsonValue launches = JsonValue::array();
              launches.push(launch);
              m.set("launches", launches);
            }),
            "manifest.json: launches[0]: missing required field 'args'");
}

/// A shape-generic copy (format version 5): `in` is a dense [rows, 64]
/// tensor of run-time rows read through a tensor map, `out` a strided view
/// of run-time rows and row stride.
Bundle descriptorBundle() {
  Bundle b;
  b.formatVersion = kBundleDescriptorFormatVersion;
  b.kernel = "tma-copy";
  b.entry = "attn_fwd";
  b.grid = {4, 1, 1};
  b.block = {128, 1, 1};
  b.params.push_back(
      bufferParam("in", DType::BF16, {256, 64}, BufferRole::Input));
  b.params.back().descriptor = true;
  b.params.back().dynamicDims = {0};
  b.params.push_back(
      bufferParam("out", DType::BF16, {256, 64}, BufferRole::Output));
  b.params.back().descriptor = true;
  b.params.back().dynamicDims = {0};
  b.params.back().strides = {192, 1};
  BundleParam map;
  map.name = "in_map0";
  map.kind = ParamKind::TensorMap;
  map.dtype = DType::BF16;
  map.buffer = "in";
  map.tensorMap = makeRowMajorTiledSpec(DType::BF16, {256, 64}, {64, 64},
                                        TensorMapSwizzle::None);
  b.params.push_back(map);
  b.ptx = kPtx;
  return b;
}

TEST(Bundle, DescriptorBuffersRoundTrip) {
  Bundle b = descriptorBundle();
  ASSERT_TRUE(validateBundle(b).ok()) << validateBundle(b).message();
  std::string text = writeJson(manifestToJson(b));
  EXPECT_CONTAINS(text, "\"descriptor\"");
  EXPECT_CONTAINS(text, "\"dynamic_dims\"");
  Expected<Bundle> parsed = parseManifest(text);
  ASSERT_TRUE(parsed.ok()) << parsed.message();
  parsed->ptx = b.ptx;
  EXPECT_EQ(*parsed, b);
  // A strided view spans from its first to its last element.
  EXPECT_EQ(bufferBytes(b.params[1]), (255u * 192 + 64) * 2);
  EXPECT_EQ(bufferStrides(b.params[0]), (std::vector<uint64_t>{64, 1}));
}

TEST(Bundle, MalformedDescriptorBuffers) {
  auto error = [](auto edit) {
    Bundle b = descriptorBundle();
    edit(b);
    Status st = validateBundle(b);
    EXPECT_FALSE(st.ok());
    return st.message();
  };
  EXPECT_CONTAINS(error([](Bundle &b) { b.formatVersion = 4; }),
                  "descriptor: needs format_version 5");
  EXPECT_CONTAINS(error([](Bundle &b) {
                    b.params[0].descriptor = b.params[1].descriptor = false;
                  }),
                  "dynamic_dims and strides need \"descriptor\": true");
  EXPECT_CONTAINS(error([](Bundle &b) { b.params[0].dynamicDims = {2}; }),
                  "dynamic_dims[0] is 2; the shape has 2 dimensions");
  EXPECT_CONTAINS(error([](Bundle &b) {
                    b.params[0].dynamicDims = {1, 0};
                  }),
                  "dynamic_dims must be ascending, without repeats");
  EXPECT_CONTAINS(error([](Bundle &b) { b.params[1].strides = {192}; }),
                  "strides has 1 entries for 2 dimensions");
  EXPECT_CONTAINS(error([](Bundle &b) {
                    b.params[1].strides = {192, 2};
                  }),
                  "the innermost stride is 2; it must be 1");
  EXPECT_CONTAINS(error([](Bundle &b) {
                    b.params[1].strides = {196, 1};
                  }),
                  "stride 196 of dimension 0 is not a multiple of 16 bytes (8 "
                  "bf16 elements; the kernels take rows 16-byte aligned)");
  EXPECT_CONTAINS(error([](Bundle &b) { b.params[0].kernelArg = false; }),
                  "descriptor: a buffer with kernel_arg false is no argument");
  EXPECT_CONTAINS(error([](Bundle &b) {
                    b.params[1].descriptor = false;
                    b.params[1].dynamicDims.clear();
                    b.params[1].strides.clear();
                  }),
                  "params: buffer 'in' is passed as a descriptor and buffer "
                  "'out' as a pointer; a kernel takes all its buffers one way");
  // A map before its descriptor buffer, whose shape is empty: an error, no
  // out-of-bounds read.
  EXPECT_CONTAINS(error([](Bundle &b) {
                    std::swap(b.params[0], b.params[2]);
                    b.params[2].shape.clear();
                    b.params[2].dynamicDims.clear();
                  }),
                  "tensor map over descriptor buffer 'in' must have its sizes");
  EXPECT_CONTAINS(error([](Bundle &b) {
                    b.params[2].tensorMap.globalDims = {64, 128};
                  }),
                  "tensor map over descriptor buffer 'in' must have its sizes "
                  "and strides");
  // The manifest reader: fields of the right types only.
  std::string text = writeJson(manifestToJson(descriptorBundle()));
  std::string wrong = text;
  wrong.replace(wrong.find("\"dynamic_dims\": [0]"), 19,
                "\"dynamic_dims\": [8]");
  EXPECT_CONTAINS(manifestError(wrong),
                  "dynamic_dims[0]: value 8 is out of range [0, 7]");
}

TEST(Bundle, DescriptorKernelArgs) {
  Bundle b = descriptorBundle();
  b.params.resize(2); // The map needs the driver to encode.
  Expected<KernelArgs> args =
      buildKernelArgs(b, {{"in", 0x10000}, {"out", 0x20000}}, nullptr);
  ASSERT_TRUE(args.ok()) << args.message();
  auto e = args->entries();
  // Per rank-2 descriptor: two pointers, the offset, two sizes, two strides.
  ASSERT_EQ(e.size(), 14u);
  auto word = [&](size_t i) {
    EXPECT_EQ(e[i].second, 8u) << "argument " << i;
    uint64_t v;
    std::memcpy(&v, e[i].first, 8);
    return v;
  };
  std::vector<uint64_t> expected = {0x10000, 0x10000, 0, 256, 64, 64,  1,
                                    0x20000, 0x20000, 0, 256, 64, 192, 1};
  for (size_t i = 0; i < expected.size(); ++i)
    EXPECT_EQ(word(i), expected[i]) << "argument " << i;
}

TEST(Bundle, WithTensorShapes) {
  Bundle b = descriptorBundle();
  Expected<Bundle> shaped = withTensorShapes(
      b, {{"in", {{1000, 64}, {}}}, {"out", {{1000, 64}, {320, 1}}}});
  ASSERT_TRUE(shaped.ok()) << shaped.message();
  EXPECT_EQ(shaped->params[0].shape, (std::vector<uint64_t>{1000, 64}));
  EXPECT_EQ(shaped->params[1].strides, (std::vector<uint64_t>{320, 1}));
  // The map over `in` follows its rows (innermost first), the box stays.
  EXPECT_EQ(shaped->params[2].tensorMap.globalDims,
            (std::vector<uint64_t>{64, 1000}));
  EXPECT_EQ(shaped->params[2].tensorMap.globalStridesBytes,
            (std::vector<uint64_t>{128}));
  EXPECT_EQ(shaped->params[2].tensorMap.boxDims, b.params[2].tensorMap.boxDims);
  // A strided view given no strides is dense.
  Expected<Bundle> dense = withTensorShapes(b, {{"out", {{3, 64}, {}}}});
  ASSERT_TRUE(dense.ok()) << dense.message();
  EXPECT_EQ(dense->params[1].strides, (std::vector<uint64_t>{64, 1}));

  auto error = [&](std::map<std::string, TensorShape> shapes) {
    Bundle pointers = b;
    Expected<Bundle> result = withTensorShapes(b, shapes);
    EXPECT_FALSE(result.ok());
    return result.ok() ? std::string() : result.message();
  };
  EXPECT_CONTAINS(error({{"k", {{1, 64}, {}}}}),
                  "tensor 'k': the kernel has no buffer of that name");
  EXPECT_CONTAINS(error({{"in", {{1000}, {}}}}),
                  "tensor 'in': has 1 dimensions; the kernel takes 2");
  EXPECT_CONTAINS(
      error({{"in", {{1000, 128}, {}}}}),
      "tensor 'in': dimension 1 is 128; the kernel was compiled for 64");
  EXPECT_CONTAINS(
      error({{"in", {{0, 64}, {}}}}),
      "tensor 'in': dimension 0 is 0; the kernel needs at least one element");
  EXPECT_CONTAINS(error({{"in", {{1000, 64}, {128, 1}}}}),
                  "tensor 'in': strides [128, 1] are not row-major; the kernel "
                  "takes a dense tensor (row-major strides [64, 1])");
  EXPECT_CONTAINS(error({{"out", {{1000, 64}, {128, 2}}}}),
                  "tensor 'out': innermost stride is 2; the kernel needs 1");
  EXPECT_CONTAINS(error({{"out", {{1000, 64}, {128}}}}),
                  "tensor 'out': has 1 strides for 2 dimensions");
  EXPECT_CONTAINS(error({{"out", {{uint64_t(1) << 42, 64}, {}}}}),
                  "tensor 'out': spans more than 2^48 bytes");
  // Strided views take rows 16 bytes apart (TMA, paired stores), where
  // there is more than one row.
  EXPECT_CONTAINS(error({{"out", {{10, 64}, {65, 1}}}}),
                  "tensor 'out': stride 65 of dimension 0 is not a multiple of "
                  "16 bytes");
  EXPECT_TRUE(withTensorShapes(b, {{"out", {{1, 64}, {65, 1}}}}).ok());
  // A buffer passed as a pointer has the shape it was compiled for.
  Bundle fixed = sampleBundle();
  Expected<Bundle> refused =
      withTensorShapes(fixed, {{"q", {{1, 2, 512, 128}, {}}}});
  ASSERT_FALSE(refused.ok());
  EXPECT_CONTAINS(refused.message(), "tensor 'q': the kernel was compiled for "
                                     "shape [1, 2, 1024, 128] only");
}
