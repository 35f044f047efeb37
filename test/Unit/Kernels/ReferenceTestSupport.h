//===- ReferenceTestSupport.h - Shared pieces of the reference tests -*- C++ -*-===//
//
// What the forward's and the backward's reference-kernel tests both need:
// a context with the kernel dialects, attention configs, and a substring
// counter for PTX text.
//
//===----------------------------------------------------------------------===//

#ifndef SINKATTN_TEST_UNIT_KERNELS_REFERENCETESTSUPPORT_H
#define SINKATTN_TEST_UNIT_KERNELS_REFERENCETESTSUPPORT_H

#include "SinkAttn/Kernels/Kernels.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

namespace sinkattn::test {

/// A fixture whose context has every dialect the kernels use.
class KernelContextTest : public ::testing::Test {
protected:
  KernelContextTest() {
    mlir::DialectRegistry registry;
    registerKernelDialects(registry);
    context.appendDialectRegistry(registry);
    context.loadAllAvailableDialects();
  }
  mlir::MLIRContext context;
};

/// An attention config (BHSD unless changed).
inline KernelConfig configOf(int64_t batch, int64_t heads, int64_t kvHeads,
                             int64_t seqQ, int64_t seqKv, int64_t headDim,
                             int64_t window,
                             rt::DType dtype = rt::DType::BF16) {
  KernelConfig config;
  config.kernel = "sink-fwd";
  config.batch = batch;
  config.heads = heads;
  config.kvHeads = kvHeads;
  config.seqQ = seqQ;
  config.seqKv = seqKv;
  config.headDim = headDim;
  config.window = window;
  config.dtype = dtype;
  return config;
}

/// A varlen config of sequences with these lengths.
inline KernelConfig varlenConfigOf(int64_t heads, int64_t kvHeads,
                                   std::vector<int64_t> seqlensQ,
                                   std::vector<int64_t> seqlensKv,
                                   int64_t headDim, int64_t window) {
  KernelConfig config = configOf(
      int64_t(seqlensQ.size()), heads, kvHeads,
      *std::max_element(seqlensQ.begin(), seqlensQ.end()),
      *std::max_element(seqlensKv.begin(), seqlensKv.end()), headDim, window);
  config.layout = rt::AttentionLayout::Varlen;
  config.seqlensQ = std::move(seqlensQ);
  config.seqlensKv = std::move(seqlensKv);
  return config;
}

/// Occurrences of `needle` in `text`.
inline size_t count(const std::string &text, const std::string &needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos;
       at = text.find(needle, at + 1))
    ++n;
  return n;
}

} // namespace sinkattn::test

#endif // SINKATTN_TEST_UNIT_KERNELS_REFERENCETESTSUPPORT_H
