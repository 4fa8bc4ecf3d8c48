//===- ScheduleEmitter.cpp - the `schedule` section of an emitted plan ----===//
#include "compiler/emit/ScheduleEmitter.h"

#include "passes/schedule/ScheduleIR.h"
#include "runtime/plan/Schedule.h"

#include "mlir/IR/BuiltinAttributes.h"

namespace json = llvm::json;

namespace disagmoe {

bool emitSchedule(mlir::ModuleOp module, json::Object &plan, std::string &error,
                  std::string &note) {
  note.clear();
  auto ops = llvm::to_vector(module.getOps<afpipe::ScheduleOp>());
  if (ops.empty()) {
    auto why = module->getAttrOfType<mlir::StringAttr>("afpipe.unscheduled");
    note = "no schedule section: " +
           (why ? "the cost model cannot size this model (" + why.str() + ")"
                : std::string("the module has no afpipe.schedule (run afpipe-schedule)"));
    return true;
  }
  if (ops.size() > 1) {
    error = "schedule: the module has " + std::to_string(ops.size()) +
            " afpipe.schedule ops, a plan holds one";
    return false;
  }
  sched::Schedule s;
  if (!afpipe::readScheduleOp(ops.front(), s, error)) {
    error = "schedule: " + error;
    return false;
  }
  sched::VerifyOptions vo;
  if (auto placement = module->getAttrOfType<mlir::DictionaryAttr>("moe.placement"))
    vo.worldSize = static_cast<int>(placement.getAs<mlir::IntegerAttr>("world_size").getInt());
  if (std::string e = sched::verifySchedule(s, vo); !e.empty()) {
    error = "schedule: " + e;
    return false;
  }
  llvm::Expected<json::Value> value = json::parse(sched::scheduleToJson(s));
  if (!value) {
    error = "schedule: " + llvm::toString(value.takeError());
    return false;
  }
  plan["schedule"] = std::move(*value);
  return true;
}

} // namespace disagmoe
