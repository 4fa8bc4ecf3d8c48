//===- SimulateCommand.cpp - `disagmoe simulate`: AF-Pipe against the baselines at cluster scale
//----===//
//
//   disagmoe simulate --config MODEL.json --cluster CLUSTER.yaml --seq-len S [options]
//
// Builds the model's cost shape from its config.json (frontends/config), picks the DisagMoE
// configuration with the Z3 placement (passes/placement/solver; any choice can be fixed on the
// command line), builds and verifies its AF-Pipe schedule (passes/schedule/AfPipe.h), and replays
// it on the simulator (runtime/sim) beside the baselines (runtime/sim/Baselines.h: Megatron EP +
// interleaved 1F1B with and without all-to-all overlap, DualPipe) on the same model, cluster and
// global batch. Each baseline is searched once (runtime/sim/BaselineSearch.h: EP, PP, VPP,
// micro-batches and recomputation under the memory model) and printed twice: its row at --ep
// (default 16, the paper's setting; the other knobs searched) and its "(tuned)" row, the fastest
// over every EP. Prints step times, speed-ups over both, bubbles, exposed communication, MFU and
// the ratio to the roofline lower bound, each row with its setting (ep, pp, vpp, m, recompute);
// --json writes them all (per baseline: its figures at --ep, "setting", and "tuned" with the
// tuned figures and setting; "baseline_ep" at the top), --trace the AF-Pipe timeline (Chrome
// trace format) and each baseline row's beside it (TRACE.<system>.json). Errors: one line, exit
// code 1.
//
//===----------------------------------------------------------------------===//
#include "compiler/tools/CommandLine.h"
#include "compiler/tools/PlannerFlags.h"
#include "compiler/tools/ProblemInputs.h"
#include "passes/placement/search/PlanSearch.h"
#include "passes/placement/solver/Planner.h"
#include "passes/schedule/AfPipe.h"

#include "runtime/cost/Hardware.h"
#include "runtime/cost/Roofline.h"
#include "runtime/io/FileKind.h"
#include "runtime/sim/BaselineSearch.h"
#include "runtime/sim/Baselines.h"
#include "runtime/sim/Simulator.h"

#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <cctype>
#include <chrono>
#include <cstdio>
#include <limits>

using namespace llvm;
using namespace disagmoe;

namespace {
int fail(const std::string &message) {
  outs().flush(); // what was printed comes before the error under 2>&1
  errs() << "disagmoe simulate: " << message << "\n";
  return 1;
}

struct Outcome {
  std::string system, config, error;
  bool ok = false, fits = true;
  bool baseline = false;          ///< a baseline row (with `setting`)
  sim::BaselineConfig setting;    ///< baseline rows: the configuration simulated
  const Outcome *tuned = nullptr; ///< the baseline's row at --ep: its "(tuned)" row
  sim::SimResult result;
  int64_t gpus = 0, inflight = 0;
  double peakMemory = 0, wall = 0;
};

/// TRACE.json -> TRACE.<system>.json: the row's name in lower case, '-' for anything else
/// ("Megatron-LM 1F1B (tuned)" -> "megatron-lm-1f1b-tuned").
std::string baselineTracePath(const std::string &trace, const std::string &system) {
  std::string slug;
  for (char c : system) {
    if (std::isalnum(static_cast<unsigned char>(c)))
      slug += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    else if (!slug.empty() && slug.back() != '-')
      slug += '-';
  }
  while (!slug.empty() && slug.back() == '-')
    slug.pop_back();
  const size_t dot = trace.rfind('.');
  if (dot == std::string::npos || trace.find('/', dot) != std::string::npos)
    return trace + "." + slug;
  return trace.substr(0, dot) + "." + slug + trace.substr(dot);
}

json::Object toJson(const Outcome &o, double lowerBound) {
  json::Object j{{"system", o.system}, {"config", o.config}, {"ok", o.ok}};
  if (!o.ok) {
    j["error"] = o.error;
    return j;
  }
  const sim::SimResult &r = o.result;
  j["step_s"] = r.stepTime;
  j["bubble_fraction"] = r.bubbleFraction;
  j["exposed_comm_s"] = r.exposedComm;
  j["comm_active_s"] = r.commActive;
  j["busy_s"] = r.busy;
  j["mfu"] = r.mfu;
  j["gpus"] = o.gpus;
  j["lower_bound_ratio"] = r.stepTime / lowerBound;
  j["peak_memory_bytes"] = o.peakMemory;
  j["inflight_microbatches"] = o.inflight;
  j["instructions"] = r.instructions;
  j["sim_wall_s"] = o.wall;
  if (o.baseline) {
    const sim::BaselineConfig &c = o.setting;
    j["setting"] = json::Object{{"ep", c.ep},
                                {"pp", c.pp},
                                {"vpp", c.vpp},
                                {"dp", c.ep * c.replicas},
                                {"replicas", c.replicas},
                                {"microbatches", c.microbatches},
                                {"recompute", c.recompute}};
  }
  return j;
}

void fillMemory(Outcome &o, const sched::Schedule &s) {
  for (size_t g = 0; g < s.groups.size(); ++g) {
    int inflight = 0;
    double peak = sched::peakMemory(s, static_cast<int>(g), &inflight);
    if (peak > o.peakMemory) {
      o.peakMemory = peak;
      o.inflight = inflight;
    }
  }
}
} // namespace

int simulateMain(int argc, char **argv) {
  cl::OptionCategory category("disagmoe simulate options");
  tools::PlannerFlags flags(category, int64_t(1) << 22, /*allowSelective=*/false);
  disagmoe::tools::NumberOpt<int64_t> inflight(
      "inflight",
      cl::desc("AF-Pipe micro-batches in flight per group (0: largest of 4p, "
               "3p, 2p that fits memory)"),
      cl::init(0), cl::cat(category));
  disagmoe::tools::NumberOpt<double> efficiency(
      "compute-efficiency", cl::desc("Fraction of peak FLOP/s compute reaches (default 1)"),
      cl::init(1.0), cl::cat(category));
  cl::opt<std::string> baselines(
      "baselines", cl::desc("Comma-separated: megatron, megatron-overlap, dualpipe, none"),
      cl::init("megatron,megatron-overlap,dualpipe"), cl::cat(category));
  disagmoe::tools::NumberOpt<int64_t> ep(
      "ep",
      cl::desc("Expert parallelism of the baselines' rows beside their tuned ones "
               "(default 16, two 8-GPU nodes, or the largest divisor of the model's expert "
               "count below it; must divide the expert count)"),
      cl::init(16), cl::cat(category));
  disagmoe::tools::NumberOpt<double> baselineBudget(
      "baseline-budget",
      cl::desc("Wall seconds each baseline's search may take (default 60; 0: no limit)"),
      cl::init(60.0), cl::cat(category));
  cl::opt<std::string> opTimes(
      "op-times",
      cl::desc("Measured per-op times (disagmoe-op-times JSON) in place of "
               "the roofline"),
      cl::init(""), cl::cat(category));
  cl::opt<std::string> layoutName(
      "layout",
      cl::desc("AF-Pipe rank layout: auto (searched), separate (attention GPUs first), packed "
               "(replica by replica)"),
      cl::init("auto"), cl::cat(category));
  cl::opt<std::string> distOptimizer(
      "distributed-optimizer",
      cl::desc(
          "on: reduce-scatter gradients + all-gather weights, optimizer state sharded (ZeRO-1; "
          "default); off: all-reduce, optimizer state replicated"),
      cl::init("on"), cl::cat(category));
  cl::opt<std::string> jsonOut("json", cl::desc("Write every figure to this JSON file"),
                               cl::init(""), cl::cat(category));
  cl::opt<std::string> traceOut("trace",
                                cl::desc("Write the AF-Pipe timeline (Chrome trace) to this file, "
                                         "and each baseline row's to FILE.<system>.json"),
                                cl::init(""), cl::cat(category));
  cl::HideUnrelatedOptions(category);
  if (!tools::parseCommandLine(argc, argv, "disagmoe simulate: AF-Pipe against the baselines\n",
                               "disagmoe simulate", /*valueChecksFollow=*/true))
    return 2;
  if (efficiency <= 0 || efficiency > 1)
    return fail("--compute-efficiency must be in (0, 1]");
  if (inflight < 0)
    return fail("--inflight must be >= 0 (0: the largest window that fits memory)");
  if (ep < 1)
    return fail("--ep must be >= 1");
  if (!(baselineBudget >= 0))
    return fail("--baseline-budget must be >= 0");
  std::vector<afpipe::Config::Layout> layouts;
  if (layoutName == "auto") {
    layouts = {afpipe::Config::Layout::Separate, afpipe::Config::Layout::Packed};
  } else {
    afpipe::Config::Layout l;
    if (!afpipe::parseLayout(layoutName, l))
      return fail("--layout: unknown layout '" + layoutName + "' (auto, separate, packed)");
    layouts = {l};
  }
  placement::Problem problem;
  placement::PlannerOptions &o = problem.options;
  if (llvm::Error e = flags.fill(o))
    return fail(llvm::toString(std::move(e)));
  cost::GradSyncOptions gradSync = o.gradSync;
  if (distOptimizer != "on" && distOptimizer != "off")
    return fail("--distributed-optimizer: expected on or off, got '" + distOptimizer + "'");
  gradSync.distributedOptimizer = distOptimizer == "on";
  // Baseline names are parsed now, not after the placement search and the AF-Pipe simulation.
  std::vector<std::pair<std::string, sim::Baseline>> baselineKinds;
  if (baselines != "none") {
    SmallVector<StringRef> names;
    StringRef(baselines).split(names, ',');
    for (StringRef name : names) {
      sim::Baseline kind;
      if (!sim::parseBaseline(name.str(), kind))
        return fail("--baselines: unknown baseline '" + name.str() +
                    "' (megatron, megatron-overlap, dualpipe)");
      baselineKinds.emplace_back(name.str(), kind);
    }
  }
  tools::exitIfParseOnly(); // the checks above need no file; those below look at the file system
  // Output paths are checked before the simulation (which can take minutes): a probe file created
  // and removed next to each, so a missing folder, a directory or /proc fails now, not after.
  for (auto [flag, path] :
       {std::pair<const char *, std::string>{"--json", jsonOut}, {"--trace", traceOut}}) {
    if (path.empty() || (path == "-" && std::string(flag) == "--json"))
      continue; // --json -: the JSON on standard output, instead of the text report
    if (path == "-")
      return fail(std::string(flag) + " -: the trace is one file, and standard output carries the "
                                      "report: give a file name");
    if (sys::fs::is_directory(path))
      return fail(std::string(flag) + " " + path + ": is a directory");
    // lstat: a symlink, FIFO (opening it blocks), device or socket is refused, never written
    // through.
    if (const std::string why = outputRefusal(path); !why.empty())
      return fail(std::string(flag) + " " + path + ": " + why);
    SmallString<256> dir(path);
    sys::path::remove_filename(dir);
    if (dir.empty())
      dir = ".";
    SmallString<256> probe;
    int fd = -1;
    if (std::error_code ec =
            sys::fs::createUniqueFile(dir + "/.disagmoe-write-check-%%%%%%", fd, probe))
      return fail(std::string(flag) + " " + path + ": cannot write there: " + ec.message());
    sys::fs::closeFile(fd);
    sys::fs::remove(probe);
  }

  std::string error;
  std::string configFile;
  if (auto read = tools::loadProblemInputs(flags.hardware, flags.cluster, flags.config, problem))
    configFile = std::move(*read);
  else
    return fail(llvm::toString(read.takeError()));
  sim::OpTimes times;
  if (!opTimes.empty() && !times.load(opTimes, error))
    return fail(error);
  // runtime/sim has no ring attention (no K/V ring over NVLink, one sequence per A-rank per
  // micro-batch), so the planner's context parallelism is pinned to cp 1 here; `disagmoe plan`
  // chooses cp (docs/placement.md, "Context parallelism").
  o.fixedCp = 1;
  o.cpPinnedByTool = true;
  const cost::ModelShape &m = problem.model;
  // Before any work: an EP above the expert count has no setting at all (each EP rank holds at
  // least one expert of a layer), and the baselines' searches would only report that at the end.
  // Only a given --ep: the default (16) is a setting for the larger models.
  if (ep.getNumOccurrences() && m.numExperts() > 0 && ep > m.numExperts())
    return fail(formatv("--ep {0} is more than the {1} experts of {2} (expert parallelism splits "
                        "a layer's experts over ranks: give --ep {1} or less)",
                        ep.getValue(), m.numExperts(), sys::path::filename(configFile))
                    .str());
  // EP ranks hold equal shares of a layer's experts, so EP divides the expert count: a given
  // --ep that does not is refused, and the default is the largest divisor up to 16.
  if (ep.getNumOccurrences() && m.numExperts() > 0 && m.numExperts() % ep != 0) {
    std::string divisors;
    for (int64_t d = 1; d <= m.numExperts(); ++d)
      if (m.numExperts() % d == 0)
        divisors += (divisors.empty() ? "" : ", ") + std::to_string(d);
    return fail(formatv("--ep {0} does not divide the {1} experts of {2} (each EP rank holds an "
                        "equal share of a layer's experts: give one of {3})",
                        ep.getValue(), m.numExperts(), sys::path::filename(configFile), divisors)
                    .str());
  }
  int64_t epDegree = ep;
  if (!ep.getNumOccurrences() && m.numExperts() > 0)
    while (m.numExperts() % epDegree != 0 || epDegree > m.numExperts())
      --epDegree;
  const cost::ClusterSpec &clu = problem.cluster;
  raw_ostream &os = jsonOut == "-" ? nulls() : outs(); // --json -: stdout holds the JSON only
  os << formatv("disagmoe simulate: {0} on {1} ({2} x {3}), seq-len {4}, {5} tokens per step\n",
                sys::path::filename(configFile), clu.name, clu.gpus(), clu.gpu.name, o.seqLen,
                o.globalTokens);
  os << "  context parallelism: cp 1 (the simulator does not model ring attention; `disagmoe plan` "
        "chooses cp)\n";

  // The roofline lower bound: the model's training FLOPs on every GPU of the cluster at peak.
  const sched::Hardware hw = afpipe::hardwareOf(clu);
  const int64_t sequences = o.globalTokens / o.seqLen;
  o.memory.zero1 = gradSync.distributedOptimizer;
  o.gradSync = gradSync;
  const afpipe::Config ac = search::baseOf(problem);
  double modelFlops = afpipe::workloadFromModel(m, clu, ac).modelFlops;
  const double lowerBound = modelFlops / (static_cast<double>(clu.gpus()) * clu.gpu.peakFlops);

  std::vector<Outcome> outcomes;
  sched::Schedule afSchedule;
  sim::SimResult afRun;
  // ---- DisagMoE: Z3 placement + AF-Pipe, refined on simulated step times ----
  // Z3's optimum assumes 2p micro-batches in flight fill the ring and every exchange crosses NICs;
  // the simulated search (passes/placement/search/PlanSearch.h) seeds from it and the roofline's
  // fastest candidates, in every rank layout, and climbs on simulated step times
  // (--no-search: Z3's optimum only, in the layout given).
  search::SearchResult found;
  {
    Outcome best;
    best.system = "disagmoe";
    auto t0 = std::chrono::steady_clock::now();
    placement::Solution z3 = placement::solveZ3(problem);
    search::SearchOptions so;
    so.base = ac;
    so.base.inflight = inflight;
    so.base.computeEfficiency = efficiency;
    so.opTimes = opTimes.empty() ? nullptr : &times;
    so.layouts = layouts;
    if (flags.noSearch) {
      so.seeds = 0;
      so.maxMoves = 0;
      so.layouts.resize(1);
    } else {
      so.seeds = static_cast<size_t>(flags.searchSeeds);
    }
    so.budgetSeconds = flags.searchBudget;
    found = search::searchPlan(problem, z3, so, !traceOut.empty());
    best.ok = found.ok;
    best.error = found.error;
    if (found.ok) {
      best.config = search::describe(found.best.config, found.best.layout);
      best.result = found.run;
      best.gpus = found.best.config.cand.gpus();
      fillMemory(best, found.schedule);
      afSchedule = found.schedule;
      afRun = found.run;
    }
    best.wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (found.ok) {
      os << formatv("DisagMoE configuration: Z3 optimum {0} ({1}; roofline {2:F4} s)\n",
                    z3.ok ? search::describe(found.seed.config, found.seed.layout) : z3.error,
                    found.seed.ok ? formatv("step {0:F4} s simulated", found.seed.simulated).str()
                                  : (found.seed.error.empty() ? std::string("not simulated")
                                                              : found.seed.error),
                    found.seed.predicted);
      os << formatv("  search: {0} configurations simulated in {1:F2} s; chosen {2} "
                    "(roofline {3:F4} s, simulated {4:F4} s, {5})\n",
                    found.trials.size(), found.seconds, found.best.origin, found.best.predicted,
                    found.best.simulated, found.why);
      if (found.pruned > 0)
        os << formatv("  of them {0} not simulated: their compute bound (the busiest group's FLOPs "
                      "at peak) exceeds the fastest step simulated before them\n",
                      found.pruned);
      if (found.budgetHit)
        os << "  note: the search stopped on its --search-budget before simulating every seed or "
              "converging\n";
      os << formatv("  gradient synchronisation: {0}\n", ac.gradSync.describe());
    }
    outcomes.push_back(best);
  }
  // ---- baselines: one search each, its fastest at --ep and its fastest overall ----
  std::vector<Outcome> tunedRows; // outcomes[i].tuned points here: reserved, never reallocated
  tunedRows.reserve(baselineKinds.size());
  for (const auto &[name, kind] : baselineKinds) {
    sim::BaselineSearchOptions so;
    so.gpus = clu.gpus();
    so.fixedEp = epDegree;
    so.base.seqLen = o.seqLen;
    so.base.sequencesPerStep = sequences;
    so.base.reserveBytes = o.reserveBytes;
    so.base.computeEfficiency = efficiency;
    so.base.gradSync = gradSync;
    so.base.memory.zero1 = gradSync.distributedOptimizer;
    so.recompute = flags.recompute == "on"    ? std::vector<bool>{true}
                   : flags.recompute == "off" ? std::vector<bool>{false}
                                              : std::vector<bool>{false, true};
    so.wallBudgetSeconds = baselineBudget;
    so.opTimes = opTimes.empty() ? nullptr : &times;
    const sim::BaselineSearchResult r = sim::searchBaseline(kind, m, hw, so);
    auto row = [&](const std::string &system, bool ok, const sim::BaselineTrial &t,
                   const std::string &why) {
      Outcome x;
      x.system = system;
      x.baseline = true;
      x.ok = ok;
      x.wall = r.seconds;
      if (!ok) {
        x.error = why;
        return x;
      }
      x.setting = t.config;
      x.result = t.result;
      x.gpus = clu.gpus();
      x.peakMemory = t.peakMemoryBytes;
      x.inflight = t.liveUnits;
      x.config = sim::describeSetting(t.config) +
                 formatv(", dp {0}", t.config.ep * t.config.replicas).str();
      return x;
    };
    // The row at --ep reports only settings with that EP (the tuned row has the search's error).
    std::string atEpWhy = "no configuration at ep " + std::to_string(epDegree) +
                          " satisfies the pipeline's integer constraints on this cluster and batch";
    if (!r.lastRefusalAtEp.empty())
      atEpWhy = r.lastRefusalAtEp;
    tunedRows.push_back(row(name + " (tuned)", r.ok, r.best, r.error));
    outcomes.push_back(row(name, r.okAtEp, r.atEp, atEpWhy));
    outcomes.back().tuned = &tunedRows.back();
    os << formatv("  {0} search: {1} configurations, {2} simulated, {3} over memory, {4} bounded "
                  "out, {5:F2} s{6}\n",
                  name, r.candidates, r.simulated, r.refused, r.pruned, r.seconds,
                  r.budgetHit ? " (stopped at the --baseline-budget)" : "");
  }

  os << formatv("roofline lower bound: {0:F4} s ({1:F1} PFLOP of training work on {2} GPUs at "
                "{3:F1} TFLOP/s)\n",
                lowerBound, modelFlops / 1e15, clu.gpus(), clu.gpu.peakFlops / 1e12);
  os << formatv("{0,-25} {1,9} {2,8} {3,8} {4,10} {5,7} {6,8} {7,9}  {8}\n", "system", "step s",
                "vs LB", "bubble", "exposed s", "MFU", "speed-up", "exp. cut", "configuration");
  const Outcome &af = outcomes.front();
  std::vector<const Outcome *> rows;
  for (const Outcome &x : outcomes) {
    rows.push_back(&x);
    if (x.tuned)
      rows.push_back(x.tuned);
  }
  for (const Outcome *xp : rows) {
    const Outcome &x = *xp;
    if (!x.ok) {
      os << formatv("{0,-25} {1}\n", x.system, "failed: " + x.error);
      continue;
    }
    const sim::SimResult &r = x.result;
    std::string speed = "-", cut = "-";
    if (af.ok && &x != &af) {
      speed = formatv("{0:F2}x", r.stepTime / af.result.stepTime).str();
      cut = r.exposedComm > 0
                ? formatv("{0:F0}%", 100 * (1 - af.result.exposedComm / r.exposedComm)).str()
                : "-";
    }
    os << formatv("{0,-25} {1,9:F4} {2,8:F2} {3,8:F3} {4,10:F4} {5,7:F3} {6,8} {7,9}  {8}\n",
                  x.system, r.stepTime, r.stepTime / lowerBound, r.bubbleFraction, r.exposedComm,
                  r.mfu, speed, cut, x.config);
  }
  if (af.ok)
    os << formatv("AF-Pipe plan: {0} instructions over {1} groups, simulated in {2:F3} s (build + "
                  "order + verify + "
                  "replay of every configuration tried {3:F2} s); peak memory {4:F1} GB with {5} "
                  "micro-batches in "
                  "flight\n",
                  af.result.instructions, afSchedule.groups.size(), af.result.wallSeconds, af.wall,
                  af.peakMemory / 1e9, af.inflight);
  if (!traceOut.empty() && af.ok) {
    if (!sim::writeChromeTrace(afSchedule, afRun, traceOut, error))
      return fail(error);
    os << "trace: " << traceOut << "\n";
  }
  // Every baseline row's timeline too, in the same layout, beside the AF-Pipe one.
  if (!traceOut.empty())
    for (const Outcome *xp : rows) {
      const Outcome &x = *xp;
      if (!x.baseline || !x.ok)
        continue;
      const std::string path = baselineTracePath(traceOut, x.system);
      sched::Schedule bs;
      if (!sim::buildBaseline(m, hw, x.setting, bs, error, /*verify=*/false))
        return fail(x.system + ": " + error);
      sim::SimOptions bo;
      bo.opTimes = opTimes.empty() ? nullptr : &times;
      bo.recordTimes = true;
      const sim::SimResult br = sim::simulate(bs, bo);
      if (!br.ok)
        return fail(x.system + ": " + br.error);
      if (!sim::writeChromeTrace(bs, br, path, error))
        return fail(error);
      os << "trace (" << x.system << "): " << path << "\n";
    }
  if (!jsonOut.empty()) {
    json::Array systems;
    for (const Outcome &x : outcomes) {
      json::Object j = toJson(x, lowerBound);
      if (x.tuned)
        j["tuned"] = toJson(*x.tuned, lowerBound);
      systems.push_back(std::move(j));
    }
    json::Object root{{"model", sys::path::filename(configFile).str()},
                      {"cluster", clu.name},
                      {"gpus", clu.gpus()},
                      {"seq_len", o.seqLen},
                      {"global_tokens", o.globalTokens},
                      {"compute_efficiency", efficiency.getValue()},
                      {"lower_bound_s", lowerBound},
                      {"baseline_ep", epDegree},
                      {"model_flops", modelFlops},
                      {"systems", std::move(systems)}};
    if (jsonOut == "-") { // as `disagmoe plan --json -`
      outs() << formatv("{0:2}", json::Value(std::move(root))) << "\n";
      return af.ok ? 0 : fail("AF-Pipe: " + af.error);
    }
    // Checked again at the open: a path that became a FIFO meanwhile would block it.
    if (const std::string why = outputRefusal(jsonOut); !why.empty())
      return fail("--json " + jsonOut + ": " + why);
    std::error_code ec;
    raw_fd_ostream f(jsonOut, ec);
    if (ec)
      return fail(jsonOut + ": cannot write: " + ec.message());
    f << formatv("{0:2}", json::Value(std::move(root))) << "\n";
  }
  return af.ok ? 0 : fail("AF-Pipe: " + af.error);
}
