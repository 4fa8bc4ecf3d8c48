//===- PlanSchedule.h - load-time reading and verification of a plan's `schedule` -*- C++ -*-===//
//
// Called by parsePlan (Plan.cpp) after every other section has been validated, so that a plan whose
// schedule would hang or overflow a rank is refused when it is loaded, with one line naming the
// rank pair and the instruction, instead of at the receive deadline (--timeout) of a run.
//
// Checks (docs/plan-format.md, "schedule"): the section parses (sched::parseScheduleJson); the
// verifier passes (sched::verifySchedule with the placement's world size: each send matched by one
// receive of the same size in the same order per rank pair, no rank waits forever, every rank has
// compute work, peak memory <= capacity_bytes); its attention/ffn groups are the placement's groups
// (same ranks, replica 0); and each m2n/n2m/residual message fits the executor's buffer of that
// exchange, capacity_tokens x bytes_per_token bytes per rank pair (plan `exchanges`).
//
// Errors: PlanError "<plan path>: schedule...: <problem>".
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/plan/Plan.h"

#include <nlohmann/json_fwd.hpp>

namespace disagmoe {

/// Reads `root["schedule"]` when present into plan.schedule and verifies it; throws PlanError.
void parseScheduleSection(Plan &plan, const nlohmann::json &root);

} // namespace disagmoe
