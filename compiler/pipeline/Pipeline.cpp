//===- Pipeline.cpp - the disagmoe compile pipeline -----------------------===//
#include "compiler/pipeline/Pipeline.h"

#include "compiler/pipeline/ExternalData.h"
#include "compiler/pipeline/InputBinding.h"
#include "compiler/pipeline/WeightDtypes.h"

#include "frontends/onnx/OnnxImporter.h"
#include "frontends/onnx/OnnxLoader.h"
#include "passes/CompilePipeline.h"
#include "passes/schedule/ModuleSchedule.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Pass/PassManager.h"

#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <chrono>
#include <functional>

namespace disagmoe {
using namespace mlir;

namespace {
/// `--print-ir-after` asked for `stage` (a short name or pass argument; see compileStages()).
bool wantsStage(const CompileOptions &o, llvm::StringRef stage) {
  if (o.printIrAfterAll)
    return true;
  for (const std::string &s : o.printIrAfter)
    if (s == stage ||
        (findCompileStage(s) != nullptr && findCompileStage(s) == findCompileStage(stage)))
      return true;
  return false;
}

llvm::Error fail(const std::string &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
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

llvm::Expected<OwningOpRef<ModuleOp>> compileOnnx(MLIRContext &context, const std::string &path,
                                                  const CompileOptions &options,
                                                  llvm::raw_ostream &irOut,
                                                  std::vector<std::string> *notes) {
  // The pass pipeline and its option checks are the registered one's (passes/CompilePipeline.h);
  // they run before the model is loaded, so a bad flag costs no load.
  CompilePipelineOptions pipeline;
  pipeline.stopAfter = options.stopAfter;
  pipeline.groups = options.groups;
  pipeline.denseSide = options.denseSide;
  pipeline.sharedExpertsSide = options.sharedExpertsSide;
  pipeline.embeddingSide = options.embeddingSide;
  pipeline.headSide = options.headSide;
  pipeline.attnRanks = options.attnRanks;
  pipeline.ffnRanks = options.ffnRanks;
  pipeline.routingProfile = options.routingProfile;
  pipeline.microBatches = options.microBatches;
  pipeline.cluster = options.cluster;
  for (const std::string &s : options.printIrAfter)
    if (s != "import" && !findCompileStage(s))
      return fail("--print-ir-after: unknown stage '" + s + "' (expected " + compileStageList() +
                  ")");
  if (auto bad = checkCompilePipelineOptions(pipeline))
    return fail("--" + bad->option + " " + bad->problem);
  // Limits: the runtime addresses tokens with 32-bit-safe counts.
  constexpr int64_t kMaxTokens = int64_t{1} << 30;

  // Wall time of each phase, printed to stderr with --timing.
  auto clock = std::chrono::steady_clock::now();
  auto phase = [&](const char *name) {
    auto now = std::chrono::steady_clock::now();
    if (options.timing)
      llvm::errs() << llvm::formatv("  {0,-24} {1,8:F3} s\n", name,
                                    std::chrono::duration<double>(now - clock).count());
    clock = now;
  };
  // One load. The compiled shape is the model's static input dims, or --batch/--seq-len for
  // symbolic ones (a flag that contradicts a static dim is an error): once the file has passed
  // the loader's checks, resolveInputShape picks it from the declared dims, before shape
  // inference. The loader's static shape inference computes the shape computations' values,
  // which the importer folds into constants.
  onnxfe::Graph graph;
  onnxfe::LoadOptions load;
  load.shapeInference = onnxfe::ShapeInference::Static;
  load.resolveInputShape = [&](const onnxfe::ValueInfo &input, std::vector<int64_t> &resolved,
                               std::string &message) {
    if (input.dims.size() != 2) {
      message = path + ": input '" + input.name + "': expected token ids of shape [batch, seq]";
      return false;
    }
    int64_t dims[2];
    const char *flags[2] = {"--batch", "--seq-len"};
    const std::optional<int64_t> requested[2] = {options.batch, options.seqLen};
    for (int i = 0; i < 2; ++i) {
      int64_t fromModel = input.dims[i];
      if (requested[i] && fromModel > 0 && *requested[i] != fromModel) {
        message = path + ": input '" + input.name + "' has static dim " + std::to_string(i) +
                  " = " + std::to_string(fromModel) + ", but " + flags[i] + " " +
                  std::to_string(*requested[i]) + " was given";
        return false;
      }
      dims[i] = requested[i] ? *requested[i] : fromModel > 0 ? fromModel : kDefaultShape[i];
      if (dims[i] < 1 || dims[i] > kMaxTokens) {
        message = std::string(flags[i]) + " must be in [1, " + std::to_string(kMaxTokens) +
                  "], got " + std::to_string(dims[i]);
        return false;
      }
    }
    if (dims[0] * dims[1] > kMaxTokens) {
      message = "--batch x --seq-len = " + std::to_string(dims[0] * dims[1]) +
                " tokens exceeds the supported " + std::to_string(kMaxTokens);
      return false;
    }
    resolved = {dims[0], dims[1]};
    return true;
  };
  // attention_mask and position_ids: constants at the compiled shape (InputBinding.h).
  std::vector<std::string> bindingNotes;
  load.bindInput = [&](const onnxfe::ValueInfo &input, const std::vector<int64_t> &tokenDims,
                       onnxfe::TensorData &value, std::string &message) {
    std::string note;
    if (!bindExtraInput(path, input, tokenDims, value, note, message))
      return false;
    bindingNotes.push_back(std::move(note));
    return true;
  };
  onnxfe::LoadResult loaded = onnxfe::loadOnnxModel(path, load, graph);
  if (!loaded.ok)
    return fail(loaded.error);
  // A KV-cache export's present.* outputs: the plan computes the logits only (InputBinding.h).
  std::string outputNote, outputError;
  if (!dropKvCacheOutputs(path, graph.outputs, outputNote, outputError))
    return fail(outputError);
  // Initializer dtypes (WeightDtypes.h): float16 / bfloat16 weights compile, computed in fp32 (a
  // note says so); float64 and quantised (int8, uint8, ...) weights are refused, naming one.
  std::string dtypeNote, dtypeError;
  if (!checkWeightDtypes(path, graph.initializers, dtypeNote, dtypeError))
    return fail(dtypeError);
  // External-data files (ExternalData.h): the plan points into them, so they must hold every byte.
  std::string externalError;
  if (!checkExternalData(path, graph.initializers, externalError))
    return fail(externalError);
  if (!outputNote.empty())
    bindingNotes.push_back(std::move(outputNote));
  if (!dtypeNote.empty())
    bindingNotes.push_back(std::move(dtypeNote));
  if (notes)
    notes->insert(notes->end(), bindingNotes.begin(), bindingNotes.end());
  if (options.timing)
    for (const auto &[name, seconds] : loaded.phases)
      llvm::errs() << llvm::formatv("  {0,-24} {1,8:F3} s\n", "  " + name, seconds);
  phase("load");
  context
      .loadDialect<onnxir::OnnxDialect, moe::MoeDialect, func::FuncDialect, arith::ArithDialect>();
  onnxfe::ImportOptions importOptions;
  importOptions.foldKnownValues = true;
  auto imported = onnxfe::importOnnxGraph(context, graph, importOptions);
  if (!imported)
    return imported.takeError();
  OwningOpRef<ModuleOp> module = std::move(*imported);
  phase("import");
  graph = onnxfe::Graph(); // the module holds everything from here on
  phase("free the loaded graph");
  if (wantsStage(options, "import")) {
    irOut << "// -----// IR after import //----- //\n";
    module->print(irOut, OpPrintingFlags().elideLargeElementsAttrs(8));
    irOut << "\n";
  }

  DiagnosticCollector diags;
  ScopedDiagnosticHandler handler(&context, [&](Diagnostic &d) {
    diags(d);
    return success();
  });
  if (failed(mlir::verify(*module)))
    return fail(path + ": imported IR does not verify: " + diags.first);
  phase("verify");

  if (options.stopAfter == "import")
    return module;
  PassManager pm(&context);
  buildCompilePipeline(pm, pipeline);
  if (options.timing)
    pm.enableTiming(); // MLIR's pass timing report, on stderr
  pm.enableIRPrinting(
      /*shouldPrintBeforePass=*/[](Pass *, Operation *) { return false; },
      /*shouldPrintAfterPass=*/
      [&](Pass *pass, Operation *) {
        return findCompileStage(pass->getArgument()) && wantsStage(options, pass->getArgument());
      },
      /*printModuleScope=*/true, /*printAfterOnlyOnChange=*/false,
      /*printAfterOnlyOnFailure=*/false, irOut, OpPrintingFlags().elideLargeElementsAttrs(8));
  if (failed(pm.run(*module))) {
    // One line: the first error names the node or option; later ones follow from it.
    return fail(path + ": " +
                (diags.all.empty() ? std::string("compilation failed") : diags.first));
  }
  return module;
}

} // namespace disagmoe
