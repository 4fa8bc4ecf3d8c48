//===- CompilePipeline.cpp - the compile pipeline, registered once --------===//
#include "passes/CompilePipeline.h"

#include "mlir/Pass/PassRegistry.h"

namespace disagmoe {

llvm::ArrayRef<CompileStage> compileStages() {
  static const CompileStage stages[] = {
      {"normalize", "normalize-onnx"}, {"fold", "fold-onnx-constants"},
      {"raise", "raise-onnx-to-moe"},  {"partition", "partition-components"},
      {"groups", "assign-groups"},     {"exchange", "fuse-exchange"},
      {"placement", "place-groups"},   {"volume", "exchange-volume"},
      {"schedule", "afpipe-schedule"},
  };
  return stages;
}

const CompileStage *findCompileStage(llvm::StringRef nameOrPass) {
  for (const CompileStage &stage : compileStages())
    if (nameOrPass == stage.name || nameOrPass == stage.pass)
      return &stage;
  return nullptr;
}

namespace {
AssignGroupsOptions assignGroupsOptions(const CompilePipelineOptions &o) {
  return AssignGroupsOptions{o.groups, o.denseSide, o.sharedExpertsSide, o.embeddingSide,
                             o.headSide};
}
PlaceGroupsOptions placeGroupsOptions(const CompilePipelineOptions &o) {
  return PlaceGroupsOptions{o.attnRanks, o.ffnRanks, o.routingProfile};
}
AfPipeScheduleOptions afPipeScheduleOptions(const CompilePipelineOptions &o) {
  return AfPipeScheduleOptions{o.microBatches, o.cluster};
}
} // namespace

std::string compileStageList() {
  std::string names = "import";
  for (const CompileStage &stage : compileStages())
    names += std::string(", ") + stage.name;
  return names;
}

std::optional<OptionError> checkCompilePipelineOptions(const CompilePipelineOptions &o) {
  for (auto [name, value] :
       {std::pair<const char *, const std::string &>{"start-after", o.startAfter},
        {"stop-after", o.stopAfter}})
    if (!value.empty() && value != "import" && !findCompileStage(value))
      return OptionError{name,
                         "'" + value + "' is not a stage (expected " + compileStageList() + ")"};
  if (auto bad = checkAssignGroupsOptions(assignGroupsOptions(o))) {
    if (bad->option == "p")
      bad->option = "groups"; // the pipeline's name for assign-groups' p
    return bad;
  }
  if (auto bad = checkPlaceGroupsOptions(placeGroupsOptions(o), o.groups))
    return bad;
  return checkAfPipeScheduleOptions(afPipeScheduleOptions(o));
}

void buildCompilePipeline(mlir::OpPassManager &pm, const CompilePipelineOptions &o) {
  const CompileStage *start =
      o.startAfter.empty() || o.startAfter == "import" ? nullptr : findCompileStage(o.startAfter);
  bool running = start == nullptr;
  for (const CompileStage &stage : compileStages()) {
    if (running) {
      const llvm::StringRef name = stage.name;
      if (name == "normalize")
        pm.addPass(createNormalizeOnnx()); // exporter spellings -> the forms raise matches
      else if (name == "fold")
        pm.addPass(createFoldOnnxConstants()); // shape-and-constant subgraphs -> dense constants
      else if (name == "raise")
        pm.addPass(createRaiseOnnxToMoe());
      else if (name == "partition")
        pm.addPass(createPartitionComponents());
      else if (name == "groups")
        pm.addPass(createAssignGroups(assignGroupsOptions(o)));
      else if (name == "exchange")
        pm.addPass(createFuseExchange());
      else if (name == "placement")
        pm.addPass(createPlaceGroups(placeGroupsOptions(o)));
      else if (name == "volume")
        pm.addPass(createExchangeVolume());
      else if (name == "schedule") {
        pm.addPass(createAfPipeSchedule(afPipeScheduleOptions(o)));
        pm.addPass(createAfPipeVerify()); // the compile-time check of the schedule
      }
      if (findCompileStage(o.stopAfter) == &stage)
        return;
    }
    if (&stage == start)
      running = true;
  }
}

void registerCompilePipeline() {
  // PassPipelineRegistration's form, with the option checks: a refused value fails the pipeline's
  // parsing with one line naming the option, instead of a pass failing later.
  mlir::registerPassPipeline(
      "disagmoe-compile",
      "The pipeline of `disagmoe compile` after the ONNX import (normalize ... schedule)",
      [](mlir::OpPassManager &pm, llvm::StringRef text,
         llvm::function_ref<mlir::LogicalResult(const llvm::Twine &)> errorHandler) {
        CompilePipelineOptions options;
        if (mlir::failed(options.parseFromString(text)))
          return mlir::failure();
        if (auto bad = checkCompilePipelineOptions(options))
          return errorHandler("disagmoe-compile: " + bad->option + " " + bad->problem);
        buildCompilePipeline(pm, options);
        return mlir::success();
      },
      [](llvm::function_ref<void(const mlir::detail::PassOptions &)> optHandler) {
        optHandler(CompilePipelineOptions());
      });
}

} // namespace disagmoe
