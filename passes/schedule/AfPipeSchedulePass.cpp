//===- AfPipeSchedulePass.cpp - afpipe-schedule: the AF-Pipe schedule as IR ===//
//
// Builds the AF-Pipe training schedule of a placed module (ModuleSchedule.h, calling the plain C++
// AfPipe library) and appends it to the module as one `afpipe.schedule` op (ScheduleIR.h). A model
// the cost model cannot size gets no schedule; the module's `afpipe.unscheduled` attribute says
// why (the plan's `schedule` section is optional).
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"
#include "passes/schedule/ModuleSchedule.h"
#include "passes/schedule/ScheduleIR.h"

namespace disagmoe {
#define GEN_PASS_DEF_AFPIPESCHEDULE
#include "passes/Passes.h.inc"

std::optional<OptionError> checkAfPipeScheduleOptions(const AfPipeScheduleOptions &o) {
  if (o.microBatches < 0 || o.microBatches > afpipe::kMaxMicroBatches)
    return OptionError{"micro-batches", "must be in [2p, " +
                                            std::to_string(afpipe::kMaxMicroBatches) +
                                            "] (0: 2p), got " + std::to_string(o.microBatches)};
  return std::nullopt;
}

namespace {
using namespace mlir;

struct AfPipeSchedulePass : impl::AfPipeScheduleBase<AfPipeSchedulePass> {
  using AfPipeScheduleBase::AfPipeScheduleBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    for (auto old : llvm::make_early_inc_range(module.getOps<afpipe::ScheduleOp>()))
      old.erase(); // rebuilding replaces the schedule
    module->removeAttr("afpipe.unscheduled");
    if (auto bad = checkAfPipeScheduleOptions(AfPipeScheduleOptions{microBatches, cluster})) {
      module.emitError() << "afpipe-schedule: " << bad->option << " " << bad->problem;
      return signalPassFailure();
    }
    afpipe::ModuleScheduleOptions options;
    options.microBatches = microBatches;
    options.clusterPath = cluster;
    llvm::Expected<afpipe::ModuleSchedule> built = afpipe::buildModuleSchedule(module, options);
    if (!built) {
      module.emitError() << "afpipe-schedule: " << llvm::toString(built.takeError());
      return signalPassFailure();
    }
    if (built->status == afpipe::ModuleScheduleStatus::Unsized) {
      module->setAttr("afpipe.unscheduled", StringAttr::get(module.getContext(), built->unsized));
      return;
    }
    OpBuilder b(module.getContext());
    b.setInsertionPointToEnd(module.getBody());
    afpipe::buildScheduleOp(b, module.getLoc(), built->schedule);
  }
};
} // namespace
} // namespace disagmoe
