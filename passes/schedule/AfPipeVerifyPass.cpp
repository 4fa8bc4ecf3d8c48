//===- AfPipeVerifyPass.cpp - afpipe-verify: whole-schedule checks as diagnostics ===//
//
// Runs runtime/plan/Schedule.h's verifySchedule on every `afpipe.schedule` of the module (with the
// placement's world size when the module is placed): every send matched by exactly one receive of
// the same size in the same order per pair of ranks, no rank waiting forever, no rank without
// work, peak memory within capacity. The error is reported on the instruction it names (or on the
// schedule) so that lit's -verify-diagnostics can pin it.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"
#include "passes/schedule/ScheduleIR.h"

namespace disagmoe {
#define GEN_PASS_DEF_AFPIPEVERIFY
#include "passes/Passes.h.inc"

namespace {
using namespace mlir;

struct AfPipeVerifyPass : impl::AfPipeVerifyBase<AfPipeVerifyPass> {
  using AfPipeVerifyBase::AfPipeVerifyBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    sched::VerifyOptions options;
    if (auto placement = module->getAttrOfType<DictionaryAttr>("moe.placement"))
      if (auto world = placement.getAs<IntegerAttr>("world_size"))
        options.worldSize = static_cast<int>(world.getInt());
    bool failed = false;
    for (auto op : module.getOps<afpipe::ScheduleOp>()) {
      sched::Schedule s;
      if (llvm::Error e = afpipe::readScheduleOp(op, s)) {
        op.emitError() << "afpipe-verify: " << llvm::toString(std::move(e));
        failed = true;
        continue;
      }
      std::string error = sched::verifySchedule(s, options);
      if (error.empty())
        continue;
      Operation *at = afpipe::instructionNamedIn(op, error);
      (at ? at : op.getOperation())->emitError() << "afpipe-verify: " << error;
      failed = true;
    }
    if (failed)
      signalPassFailure();
  }
};
} // namespace
} // namespace disagmoe
