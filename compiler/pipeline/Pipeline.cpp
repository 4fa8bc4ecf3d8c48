//===- Pipeline.cpp - the disagmoe compile pipeline -----------------------===//
#include "compiler/pipeline/Pipeline.h"

#include "frontends/onnx/OnnxImporter.h"
#include "frontends/onnx/OnnxLoader.h"
#include "passes/Passes.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Pass/PassManager.h"

namespace disagmoe {
using namespace mlir;

const std::vector<std::string> &stageNames() {
  static const std::vector<std::string> names = {"import",   "raise",    "partition",
                                                 "groups",   "exchange", "placement",
                                                 "volume"};
  return names;
}

namespace {
/// Pass argument of each stage after "import".
std::string passArgument(const std::string &stage) {
  if (stage == "raise") return "raise-onnx-to-moe";
  if (stage == "partition") return "partition-components";
  if (stage == "groups") return "assign-groups";
  if (stage == "exchange") return "fuse-exchange";
  if (stage == "placement") return "place-groups";
  if (stage == "volume") return "exchange-volume";
  return stage;
}

bool wantsStage(const CompileOptions &o, const std::string &stage) {
  if (o.printIrAfterAll)
    return true;
  for (const std::string &s : o.printIrAfter)
    if (s == stage || passArgument(s) == passArgument(stage))
      return true;
  return false;
}

/// Collects diagnostics as one line each: "<message>" (the message names the node).
struct DiagnosticCollector {
  std::string first;
  std::vector<std::string> all;
  void operator()(Diagnostic &diag) {
    if (diag.getSeverity() != DiagnosticSeverity::Error)
      return;
    std::string text = diag.str();
    all.push_back(text);
    if (first.empty())
      first = text;
  }
};
} // namespace

OwningOpRef<ModuleOp> compileOnnx(MLIRContext &context, const std::string &path,
                                  const CompileOptions &options, llvm::raw_ostream &irOut,
                                  std::string &error) {
  for (const std::string &s : options.printIrAfter) {
    bool known = false;
    for (const std::string &stage : stageNames())
      known |= s == stage || s == passArgument(stage);
    if (!known) {
      error = "--print-ir-after: unknown stage '" + s +
              "' (expected import, raise, partition, groups, exchange, placement or volume)";
      return nullptr;
    }
  }
  if (options.batch < 1 || options.seqLen < 1) {
    error = "--batch and --seq-len must be at least 1";
    return nullptr;
  }

  onnxfe::LoadOptions load;
  load.inputShapeOverride = {options.batch, options.seqLen};
  onnxfe::Graph graph;
  onnxfe::LoadResult loaded = onnxfe::loadOnnxModel(path, load, graph);
  if (!loaded.ok) {
    error = loaded.error;
    return nullptr;
  }
  context.loadDialect<onnxir::OnnxDialect, moe::MoeDialect, func::FuncDialect,
                      arith::ArithDialect>();
  OwningOpRef<ModuleOp> module = onnxfe::importOnnxGraph(context, graph, error);
  if (!module)
    return nullptr;
  if (wantsStage(options, "import"))
    {
    irOut << "// -----// IR after import //----- //\n";
    module->print(irOut, OpPrintingFlags().elideLargeElementsAttrs(8));
    irOut << "\n";
  }

  DiagnosticCollector diags;
  ScopedDiagnosticHandler handler(&context, [&](Diagnostic &d) {
    diags(d);
    return success();
  });
  if (failed(mlir::verify(*module))) {
    error = path + ": imported IR does not verify: " + diags.first;
    return nullptr;
  }

  PassManager pm(&context);
  pm.addPass(createRaiseOnnxToMoe());
  pm.addPass(createPartitionComponents());
  pm.addPass(createAssignGroups(AssignGroupsOptions{options.groups}));
  pm.addPass(createFuseExchange());
  pm.addPass(createPlaceGroups(PlaceGroupsOptions{options.attnRanks, options.ffnRanks}));
  pm.addPass(createExchangeVolume());
  pm.enableIRPrinting(
      /*shouldPrintBeforePass=*/[](Pass *, Operation *) { return false; },
      /*shouldPrintAfterPass=*/
      [&](Pass *pass, Operation *) {
        for (const std::string &stage : stageNames())
          if (passArgument(stage) == pass->getArgument() && wantsStage(options, stage))
            return true;
        return false;
      },
      /*printModuleScope=*/true, /*printAfterOnlyOnChange=*/false,
      /*printAfterOnlyOnFailure=*/false, irOut,
      OpPrintingFlags().elideLargeElementsAttrs(8));
  if (failed(pm.run(*module))) {
    error = path + ": ";
    for (size_t i = 0; i < diags.all.size(); ++i)
      error += (i ? "\n" + path + ": " : "") + diags.all[i];
    if (diags.all.empty())
      error += "compilation failed";
    return nullptr;
  }
  return module;
}

} // namespace disagmoe
