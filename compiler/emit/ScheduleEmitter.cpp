//===- ScheduleEmitter.cpp - the `schedule` section of an emitted plan ----===//
#include "compiler/emit/ScheduleEmitter.h"

#include "passes/schedule/ScheduleIR.h"
#include "runtime/plan/Schedule.h"

#include "mlir/IR/BuiltinAttributes.h"

namespace disagmoe {
namespace {
llvm::Error fail(const std::string &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}
} // namespace

llvm::Expected<std::string> emitSchedule(mlir::ModuleOp module, Plan &plan) {
  auto ops = llvm::to_vector(module.getOps<afpipe::ScheduleOp>());
  if (ops.empty()) {
    auto why = module->getAttrOfType<mlir::StringAttr>("afpipe.unscheduled");
    return "no schedule section: " +
           (why ? "the cost model cannot size this model (" + why.str() + ")"
                : std::string("the module has no afpipe.schedule (run afpipe-schedule)"));
  }
  if (ops.size() > 1)
    return fail("schedule: the module has " + std::to_string(ops.size()) +
                " afpipe.schedule ops, a plan holds one");
  sched::Schedule s;
  if (llvm::Error e = afpipe::readScheduleOp(ops.front(), s))
    return fail("schedule: " + llvm::toString(std::move(e)));
  sched::VerifyOptions vo;
  vo.worldSize = plan.placement.worldSize;
  if (std::string e = sched::verifySchedule(s, vo); !e.empty())
    return fail("schedule: " + e);
  plan.schedule = std::move(s);
  return std::string();
}

} // namespace disagmoe
