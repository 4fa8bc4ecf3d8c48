//===- Pipeline.cpp - the disagmoe compile pipeline -----------------------===//
#include "compiler/pipeline/Pipeline.h"

#include "frontends/onnx/OnnxImporter.h"
#include "frontends/onnx/OnnxLoader.h"
#include "passes/Passes.h"
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

const std::vector<std::string> &stageNames() {
  static const std::vector<std::string> names = {"import",    "normalize", "raise",
                                                 "partition", "groups",    "exchange",
                                                 "placement", "volume",    "schedule"};
  return names;
}

namespace {
/// Pass argument of each stage after "import".
std::string passArgument(const std::string &stage) {
  if (stage == "normalize")
    return "normalize-onnx";
  if (stage == "raise")
    return "raise-onnx-to-moe";
  if (stage == "partition")
    return "partition-components";
  if (stage == "groups")
    return "assign-groups";
  if (stage == "exchange")
    return "fuse-exchange";
  if (stage == "placement")
    return "place-groups";
  if (stage == "volume")
    return "exchange-volume";
  if (stage == "schedule")
    return "afpipe-schedule";
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
  if (!options.stopAfter.empty() && std::find(stageNames().begin(), stageNames().end(),
                                              options.stopAfter) == stageNames().end()) {
    error = "unknown stage '" + options.stopAfter + "' to stop after";
    return nullptr;
  }
  for (const std::string &s : options.printIrAfter) {
    bool known = false;
    for (const std::string &stage : stageNames())
      known |= s == stage || s == passArgument(stage);
    if (!known) {
      error =
          "--print-ir-after: unknown stage '" + s +
          "' (expected import, normalize, raise, partition, groups, exchange, placement, volume or "
          "schedule)";
      return nullptr;
    }
  }
  // Limits: the runtime addresses tokens with 32-bit-safe counts and one thread or process per
  // rank.
  constexpr int64_t kMaxTokens = int64_t{1} << 30, kMaxRanksPerGroup = 65536, kMaxWorld = 1 << 20;
  for (auto [name, value] : {std::pair<const char *, int64_t>{"--attn-ranks", options.attnRanks},
                             {"--ffn-ranks", options.ffnRanks},
                             {"--groups", options.groups}})
    if (value < 1 || value > kMaxRanksPerGroup) {
      error = std::string(name) + " must be in [1, " + std::to_string(kMaxRanksPerGroup) +
              "], got " + std::to_string(value);
      return nullptr;
    }
  for (auto [name, value] :
       {std::pair<const char *, const std::string &>{"--dense-side", options.denseSide},
        {"--shared-experts-side", options.sharedExpertsSide},
        {"--embedding-side", options.embeddingSide},
        {"--head-side", options.headSide}})
    if (value != "attention" && value != "ffn") {
      error = std::string(name) + " must be attention or ffn, got '" + value + "'";
      return nullptr;
    }
  // Checked before loading the model: the schedule stage refuses it too, but only after the load.
  if (options.microBatches < 0 || options.microBatches > afpipe::kMaxMicroBatches) {
    error = "--micro-batches must be in [2p, " + std::to_string(afpipe::kMaxMicroBatches) +
            "] (0: 2p, p = --groups), got " + std::to_string(options.microBatches);
    return nullptr;
  }
  if (options.groups * (options.attnRanks + options.ffnRanks) > kMaxWorld) {
    error = "--groups x (--attn-ranks + --ffn-ranks) = " +
            std::to_string(options.groups * (options.attnRanks + options.ffnRanks)) +
            " ranks exceeds the supported world size " + std::to_string(kMaxWorld);
    return nullptr;
  }

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
  onnxfe::LoadResult loaded = onnxfe::loadOnnxModel(path, load, graph);
  if (!loaded.ok) {
    error = loaded.error;
    return nullptr;
  }
  if (options.timing)
    for (const auto &[name, seconds] : loaded.phases)
      llvm::errs() << llvm::formatv("  {0,-24} {1,8:F3} s\n", "  " + name, seconds);
  phase("load");
  context
      .loadDialect<onnxir::OnnxDialect, moe::MoeDialect, func::FuncDialect, arith::ArithDialect>();
  onnxfe::ImportOptions importOptions;
  importOptions.foldKnownValues = true;
  OwningOpRef<ModuleOp> module = onnxfe::importOnnxGraph(context, graph, importOptions, error);
  if (!module)
    return nullptr;
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
  if (failed(mlir::verify(*module))) {
    error = path + ": imported IR does not verify: " + diags.first;
    return nullptr;
  }
  phase("verify");

  if (options.stopAfter == "import")
    return module;
  PassManager pm(&context);
  // Each stage's pass, in pipeline order, until options.stopAfter.
  const std::pair<const char *, std::function<std::unique_ptr<Pass>()>> stages[] = {
      // Exporter spellings rewritten to the forms raise matches (passes/raise/normalize/).
      {"normalize", [] { return createNormalizeOnnx(); }},
      {"raise", [] { return createRaiseOnnxToMoe(); }},
      {"partition", [] { return createPartitionComponents(); }},
      {"groups",
       [&] {
         return createAssignGroups(AssignGroupsOptions{options.groups, options.denseSide,
                                                       options.sharedExpertsSide,
                                                       options.embeddingSide, options.headSide});
       }},
      {"exchange", [] { return createFuseExchange(); }},
      {"placement",
       [&] {
         return createPlaceGroups(
             PlaceGroupsOptions{options.attnRanks, options.ffnRanks, options.routingProfile});
       }},
      {"volume", [] { return createExchangeVolume(); }},
      {"schedule",
       [&] {
         return createAfPipeSchedule(AfPipeScheduleOptions{options.microBatches, options.cluster});
       }},
  };
  for (const auto &[name, create] : stages) {
    pm.addPass(create());
    if (name == std::string("schedule"))
      pm.addPass(createAfPipeVerify()); // the compile-time check of the schedule
    if (options.stopAfter == name)
      break;
  }
  if (options.timing)
    pm.enableTiming(); // MLIR's pass timing report, on stderr
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
      /*printAfterOnlyOnFailure=*/false, irOut, OpPrintingFlags().elideLargeElementsAttrs(8));
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
