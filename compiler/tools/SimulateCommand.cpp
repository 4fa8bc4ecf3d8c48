//===- SimulateCommand.cpp - `disagmoe simulate`: AF-Pipe against the baselines at cluster scale
//----===//
//
//   disagmoe simulate --config MODEL.json --cluster CLUSTER.yaml --seq-len S [options]
//
// Builds the model's cost shape from its config.json (frontends/config), picks the DisagMoE
// configuration with the Z3 placement (passes/placement/solver; any choice can be fixed on the
// command line), builds and verifies its AF-Pipe schedule (passes/schedule/AfPipe.h), and replays
// it on the simulator (runtime/sim) beside the baselines (runtime/sim/Baselines.h: Megatron EP +
// interleaved 1F1B with and without all-to-all overlap, DualPipe), each tuned over its pipeline
// depth on the same model, cluster and global batch. Prints step times, speed-ups, bubbles,
// exposed communication, MFU and the ratio to the roofline lower bound; --json writes them all,
// --trace the AF-Pipe timeline (Chrome trace format). Errors: one line, exit code 1.
//
//===----------------------------------------------------------------------===//
#include "compiler/tools/CommandLine.h"
#include "compiler/tools/ProblemInputs.h"
#include "passes/placement/search/PlanSearch.h"
#include "passes/placement/solver/Planner.h"
#include "passes/schedule/AfPipe.h"

#include "runtime/cost/Hardware.h"
#include "runtime/cost/Roofline.h"
#include "runtime/io/FileKind.h"
#include "runtime/sim/Baselines.h"
#include "runtime/sim/Simulator.h"

#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

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
  sim::SimResult result;
  int64_t gpus = 0, inflight = 0;
  double peakMemory = 0, wall = 0;
};

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
  cl::opt<std::string> config("config", cl::desc("Model config.json (samples/configs/)"),
                              cl::Required, cl::cat(category));
  cl::opt<std::string> clusterPath("cluster", cl::desc("Cluster YAML (samples/clusters/)"),
                                   cl::Required, cl::cat(category));
  cl::opt<int64_t> seqLen("seq-len", cl::desc("Tokens per sequence"), cl::Required,
                          cl::cat(category));
  cl::opt<int64_t> globalTokens("global-tokens",
                                cl::desc("Tokens per training step (default 2^22)"),
                                cl::init(int64_t(1) << 22), cl::cat(category));
  cl::opt<std::string> hardware("hardware", cl::desc("GPU/NIC catalog JSON"),
                                cl::init(cost::defaultHardwareCatalogPath()), cl::cat(category));
  cl::opt<std::string> recompute("recompute", cl::desc("Activation recomputation: auto, on, off"),
                                 cl::init("auto"), cl::cat(category));
  cl::opt<int64_t> groups("groups", cl::desc("Fix the groups per side p"), cl::init(0),
                          cl::cat(category));
  cl::opt<int64_t> attnGpus("attn-gpus", cl::desc("Fix the attention GPUs"), cl::init(0),
                            cl::cat(category));
  cl::opt<int64_t> ffnGpus("ffn-gpus", cl::desc("Fix the FFN GPUs"), cl::init(0),
                           cl::cat(category));
  cl::opt<int64_t> microbatches("microbatches", cl::desc("Fix the micro-batches per step"),
                                cl::init(0), cl::cat(category));
  cl::opt<int64_t> replicas("replicas", cl::desc("Fix the pipeline replicas"), cl::init(0),
                            cl::cat(category));
  cl::opt<int64_t> inflight("inflight",
                            cl::desc("AF-Pipe micro-batches in flight per group (0: largest of 4p, "
                                     "3p, 2p that fits memory)"),
                            cl::init(0), cl::cat(category));
  cl::opt<double> reserveGb("reserve-gb", cl::desc("Per-GPU memory not usable by the model (GB)"),
                            cl::init(4.0), cl::cat(category));
  cl::opt<double> timeLimit("time-limit", cl::desc("Z3 time limit in seconds"), cl::init(60.0),
                            cl::cat(category));
  cl::opt<double> efficiency("compute-efficiency",
                             cl::desc("Fraction of peak FLOP/s compute reaches (default 1)"),
                             cl::init(1.0), cl::cat(category));
  cl::opt<std::string> baselines(
      "baselines", cl::desc("Comma-separated: megatron, megatron-overlap, dualpipe, none"),
      cl::init("megatron,megatron-overlap,dualpipe"), cl::cat(category));
  cl::opt<int64_t> ep("ep",
                      cl::desc("Expert parallelism of the baselines (default 16, two 8-GPU nodes)"),
                      cl::init(16), cl::cat(category));
  cl::opt<std::string> opTimes(
      "op-times",
      cl::desc("Measured per-op times (disagmoe-op-times JSON) in place of "
               "the roofline"),
      cl::init(""), cl::cat(category));
  cl::opt<bool> noSearch("no-search",
                         cl::desc("Take the Z3 optimum as is (no refinement on simulated times)"),
                         cl::cat(category));
  cl::opt<int64_t> searchSeeds(
      "search-seeds",
      cl::desc("Roofline candidates the simulated search starts from beside Z3's (default 16)"),
      cl::init(16), cl::cat(category));
  cl::opt<std::string> layoutName(
      "layout",
      cl::desc("AF-Pipe rank layout: auto (searched), separate (attention GPUs first), packed "
               "(replica by replica)"),
      cl::init("auto"), cl::cat(category));
  cl::opt<std::string> gradReduce(
      "grad-reduce", cl::desc("Gradient reduction dtype on the wire, every system: fp32, bf16"),
      cl::init("fp32"), cl::cat(category));
  cl::opt<std::string> distOptimizer(
      "distributed-optimizer",
      cl::desc(
          "on: reduce-scatter gradients + all-gather weights, optimizer state sharded (ZeRO-1; "
          "default); off: all-reduce, optimizer state replicated"),
      cl::init("on"), cl::cat(category));
  cl::opt<std::string> jsonOut("json", cl::desc("Write every figure to this JSON file"),
                               cl::init(""), cl::cat(category));
  cl::opt<std::string> traceOut("trace",
                                cl::desc("Write the AF-Pipe timeline (Chrome trace) to this file"),
                                cl::init(""), cl::cat(category));
  cl::HideUnrelatedOptions(category);
  if (!tools::parseCommandLine(argc, argv, "disagmoe simulate: AF-Pipe against the baselines\n",
                               "disagmoe simulate"))
    return 2;
  if (efficiency <= 0 || efficiency > 1)
    return fail("--compute-efficiency must be in (0, 1]");
  if (inflight < 0 || ep < 1)
    return fail("--inflight must be >= 0 and --ep >= 1");
  if (searchSeeds < 0)
    return fail("--search-seeds must be >= 0");
  std::vector<afpipe::Config::Layout> layouts;
  if (layoutName == "auto") {
    layouts = {afpipe::Config::Layout::Separate, afpipe::Config::Layout::Packed};
  } else {
    afpipe::Config::Layout l;
    if (!afpipe::parseLayout(layoutName, l))
      return fail("--layout: unknown layout '" + layoutName + "' (auto, separate, packed)");
    layouts = {l};
  }
  cost::GradSyncOptions gradSync;
  if (!cost::parseReduceDtype(gradReduce, gradSync.reduceBytes))
    return fail("--grad-reduce: unknown dtype '" + gradReduce + "' (fp32, bf16)");
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
  // Output paths are checked before the simulation (which can take minutes): a probe file created
  // and removed next to each, so a missing folder, a directory or /proc fails now, not after.
  for (auto [flag, path] :
       {std::pair<const char *, std::string>{"--json", jsonOut}, {"--trace", traceOut}}) {
    if (path.empty())
      continue;
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

  placement::Problem problem;
  std::string error;
  std::string configFile;
  if (auto read = tools::loadProblemInputs(hardware, clusterPath, config, problem))
    configFile = std::move(*read);
  else
    return fail(llvm::toString(read.takeError()));
  sim::OpTimes times;
  if (!opTimes.empty() && !times.load(opTimes, error))
    return fail(error);
  placement::PlannerOptions &o = problem.options;
  o.seqLen = seqLen;
  o.globalTokens = globalTokens;
  if (auto mode = tools::parseRecompute(recompute, /*allowSelective=*/false))
    o.recompute = *mode;
  else
    return fail(llvm::toString(mode.takeError()));
  o.fixedGroups = groups;
  o.fixedAttnGpus = attnGpus;
  o.fixedFfnGpus = ffnGpus;
  o.fixedMicrobatches = microbatches;
  o.fixedReplicas = replicas;
  // runtime/sim has no ring attention (no K/V ring over NVLink, one sequence per A-rank per
  // micro-batch), so the planner's context parallelism is pinned to cp 1 here; `disagmoe plan`
  // chooses cp (docs/placement.md, "Context parallelism").
  o.fixedCp = 1;
  o.reserveBytes = reserveGb * 1e9;
  o.timeLimitSeconds = timeLimit;
  const cost::ModelShape &m = problem.model;
  const cost::ClusterSpec &clu = problem.cluster;
  raw_ostream &os = outs();
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
    if (noSearch) {
      so.seeds = 0;
      so.maxMoves = 0;
      so.layouts.resize(1);
    } else {
      so.seeds = static_cast<size_t>(searchSeeds);
    }
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
      os << formatv("  gradient synchronisation: {0}\n", ac.gradSync.describe());
    }
    outcomes.push_back(best);
  }
  // ---- baselines, each at its best pipeline depth ----
  for (const auto &[name, kind] : baselineKinds) {
    Outcome best;
    best.system = name;
    best.error = "no configuration fits memory";
    double bestStep = std::numeric_limits<double>::infinity();
    sim::BaselineConfig base;
    base.ep = ep;
    base.seqLen = o.seqLen;
    base.sequencesPerStep = sequences;
    base.reserveBytes = o.reserveBytes;
    base.computeEfficiency = efficiency;
    base.gradSync = gradSync;
    base.memory.zero1 = gradSync.distributedOptimizer;
    std::vector<bool> rcs = recompute == "on"    ? std::vector<bool>{true}
                            : recompute == "off" ? std::vector<bool>{false}
                                                 : std::vector<bool>{false, true};
    std::string lastError;
    for (bool rc : rcs) {
      base.recompute = rc;
      for (const sim::BaselineConfig &bc : sim::baselineCandidates(kind, m, clu.gpus(), base)) {
        auto t0 = std::chrono::steady_clock::now();
        sched::Schedule s;
        if (!sim::buildBaseline(m, hw, bc, s, error)) {
          lastError = error;
          continue;
        }
        sim::SimOptions so;
        so.opTimes = opTimes.empty() ? nullptr : &times;
        sim::SimResult r = sim::simulate(s, so);
        if (!r.ok) {
          lastError = r.error;
          continue;
        }
        if (r.stepTime < bestStep) {
          bestStep = r.stepTime;
          best.ok = true;
          best.error.clear();
          best.result = r;
          best.gpus = clu.gpus();
          best.peakMemory = 0;
          fillMemory(best, s);
          best.config =
              formatv("pp {0}, vpp {1}, ep {2}, dp {3}, m {4}, recompute {5}", bc.pp, bc.vpp, bc.ep,
                      bc.replicas * bc.ep, bc.microbatches, rc ? "on" : "off")
                  .str();
        }
        best.wall += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      }
      if (best.ok)
        break; // recomputation only when nothing fits without it
    }
    if (!best.ok && !lastError.empty())
      best.error = lastError;
    outcomes.push_back(best);
  }

  os << formatv("roofline lower bound: {0:F4} s ({1:F1} PFLOP of training work on {2} GPUs at "
                "{3:F1} TFLOP/s)\n",
                lowerBound, modelFlops / 1e15, clu.gpus(), clu.gpu.peakFlops / 1e12);
  os << formatv("{0,-17} {1,9} {2,8} {3,8} {4,10} {5,7} {6,8} {7,9}  {8}\n", "system", "step s",
                "vs LB", "bubble", "exposed s", "MFU", "speed-up", "exp. cut", "configuration");
  const Outcome &af = outcomes.front();
  for (const Outcome &x : outcomes) {
    if (!x.ok) {
      os << formatv("{0,-17} {1}\n", x.system, "failed: " + x.error);
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
    os << formatv("{0,-17} {1,9:F4} {2,8:F2} {3,8:F3} {4,10:F4} {5,7:F3} {6,8} {7,9}  {8}\n",
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
  if (!jsonOut.empty()) {
    json::Array systems;
    for (const Outcome &x : outcomes)
      systems.push_back(toJson(x, lowerBound));
    json::Object root{{"model", sys::path::filename(configFile).str()},
                      {"cluster", clu.name},
                      {"gpus", clu.gpus()},
                      {"seq_len", o.seqLen},
                      {"global_tokens", o.globalTokens},
                      {"compute_efficiency", efficiency.getValue()},
                      {"lower_bound_s", lowerBound},
                      {"model_flops", modelFlops},
                      {"systems", std::move(systems)}};
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
