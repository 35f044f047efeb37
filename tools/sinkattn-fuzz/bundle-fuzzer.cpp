//===- bundle-fuzzer.cpp - Fuzz the runner's bundle and flag readers ------===//
//
// libFuzzer target for what sinkattn-runner reads from outside: any bytes
// as a bundle manifest and as a .npy file, and the same bytes split at
// whitespace as a command line (shape flags included). Errors are fine;
// crashes, sanitizer reports and hangs are bugs. Seed corpus:
// test/Fuzz/corpus/bundle (manifests of the GPU test bundles, command lines).
//
//===----------------------------------------------------------------------===//

#include "../sinkattn-runner/Options.h"

#include "SinkAttn/Runtime/Bundle.h"
#include "SinkAttn/Runtime/Npy.h"

#include <cstddef>
#include <map>
#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string_view bytes(reinterpret_cast<const char *>(data), size);

  auto bundle = sinkattn::rt::parseManifest(bytes);
  if (bundle.ok()) {
    // A manifest that parses must survive what the runner does with it.
    (void)sinkattn::rt::manifestToJson(*bundle);
    (void)sinkattn::rt::validateBundle(*bundle);
    (void)sinkattn::rt::launchConfigFor(*bundle);
    // What the runner does per launch: its shape and its arguments (buffers
    // at made-up addresses; tensor maps fail without a driver).
    std::map<std::string, CUdeviceptr> addresses;
    for (const sinkattn::rt::BundleParam &param : bundle->params)
      addresses[param.name] = 0x10000;
    for (const sinkattn::rt::BundleLaunch &launch :
         sinkattn::rt::launchesOf(*bundle)) {
      (void)sinkattn::rt::launchConfigFor(launch);
      (void)sinkattn::rt::buildKernelArgs(*bundle, launch, addresses, nullptr);
    }
  }
  (void)sinkattn::rt::decodeNpy(bytes);

  std::vector<std::string> words = {"sinkattn-runner"};
  std::istringstream stream{std::string(bytes)};
  for (std::string word; stream >> word && words.size() < 64;)
    words.push_back(word);
  std::vector<char *> argv;
  for (std::string &word : words)
    argv.push_back(word.data());
  argv.push_back(nullptr);
  (void)sinkattn::runner::parseOptions(int(words.size()), argv.data(),
                                       /*hasCompiler=*/true);
  return 0;
}
