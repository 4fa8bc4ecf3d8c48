//===- FuzzOnnxImport.cpp - libFuzzer target: loader, importer and raise -===//
//
// Feeds arbitrary bytes through the whole frontend as `disagmoe compile` would: the libonnx loader
// (parse, checks, static shape inference, offsets), the MLIR importer, the verifier and the raising
// pass. Any crash, hang, sanitizer report or uncaught exception is a bug; errors returned as values
// are the expected outcome for almost every input.
//
// Build: cmake -DDISAGMOE_BUILD_FUZZERS=ON with clang (see tests/fuzz/README.md).
//
//===----------------------------------------------------------------------===//
#include "frontends/onnx/OnnxImporter.h"
#include "frontends/onnx/OnnxLoader.h"
#include "passes/Passes.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Pass/PassManager.h"

#include <cstdio>
#include <string>
#include <unistd.h>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  // The loader reads a file (it memory-maps it), so the input goes through one.
  static const std::string path = "/tmp/disagmoe-fuzz-" + std::to_string(::getpid()) + ".onnx";
  FILE *f = std::fopen(path.c_str(), "wb");
  if (!f)
    return 0;
  std::fwrite(data, 1, size, f);
  std::fclose(f);

  disagmoe::onnxfe::LoadOptions options;
  options.inputShapeOverride = {2, 8};
  disagmoe::onnxfe::Graph graph;
  if (!disagmoe::onnxfe::loadOnnxModel(path, options, graph).ok)
    return 0;
  mlir::MLIRContext context(mlir::MLIRContext::Threading::DISABLED);
  mlir::ScopedDiagnosticHandler quiet(&context, [](mlir::Diagnostic &) { return mlir::success(); });
  auto imported = disagmoe::onnxfe::importOnnxGraph(context, graph);
  if (!imported) {
    llvm::consumeError(imported.takeError());
    return 0;
  }
  mlir::OwningOpRef<mlir::ModuleOp> module = std::move(*imported);
  if (mlir::failed(mlir::verify(*module)))
    return 0;
  mlir::PassManager pm(&context);
  pm.addPass(disagmoe::createNormalizeOnnx());
  pm.addPass(disagmoe::createFoldOnnxConstants());
  pm.addPass(disagmoe::createRaiseOnnxToMoe());
  (void)pm.run(*module);
  return 0;
}
