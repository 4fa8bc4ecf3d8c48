//===- CompilePipeline.h - the compile pipeline, registered once -*- C++ -*-===//
//
// The one pass pipeline of `disagmoe compile` (after the ONNX import): normalize, raise, partition,
// groups, exchange, placement, volume, schedule (docs/architecture.md, "The data path").
// `disagmoe compile` builds it with buildCompilePipeline; `disagmoe-opt --disagmoe-compile='...'`
// runs the same pipeline from its registration, so the stage names, their order and the option
// checks live here and in the passes only.
//
//===----------------------------------------------------------------------===//
#ifndef DISAGMOE_PASSES_COMPILEPIPELINE_H
#define DISAGMOE_PASSES_COMPILEPIPELINE_H

#include "passes/Passes.h"

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassOptions.h"
#include "llvm/ADT/ArrayRef.h"

#include <optional>
#include <string>

namespace disagmoe {

/// The pipeline's options: the options of its passes under the names of `disagmoe compile`'s
/// flags, plus the stage range.
struct CompilePipelineOptions : public mlir::PassPipelineOptions<CompilePipelineOptions> {
  Option<std::string> startAfter{
      *this, "start-after",
      llvm::cl::desc("Run the stages after this one: import (all), normalize, raise, ..."),
      llvm::cl::init("import")};
  Option<std::string> stopAfter{*this, "stop-after",
                                llvm::cl::desc("Stop after this stage (default: run them all)"),
                                llvm::cl::init("")};
  Option<int64_t> groups{*this, "groups", llvm::cl::desc("p: groups per side (assign-groups)"),
                         llvm::cl::init(1)};
  Option<std::string> denseSide{*this, "dense-side",
                                llvm::cl::desc("Side of dense layers' FFNs: attention or ffn"),
                                llvm::cl::init("attention")};
  Option<std::string> sharedExpertsSide{*this, "shared-experts-side",
                                        llvm::cl::desc("Side of shared experts: attention or ffn"),
                                        llvm::cl::init("attention")};
  Option<std::string> embeddingSide{*this, "embedding-side",
                                    llvm::cl::desc("Side of the embedding: attention or ffn"),
                                    llvm::cl::init("attention")};
  Option<std::string> headSide{*this, "head-side",
                               llvm::cl::desc("Side of the final norm and head: attention or ffn"),
                               llvm::cl::init("attention")};
  Option<int64_t> attnRanks{*this, "attn-ranks", llvm::cl::desc("A-ranks per attention group"),
                            llvm::cl::init(2)};
  Option<int64_t> ffnRanks{*this, "ffn-ranks", llvm::cl::desc("F-ranks per FFN group"),
                           llvm::cl::init(2)};
  Option<std::string> routingProfile{
      *this, "routing-profile",
      llvm::cl::desc("Routing profile JSON for expert placement (empty: contiguous)"),
      llvm::cl::init("")};
  Option<int64_t> microBatches{*this, "micro-batches",
                               llvm::cl::desc("Micro-batches per training step (0: 2p)"),
                               llvm::cl::init(0)};
  Option<std::string> cluster{
      *this, "cluster", llvm::cl::desc("Cluster YAML of the schedule's roofline (empty: H800)"),
      llvm::cl::init("")};
};

/// One stage: its short name (`--print-ir-after`, `stop-after`) and its pass's argument.
struct CompileStage {
  const char *name;
  const char *pass;
};
/// The stages, in order, after the import (which the frontend does, outside any pass).
llvm::ArrayRef<CompileStage> compileStages();
/// "import, normalize, fold, ...": every stage name, the import first, for messages.
std::string compileStageList();
/// The stage named `nameOrPass` (a short name or a pass argument), or null.
const CompileStage *findCompileStage(llvm::StringRef nameOrPass);

/// Checks every option: the passes' own checks (checkAssignGroupsOptions, ...) and the stage
/// names. The error names the pipeline option (= the `disagmoe compile` flag without "--").
std::optional<OptionError> checkCompilePipelineOptions(const CompilePipelineOptions &options);

/// Adds the stages after start-after, through stop-after, to `pm` (afpipe-verify right after
/// the schedule stage). The options must have passed checkCompilePipelineOptions.
void buildCompilePipeline(mlir::OpPassManager &pm, const CompilePipelineOptions &options);

/// Registers the pipeline as "disagmoe-compile" (disagmoe-opt).
void registerCompilePipeline();

} // namespace disagmoe

#endif
