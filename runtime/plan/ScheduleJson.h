//===- ScheduleJson.h - the schedule section from an nlohmann::json value -*- C++ -*-===//
// For runtime code that already holds the parsed plan (Plan.cpp); others use scheduleFromJson.
#ifndef DISAGMOE_RUNTIME_PLAN_SCHEDULEJSON_H
#define DISAGMOE_RUNTIME_PLAN_SCHEDULEJSON_H

#include "runtime/plan/Schedule.h"

#include <nlohmann/json.hpp>

namespace disagmoe::sched {
/// Parses `root` (the value of plan.json's "schedule"); false with `error` naming the field.
bool parseScheduleJson(const nlohmann::json &root, Schedule &out, std::string &error);
} // namespace disagmoe::sched

#endif
