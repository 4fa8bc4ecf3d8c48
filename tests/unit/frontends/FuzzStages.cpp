// Compiled with -fno-exceptions -fno-rtti (see CMakeLists.txt), like the MLIR libraries it calls:
// the frontend stages that tests/fuzz/FuzzOnnxImport.cpp runs on every input, for
// OnnxLoaderFuzzRegressions (OnnxLoaderTest.cpp). The interface holds only std types, so the
// exception-enabled test file never sees an MLIR type.
#include "compiler/pipeline/Pipeline.h"
#include "frontends/onnx/OnnxImporter.h"
#include "frontends/onnx/OnnxLoader.h"
#include "passes/Passes.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Pass/PassManager.h"

#include <string>

#if defined(__cpp_exceptions) || defined(__EXCEPTIONS)
#error "FuzzStages.cpp must be compiled with -fno-exceptions"
#endif

namespace disagmoe_test {

// The fuzzer's sequence, stage by stage (same options as FuzzOnnxImport.cpp): returns "ok" or the
// stage that refused the input ("load", "import", "verify", "raise"), with its first error in
// `error` (the loader's or importer's message, or the first error diagnostic).
std::string runFuzzerStages(const std::string &path, std::string &error) {
  error.clear();
  disagmoe::onnxfe::LoadOptions options;
  options.inputShapeOverride = {2, 8};
  disagmoe::onnxfe::Graph graph;
  disagmoe::onnxfe::LoadResult loaded = disagmoe::onnxfe::loadOnnxModel(path, options, graph);
  if (!loaded.ok) {
    error = loaded.error;
    return "load";
  }
  mlir::MLIRContext context(mlir::MLIRContext::Threading::DISABLED);
  mlir::ScopedDiagnosticHandler collect(&context, [&](mlir::Diagnostic &d) {
    if (d.getSeverity() == mlir::DiagnosticSeverity::Error && error.empty())
      error = d.str();
    return mlir::success();
  });
  auto imported = disagmoe::onnxfe::importOnnxGraph(context, graph);
  if (!imported) {
    error = llvm::toString(imported.takeError());
    return "import";
  }
  mlir::OwningOpRef<mlir::ModuleOp> module = std::move(*imported);
  if (mlir::failed(mlir::verify(*module)))
    return "verify";
  mlir::PassManager pm(&context);
  pm.addPass(disagmoe::createNormalizeOnnx());
  pm.addPass(disagmoe::createFoldOnnxConstants());
  pm.addPass(disagmoe::createRaiseOnnxToMoe());
  if (mlir::failed(pm.run(*module)))
    return "raise";
  return "ok";
}

// `disagmoe compile`'s pipeline (compileOnnx: load, import, verify) up to and including the raise
// stage: true, or false with the error it would print.
bool compileUpToRaise(const std::string &path, std::string &error) {
  error.clear();
  mlir::MLIRContext context(mlir::MLIRContext::Threading::DISABLED);
  context.printOpOnDiagnostic(false);
  disagmoe::CompileOptions options;
  options.stopAfter = "raise";
  auto module = disagmoe::compileOnnx(context, path, options, llvm::nulls());
  if (module)
    return true;
  error = llvm::toString(module.takeError());
  return false;
}

} // namespace disagmoe_test
