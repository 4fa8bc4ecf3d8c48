//===- disagmoe-opt.cpp - run disagmoe passes on .mlir files --------------===//
//
// With DISAGMOE_PARSE_ONLY=1 (runtime/tools/ParseOnly.h) the flags are parsed and the pass
// pipeline is built from them (so a pass option such as --assign-groups="p=2" is checked), then it
// exits 0 without reading the input; an error exits 1 as without it.
//
//===----------------------------------------------------------------------===//
#include "passes/CompilePipeline.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"
#include "runtime/tools/ParseOnly.h"
#include "runtime/version/Version.h"
#include "llvm/Support/CommandLine.h"

int main(int argc, char **argv) {
  // --version: the product's version and commit instead of LLVM's.
  llvm::cl::SetVersionPrinter(
      [](llvm::raw_ostream &os) { os << disagmoe::versionLine("disagmoe-opt") << "\n"; });
  mlir::DialectRegistry registry;
  registry.insert<disagmoe::onnxir::OnnxDialect, disagmoe::moe::MoeDialect,
                  disagmoe::afpipe::AfpipeDialect, mlir::func::FuncDialect,
                  mlir::arith::ArithDialect>();
  disagmoe::registerDisagmoePasses();
  disagmoe::registerCompilePipeline(); // the pipeline `disagmoe compile` runs
  mlir::registerCanonicalizerPass();
  mlir::registerCSEPass();
  if (disagmoe::tools::parseOnly()) {
    // MlirOptMain would open the input next; stop after the flags and the pipeline they name.
    mlir::registerAndParseCLIOptions(argc, argv, "disagmoe optimizer driver\n", registry);
    mlir::MLIRContext context(registry);
    mlir::PassManager pm(&context, mlir::ModuleOp::getOperationName(),
                         mlir::OpPassManager::Nesting::Implicit);
    return mlir::failed(mlir::MlirOptMainConfig::createFromCLOptions().setupPassPipeline(pm)) ? 1
                                                                                              : 0;
  }
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "disagmoe optimizer driver\n", registry));
}
