//===- disagmoe-opt.cpp - run disagmoe passes on .mlir files --------------===//
#include "passes/CompilePipeline.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"
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
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "disagmoe optimizer driver\n", registry));
}
