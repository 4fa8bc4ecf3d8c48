//===- NormalizeOnnx.cpp - the normalize-onnx pass ------------------------===//
//
// The first stage of raising (normalize -> fold -> match): applies the patterns of
// NormalizePatterns.h greedily to the imported `onnx.node` graph, so that raise-onnx-to-moe sees
// one form of each computation whatever the exporter's spelling.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"
#include "passes/raise/normalize/NormalizePatterns.h"

namespace disagmoe {
#define GEN_PASS_DEF_NORMALIZEONNX
#include "passes/Passes.h.inc"

namespace {
using namespace mlir;

struct NormalizeOnnxPass : impl::NormalizeOnnxBase<NormalizeOnnxPass> {
  void runOnOperation() override {
    if (failed(normalize::applyNormalizeOnnxPatterns(getOperation()))) {
      getOperation().emitError("normalize-onnx: the rewrites did not converge");
      signalPassFailure();
    }
  }
};

} // namespace
} // namespace disagmoe
