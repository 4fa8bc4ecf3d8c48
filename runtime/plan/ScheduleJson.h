//===- ScheduleJson.h - the schedule section from an nlohmann::json value -*- C++ -*-===//
// For runtime code that already holds the parsed plan (Plan.cpp, PlanWriter.cpp); others use
// scheduleFromJson / scheduleToJson.
#ifndef DISAGMOE_RUNTIME_PLAN_SCHEDULEJSON_H
#define DISAGMOE_RUNTIME_PLAN_SCHEDULEJSON_H

#include "runtime/plan/Schedule.h"

#include <nlohmann/json.hpp>

namespace disagmoe::sched {
/// Parses `root` (the value of plan.json's "schedule"); false with `error` naming the field.
bool parseScheduleJson(const nlohmann::json &root, Schedule &out, std::string &error);
/// The schedule section as a JSON value (what scheduleToJson prints).
nlohmann::json scheduleToJsonValue(const Schedule &s);
} // namespace disagmoe::sched

#endif
