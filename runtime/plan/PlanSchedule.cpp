//===- PlanSchedule.cpp - load-time reading and verification of a plan's `schedule` ----===//
#include "runtime/plan/PlanSchedule.h"

#include "runtime/plan/ScheduleJson.h"

#include <nlohmann/json.hpp>

namespace disagmoe {
namespace {

std::string rankList(const std::vector<int> &ranks) {
  std::string s = "[";
  for (size_t i = 0; i < ranks.size(); ++i)
    s += (i ? "," : "") + std::to_string(ranks[i]);
  return s + "]";
}

// The schedule's attention and ffn groups must be the placement's: the executor runs the plan's
// groups, so a schedule over other ranks would describe a different run.
void checkGroups(const Plan &plan, const sched::Schedule &s) {
  for (size_t k = 0; k < s.groups.size(); ++k) {
    const sched::Group &g = s.groups[k];
    if (g.role != "attention" && g.role != "ffn")
      continue; // baselines' "stage" groups: no placement twin
    const GroupRole role = g.role == "attention" ? GroupRole::Attention : GroupRole::Ffn;
    const std::string at = plan.path + ": schedule.groups[" + std::to_string(k) + "]: ";
    const Group *match = nullptr;
    for (const Group &pg : plan.placement.groups)
      if (pg.role == role && pg.index == g.index)
        match = &pg;
    if (!match)
      throw PlanError(at + g.role + " group " + std::to_string(g.index) +
                      " is not in placement.groups");
    if (g.ranks.size() != 1)
      throw PlanError(at + std::to_string(g.ranks.size()) +
                      " pipeline replicas, but the executor runs one (placement.groups)");
    if (g.ranks[0] != match->ranks)
      throw PlanError(at + "ranks " + rankList(g.ranks[0]) + " differ from placement's " + g.role +
                      " group " + std::to_string(g.index) + " ranks " + rankList(match->ranks));
  }
}

// A message larger than the receiver's buffer would fail mid-step; refuse it now.
void checkMessageSizes(const Plan &plan, const sched::Schedule &s) {
  for (size_t p = 0; p < s.programs.size(); ++p) {
    const sched::Program &prog = s.programs[p];
    for (size_t i = 0; i < prog.instrs.size(); ++i) {
      const sched::Instr &in = prog.instrs[i];
      if (in.kind != sched::Kind::Send && in.kind != sched::Kind::Recv)
        continue;
      ExchangeKind kind;
      if (in.op == "m2n")
        kind = ExchangeKind::M2n;
      else if (in.op == "n2m")
        kind = ExchangeKind::N2m;
      else if (in.op == "residual")
        kind = ExchangeKind::Residual;
      else if (in.op == "embedding")
        kind = ExchangeKind::Embedding;
      else if (in.op == "head")
        kind = ExchangeKind::Head;
      else
        continue; // baselines' pipeline point-to-point: no executor exchange
      // The plan has one embedding and one head exchange; the schedule numbers them -1 and L.
      const bool single = kind == ExchangeKind::Embedding || kind == ExchangeKind::Head;
      const ExchangeSpec *ex = nullptr;
      for (const ExchangeSpec &e : plan.exchanges)
        if (e.kind == kind && (single || e.layer == in.layer))
          ex = &e;
      const std::string at =
          plan.path + ": schedule: " + sched::describe(s, static_cast<int>(p), static_cast<int>(i));
      if (!ex)
        throw PlanError(at + ": the plan has no " + in.op + " exchange for layer " +
                        std::to_string(in.layer) + " (exchanges)");
      const double capacity =
          static_cast<double>(ex->capacityTokens) * static_cast<double>(ex->bytesPerToken);
      if (in.bytes > capacity)
        throw PlanError(at + ": " + std::to_string(static_cast<int64_t>(in.bytes)) +
                        " bytes per rank pair exceed exchange " + ex->id + "'s buffer of " +
                        std::to_string(ex->capacityTokens) + " tokens x " +
                        std::to_string(ex->bytesPerToken) +
                        " bytes = " + std::to_string(static_cast<int64_t>(capacity)) + " bytes");
    }
  }
}

// The schedule must compute the always-on components where the plan runs them (dense_ffn side,
// placement.embedding_side / head_side): a schedule costed for the other side would time a
// different run and miss (or invent) its messages. The message checks above and the verifier's
// send/receive matching cover the exchanges; this names the side that differs.
void checkSides(const Plan &plan, const sched::Schedule &s) {
  const int64_t L = plan.model.numLayers;
  std::vector<int> ffnDense(static_cast<size_t>(L), 0), attnDense(static_cast<size_t>(L), 0);
  int ffnHead = 0, attnHead = 0, embeddingMessages = 0;
  for (const sched::Program &prog : s.programs)
    for (const sched::Instr &in : prog.instrs) {
      if (in.group < 0 || in.group >= static_cast<int>(s.groups.size()))
        continue;
      const bool onFfn = s.groups[static_cast<size_t>(in.group)].role == "ffn";
      if (in.kind == sched::Kind::Compute && in.op == "dense_ffn" && in.layer >= 0 && in.layer < L)
        ++(onFfn ? ffnDense : attnDense)[static_cast<size_t>(in.layer)];
      else if (in.kind == sched::Kind::Compute && in.op == "head")
        ++(onFfn ? ffnHead : attnHead);
      else if (in.kind == sched::Kind::Send && in.op == "embedding")
        ++embeddingMessages;
    }
  auto refuse = [&](const std::string &what, bool planOnFfn) {
    throw PlanError(plan.path + ": schedule: " + what + ": the plan runs it on the " +
                    (planOnFfn ? "ffn" : "attention") + " side, but the schedule costs it on the " +
                    (planOnFfn ? "attention" : "ffn") +
                    " side (recompile with the same side options)");
  };
  for (int64_t l = 0; l < L && l < static_cast<int64_t>(plan.model.layers.size()); ++l) {
    const LayerComponents &lc = plan.model.layers[static_cast<size_t>(l)];
    const bool planOnFfn = lc.dense ? lc.denseOnFfn : (lc.sharedFfn >= 0 && lc.sharedOnFfn);
    const std::string what = std::string(lc.dense ? "the dense FFN" : "the shared experts") +
                             " of layer " + std::to_string(l);
    if (planOnFfn && ffnDense[static_cast<size_t>(l)] == 0)
      refuse(what, true);
    if (!planOnFfn && ffnDense[static_cast<size_t>(l)] > 0)
      refuse(what, false);
    (void)attnDense;
  }
  if (s.kind != "afpipe")
    return; // baselines keep everything on their stages
  if (plan.placement.headOnFfn ? ffnHead == 0 : ffnHead > 0)
    refuse("the final norm and head", plan.placement.headOnFfn);
  if (plan.placement.embeddingOnFfn != (embeddingMessages > 0))
    refuse("the embedding", plan.placement.embeddingOnFfn);
  (void)attnHead;
}

} // namespace

void parseScheduleSection(Plan &plan, const nlohmann::json &root) {
  auto it = root.find("schedule");
  if (it == root.end())
    return;
  sched::Schedule s;
  std::string error;
  if (!sched::parseScheduleJson(*it, s, error))
    throw PlanError(plan.path + ": " + error);
  sched::VerifyOptions options;
  options.worldSize = plan.placement.worldSize;
  error = sched::verifySchedule(s, options);
  if (!error.empty())
    throw PlanError(plan.path + ": schedule: " + error);
  checkGroups(plan, s);
  checkMessageSizes(plan, s);
  checkSides(plan, s);
  plan.schedule = std::move(s);
}

} // namespace disagmoe
