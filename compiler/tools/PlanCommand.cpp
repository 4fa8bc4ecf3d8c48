//===- PlanCommand.cpp - `disagmoe plan`: roofline + Z3 placement of a model ----===//
//
//   disagmoe plan --config MODEL.json --cluster CLUSTER.yaml --seq-len S [options] [--json FILE]
//
// Builds the `moe` IR of a model's config.json (frontends/config), extracts its cost shape, and
// solves the placement (passes/placement/solver): prints the chosen configuration, the roofline
// numbers of each side (FLOPs per byte against the turning point) and why it won. Bare file names
// are also looked up in samples/configs/ and samples/clusters/. `--json FILE` also writes the same
// numbers as one JSON document (PlanJson.h; "-": standard output, and then no text report).
// Errors: one line, exit code 1.
//
//===----------------------------------------------------------------------===//
#include "compiler/tools/CommandLine.h"
#include "compiler/tools/PlanJson.h"
#include "compiler/tools/PlannerFlags.h"
#include "compiler/tools/ProblemInputs.h"
#include "passes/placement/search/PlanSearch.h"
#include "passes/placement/solver/ExpertPlacement.h"
#include "passes/placement/solver/Planner.h"
#include "passes/placement/solver/StageTimes.h"

#include "runtime/cost/Hardware.h"
#include "runtime/cost/Roofline.h"
#include "runtime/cost/RoutingProfile.h"
#include "runtime/io/FileKind.h"

#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>

using namespace llvm;
using namespace disagmoe;

namespace {
int fail(const std::string &message) {
  outs().flush(); // what was printed comes before the error under 2>&1
  errs() << "disagmoe plan: " << message << "\n";
  return 1;
}

std::string gb(double bytes) { return formatv("{0:F1} GB", bytes / 1e9).str(); }

void printSide(raw_ostream &os, const char *name, int64_t gpus, int64_t nics, double flops,
               double bytes, double busy, double compute, double comm, double bandwidth,
               const cost::ClusterSpec &cl) {
  double intensity = cost::flopsPerByte(flops, bytes);
  double turning = cost::turningPoint(cl.gpu, cl.nic);
  // The side's own turning point: its GPUs' peak over the bandwidth of its NICs (PCIe-capped).
  double perGroupGpus = static_cast<double>(gpus);
  double sideTurning = perGroupGpus * cl.gpu.peakFlops / bandwidth;
  os << formatv("  {0,-9} {1,4} GPUs : {2,4} NICs   {3:F2} TFLOP over {4:F2} GB exchanged per "
                "micro-batch = {5:F0} FLOP/byte\n",
                name, gpus, nics, flops / 1e12, bytes / 1e9, intensity);
  os << formatv("            turning point of this side {0:F0} FLOP/byte (I = {1:F0} x GPUs/NIC "
                "share) -> {2}; busy {3:F4} s per micro-batch (compute {4:F4} s, exchange "
                "{5:F4} s)\n",
                sideTurning, turning, intensity >= sideTurning ? "compute-bound" : "network-bound",
                busy, compute, comm);
}
} // namespace

int planMain(int argc, char **argv) {
  cl::OptionCategory category("disagmoe plan options");
  tools::PlannerFlags flags(category, int64_t(1) << 24, /*allowSelective=*/true);
  disagmoe::tools::NumberOpt<int64_t> cp(
      "cp", cl::desc("Fix the attention side's context-parallel degree (1, 2, 4 or 8)"),
      cl::init(0), cl::cat(category));
  disagmoe::tools::NumberOpt<double> optimizerBytes(
      "optimizer-bytes", cl::desc("Optimizer bytes per parameter (12: fp32 master + Adam moments)"),
      cl::init(12.0), cl::cat(category));
  cl::opt<std::string> stageTimes("stage-times",
                                  cl::desc("Measured stage times JSON for the local search"),
                                  cl::init(""), cl::cat(category));
  cl::opt<std::string> routingProfile("routing-profile",
                                      cl::desc("routing-profile.json for expert placement"),
                                      cl::init(""), cl::cat(category));
  cl::opt<bool> exhaustive("exhaustive", cl::desc("Also run the exhaustive search and compare"),
                           cl::cat(category));
  cl::opt<std::string> jsonOut(
      "json", cl::desc("Also write the plan as JSON to this file ('-': stdout, no text report)"),
      cl::init(""), cl::cat(category));
  cl::HideUnrelatedOptions(category);
  if (!tools::parseCommandLine(argc, argv, "disagmoe plan: roofline + Z3 placement\n",
                               "disagmoe plan", /*valueChecksFollow=*/true))
    return 2;

  placement::Problem problem;
  placement::PlannerOptions &o = problem.options;
  if (llvm::Error e = flags.fill(o))
    return fail(llvm::toString(std::move(e)));
  if (cp < 0)
    return fail("--cp must be >= 0 (0: chosen by the planner), got " + std::to_string(cp));
  o.fixedCp = cp;
  o.gradSync.distributedOptimizer = o.memory.zero1;
  if (optimizerBytes < 0)
    return fail("--optimizer-bytes must be >= 0");
  o.memory.optimizerBytes = optimizerBytes;
  tools::exitIfParseOnly(); // the checks above need no file; those below look at the file system
  if (!jsonOut.empty() && jsonOut != "-") {
    if (const std::string why = outputRefusal(jsonOut); !why.empty())
      return fail("--json " + jsonOut + ": " + why);
    // Checked now, not after minutes of planning.
    StringRef parent = sys::path::parent_path(jsonOut);
    if (!parent.empty() && !sys::fs::is_directory(parent))
      return fail("--json " + jsonOut + ": its directory " + parent.str() + " does not exist");
  }

  std::string error;
  std::string configFile;
  if (auto read = tools::loadProblemInputs(flags.hardware, flags.cluster, flags.config, problem))
    configFile = std::move(*read);
  else
    return fail(llvm::toString(read.takeError()));
  // The measured stage times are read before any output, so a bad file fails without a plan
  // printed.
  placement::MeasuredStageTimes measured;
  if (!stageTimes.empty())
    if (llvm::Error e = measured.load(stageTimes))
      return fail(llvm::toString(std::move(e)));

  // Invalid or contradictory fixed options (--cp 3, --groups above the layers, ...) are refused
  // before the header lines, not after them (issue 17); the enumeration is cheap.
  if (llvm::Expected<std::vector<placement::Candidate>> cands =
          placement::enumerateCandidates(problem);
      !cands)
    return fail(llvm::toString(cands.takeError()));

  const cost::ModelShape &m = problem.model;
  const cost::ClusterSpec &clu = problem.cluster;
  raw_ostream &os = jsonOut == "-" ? nulls() : outs();
  json::Object doc{{"model", sys::path::filename(configFile).str()},
                   {"cluster", clu.name},
                   {"gpus", clu.gpus()},
                   {"seq_len", o.seqLen},
                   {"global_tokens", o.globalTokens},
                   {"usable_memory_bytes", clu.gpu.hbmBytes - o.reserveBytes}};
  os << formatv(
      "disagmoe plan: {0} on {1} ({2} x {3}, {4} x {5}), seq-len {6}, {7} tokens per step\n",
      sys::path::filename(configFile), clu.name, clu.gpus(), clu.gpu.name, clu.nics(), clu.nic.name,
      o.seqLen, o.globalTokens);
  os << formatv("model: {0} layers, hidden {1}, {2} experts top-{3}, {4:F1}B parameters ({5:F1}B "
                "active)\n",
                m.numLayers(), m.hidden, m.numExperts(), m.topK(), m.totalParams() / 1e9,
                m.activeParams() / 1e9);

  placement::Solution sol = placement::solveZ3(problem);
  if (!sol.ok)
    return fail(sol.error);

  // Expert placement from a routing profile: balance the chosen EP degree, then re-solve with the
  // placement's imbalance in the FFN stage times.
  if (!routingProfile.empty()) {
    cost::RoutingProfile prof;
    if (!cost::readRoutingProfile(routingProfile, prof, error, m.numExperts()))
      return fail(error);
    // A profile may cover some layers only (the worst of them is used), but none the model lacks.
    for (const auto &layer : prof.layers)
      if (layer.layer < 0 || layer.layer >= m.numLayers() || !m.layers[layer.layer].isMoe())
        return fail(routingProfile + ": layer " + std::to_string(layer.layer) +
                    " is not an MoE layer of " + sys::path::filename(configFile).str() + " (" +
                    std::to_string(m.numLayers()) + " layers; a profile of another model?)");
    int64_t ranks = sol.config.cand.ffnRanks;
    int64_t slots = (m.numExperts() + ranks - 1) / ranks;
    double worst = 1, worstLpt = 1, worstContig = 1;
    for (const auto &layer : prof.layers) {
      worst =
          std::max(worst, placement::placeBalanced(layer.expertLoads, ranks, slots).imbalance());
      worstLpt = std::max(worstLpt,
                          placement::placeGreedyLpt(layer.expertLoads, ranks, slots).imbalance());
      worstContig =
          std::max(worstContig, placement::placeContiguous(layer.expertLoads, ranks).imbalance());
    }
    os << formatv("expert placement over {0} F-ranks ({1} layers of {2}): worst max/mean rank load "
                  "{3:F3} (greedy LPT {4:F3}, contiguous {5:F3})\n",
                  ranks, prof.layers.size(), routingProfile.getValue(), worst, worstLpt,
                  worstContig);
    o.expertImbalance = worst;
    placement::Solution again = placement::solveZ3(problem);
    if (!again.ok)
      return fail(again.error);
    sol = again;
  }

  const placement::Config &c = sol.config;
  const placement::Evaluation &e = sol.eval;
  {
    json::Object z = tools::configJson(c, e);
    z["optimal"] = sol.optimal;
    z["seconds"] = sol.seconds;
    z["candidates"] = sol.candidates;
    z["queries"] = sol.queries;
    z["note"] = sol.note;
    doc["z3"] = std::move(z);
  }
  // One answer per report: with the simulated search (the default) Z3's roofline optimum is the
  // search's starting point and the search's "chosen:" block below is the answer; with --no-search
  // Z3's optimum is the answer.
  os << formatv("{0}; {1} in {2:F2} s over {3} candidates, {4} queries):\n",
                flags.noSearch ? "chosen: Z3's roofline optimum (--no-search"
                               : "Z3's roofline optimum (the starting point of the simulated "
                                 "search below, not the answer",
                sol.optimal ? "proven optimal" : "NOT proven optimal", sol.seconds, sol.candidates,
                sol.queries);
  if (!sol.note.empty())
    os << "  note: " << sol.note << "\n";
  os << formatv(
      "  attention : FFN GPUs  {0} : {1}   (attention share {2:F3}; {3} of {4} GPUs used)\n",
      c.cand.attnGpus(), c.cand.ffnGpus(), double(c.cand.attnGpus()) / double(c.cand.gpus()),
      c.cand.gpus(), clu.gpus());
  os << formatv("  attention : FFN NICs  {0} : {1}\n", c.attnNics, c.ffnNics);
  os << formatv(
      "  groups p {0}, pipeline replicas r {1}, A-ranks per group {2} (attention DP {3}), "
      "F-ranks per group {4} (EP {4}, expert DP {1}), micro-batches {5}, recomputation: "
      "attention {6}, FFN {7}\n",
      c.cand.groups, c.cand.replicas, c.cand.attnRanks, c.cand.replicas * c.cand.attnRanks,
      c.cand.ffnRanks, c.cand.microbatches, cost::recomputationName(c.attnRecompute),
      cost::recomputationName(c.ffnRecompute));
  os << formatv(
      "  context parallelism cp {0} ({1} tokens of a sequence per A-rank per micro-batch, "
      "{2} sequences per group per micro-batch)\n",
      c.cand.cp, o.seqLen / c.cand.cp, c.cand.attnRanks / c.cand.cp);
  os << formatv("  step time {0:F4} s = K {1:F3} x max(U_a {2:F4}, U_f {3:F4}) + gradient sync "
                "{4:F4} s; MFU {5:F3}\n",
                e.stepTime, e.bubbleFactor, e.attnBusy, e.ffnBusy, e.gradSync, e.mfu);
  os << formatv("roofline (busiest group, per micro-batch; turning point I = {0:F1} TFLOP/s / "
                "{1:F0} GB/s = {2:F0} FLOP/byte):\n",
                clu.gpu.peakFlops / 1e12, clu.nic.bandwidth / 1e9,
                cost::turningPoint(clu.gpu, clu.nic));
  const double groupsTotal = double(c.cand.replicas * c.cand.groups);
  printSide(os, "attention", c.cand.attnRanks, static_cast<int64_t>(c.attnNics / groupsTotal + 0.5),
            e.attnFlops, e.attnBytes, e.attnBusy, e.attnCompute, e.attnComm, e.attnBandwidth, clu);
  printSide(os, "ffn", c.cand.ffnRanks, static_cast<int64_t>(c.ffnNics / groupsTotal + 0.5),
            e.ffnFlops, e.ffnBytes, e.ffnBusy, e.ffnCompute, e.ffnComm, e.ffnBandwidth, clu);
  double usable = clu.gpu.hbmBytes - o.reserveBytes;
  auto mem = [&](const char *side, const cost::MemoryBreakdown &b) {
    os << formatv("  memory of an {0} GPU: {1} of {2} usable (weights {3}, gradients {4}, "
                  "optimizer {5}, activations {6})\n",
                  side, gb(b.total()), gb(usable), gb(b.weights), gb(b.gradients), gb(b.optimizer),
                  gb(b.activations));
  };
  mem("attention", e.attnMemory);
  mem("FFN", e.ffnMemory);

  // Why it won: stage alignment, and the best configurations with other attention GPU counts.
  os << "why Z3 chose it:\n";
  double ratio = e.attnBusy / e.ffnBusy;
  os << formatv("  stage alignment: U_a / U_f = {0:F3} ({1}); the pipeline runs at the slower "
                "side's pace, so the minimum of K x max(U_a, U_f) + sync is the objective\n",
                ratio,
                ratio > 1.05   ? "attention is the slower side"
                : ratio < 0.95 ? "FFN is the slower side"
                               : "aligned within 5%");
  std::vector<placement::Solution> others = placement::bestPerAttentionGpus(problem);
  json::Array alternatives;
  for (const placement::Solution &s : others)
    alternatives.push_back(tools::configJson(s.config, s.eval));
  doc["alternatives"] = std::move(alternatives);
  const placement::Solution *below = nullptr, *above = nullptr;
  for (const placement::Solution &s : others) {
    if (s.config.cand.attnGpus() < c.cand.attnGpus())
      below = &s;
    if (s.config.cand.attnGpus() > c.cand.attnGpus() && !above)
      above = &s;
  }
  auto runnerUp = [&](const char *what, const placement::Solution *s) {
    if (!s) {
      os << formatv("  {0}: no configuration fits memory and the integer constraints\n", what);
      return;
    }
    const placement::Evaluation &r = s->eval;
    os << formatv("  {0}: {1}:{2} GPUs, step {3:F4} s ({4:+F1}%), U_a {5:F4} vs U_f {6:F4} s{7}\n",
                  what, s->config.cand.attnGpus(), s->config.cand.ffnGpus(), r.stepTime,
                  100 * (r.stepTime / e.stepTime - 1), r.attnBusy, r.ffnBusy,
                  r.attnBusy > r.ffnBusy ? " (attention-bound)" : " (FFN-bound)");
  };
  runnerUp("best with fewer attention GPUs", below);
  runnerUp("best with more attention GPUs", above);
  if (others.size() > 0) {
    int64_t feasibleMax = others.back().config.cand.attnGpus();
    os << formatv("  {0} attention GPU counts fit memory (up to {1} attention GPUs)\n",
                  others.size(), feasibleMax);
  }

  // The simulated search (passes/placement/search/PlanSearch.h): Z3's optimum and the roofline's
  // fastest candidates built as AF-Pipe schedules and replayed on the simulator (cp 1: the
  // simulator has no ring attention).
  if (!flags.noSearch) {
    placement::Problem sp = problem;
    sp.options.cpPinnedByTool = sp.options.fixedCp == 0 || sp.options.cpPinnedByTool;
    sp.options.fixedCp = 1;
    placement::Solution z = c.cand.cp == 1 ? sol : placement::solveZ3(sp);
    search::SearchOptions so;
    so.base = search::baseOf(sp);
    so.seeds = static_cast<size_t>(flags.searchSeeds);
    so.budgetSeconds = flags.searchBudget;
    os.flush(); // the Z3 report is visible while the search runs
    search::SearchResult found = search::searchPlan(sp, z, so);
    os << formatv("simulated search (runtime/sim; Z3's optimum and the {0} fastest roofline "
                  "candidates in each layout, then a climb): {1} configurations in {2:F2} s\n",
                  so.seeds, found.trials.size(), found.seconds);
    if (found.pruned > 0)
      os << formatv("  {0} of them not simulated: their compute bound (the busiest group's FLOPs "
                    "at peak) exceeds the fastest step simulated before them\n",
                    found.pruned);
    if (found.budgetHit)
      os << formatv("  note: the search stopped on its {0:F0} s budget (--search-budget) before "
                    "simulating every seed or converging\n",
                    so.budgetSeconds);
    if (c.cand.cp != 1)
      os << formatv("  note: the simulator has no ring attention, so the search runs at cp 1 "
                    "(Z3 chose cp {0} above)\n",
                    c.cand.cp);
    if (!found.ok) {
      os << "  no configuration simulated: " << found.error << "\n";
      os << "chosen: none (the search simulated no configuration; Z3's roofline optimum above is "
            "unchecked by the simulator)\n";
    } else {
      const placement::Config &w = found.best.config;
      os << formatv("  starting point (Z3's optimum): {0}: roofline {1:F4} s, simulated {2}\n",
                    search::describe(found.seed.config, found.seed.layout), found.seed.predicted,
                    found.seed.ok ? formatv("{0:F4} s", found.seed.simulated).str()
                                  : found.seed.error);
      os << formatv("chosen: {0} (the simulated search's answer; origin: {1})\n  roofline {2:F4} "
                    "s, simulated "
                    "{3:F4} s, {4} micro-batches in flight, peak {5}\n",
                    search::describe(w, found.best.layout), found.best.origin, found.best.predicted,
                    found.best.simulated, found.best.inflight, gb(found.best.peakMemory));
      os << "  why: " << found.why << "\n";
      os << "  gradient synchronisation: " << o.gradSync.describe() << "\n";
      if (m.numLayers() % w.cand.groups == 0) {
        const std::vector<std::string> args = tools::compileArgsOf(w, o);
        os << "  realise one replica with: disagmoe compile MODEL.onnx";
        for (const std::string &a : args)
          os << " " << a;
        os << formatv("; run {0} such replicas data-parallel\n", w.cand.replicas);
      } else {
        // compile assigns L / p layers to each group (assign-groups); the planner and the simulator
        // also take groups of ceil(L / p) and floor(L / p) layers.
        os << formatv("  not realisable by disagmoe compile yet: p {0} does not divide the model's "
                      "{1} layers (compile needs L / p layers per group; fix --groups to a divisor "
                      "of {1} for a compilable plan)\n",
                      w.cand.groups, m.numLayers());
      }
      os << formatv("  not yet compile flags: the recomputation levels ({0}/{1}), the window and "
                    "the replicas' layout ({2}) are simulated here only\n",
                    cost::recomputationName(w.attnRecompute),
                    cost::recomputationName(w.ffnRecompute), afpipe::toString(found.best.layout));
    }
    doc["search"] = tools::searchJson(found, sp,
                                      found.ok && m.numLayers() % found.best.config.cand.groups == 0
                                          ? tools::compileArgsOf(found.best.config, o)
                                          : std::vector<std::string>{});
  }
  if (!stageTimes.empty()) {
    placement::LocalSearchResult ls = placement::localSearch(problem, c, measured);
    bool ok = false;
    double start = placement::stepTimeWith(problem, c, measured, ok);
    os << formatv("local search on measured stage times ({0} moves, {1} neighbours): step {2:F4} s "
                  "-> {3:F4} s with {4}:{5} GPUs, {6}:{7} NICs, p {8}, A-ranks {9}, F-ranks {10}\n",
                  ls.moves, ls.evaluated, start, ls.stepTime, ls.config.cand.attnGpus(),
                  ls.config.cand.ffnGpus(), ls.config.attnNics, ls.config.ffnNics,
                  ls.config.cand.groups, ls.config.cand.attnRanks, ls.config.cand.ffnRanks);
    json::Object l{{"moves", ls.moves},
                   {"neighbours", ls.evaluated},
                   {"start_step_s", start},
                   {"step_s", ls.stepTime}};
    l["config"] = tools::configJson(ls.config, placement::evaluate(problem, ls.config));
    doc["local_search"] = std::move(l);
  }
  if (exhaustive) {
    placement::Solution ex = placement::solveExhaustive(problem, false);
    os << formatv("exhaustive search: step {0:F4} s with {1} GPUs in {2:F2} s: {3}\n",
                  ex.eval.stepTime, ex.config.cand.gpus(), ex.seconds,
                  ex.eval.stepTime == e.stepTime && ex.config.cand.gpus() == c.cand.gpus()
                      ? "same objective as Z3"
                      : "OBJECTIVE DIFFERS from Z3");
    json::Object x = tools::configJson(ex.config, ex.eval);
    x["seconds"] = ex.seconds;
    x["same_objective_as_z3"] =
        ex.eval.stepTime == e.stepTime && ex.config.cand.gpus() == c.cand.gpus();
    doc["exhaustive"] = std::move(x);
  }
  if (!jsonOut.empty())
    if (const std::string why = tools::writeJson(jsonOut, json::Value(std::move(doc)));
        !why.empty())
      return fail("--json " + why);
  return 0;
}
