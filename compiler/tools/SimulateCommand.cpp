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
#include "compiler/tools/ProblemInputs.h"
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
  cl::opt<std::string> jsonOut("json", cl::desc("Write every figure to this JSON file"),
                               cl::init(""), cl::cat(category));
  cl::opt<std::string> traceOut("trace",
                                cl::desc("Write the AF-Pipe timeline (Chrome trace) to this file"),
                                cl::init(""), cl::cat(category));
  cl::HideUnrelatedOptions(category);
  if (!cl::ParseCommandLineOptions(argc, argv, "disagmoe simulate: AF-Pipe against the baselines\n",
                                   &errs()))
    return 2;
  if (efficiency <= 0 || efficiency > 1)
    return fail("--compute-efficiency must be in (0, 1]");
  if (inflight < 0 || ep < 1)
    return fail("--inflight must be >= 0 and --ep >= 1");
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
  afpipe::Config ac;
  ac.seqLen = o.seqLen;
  ac.sequencesPerStep = sequences;
  double modelFlops = afpipe::workloadFromModel(m, clu, ac).modelFlops;
  const double lowerBound = modelFlops / (static_cast<double>(clu.gpus()) * clu.gpu.peakFlops);

  std::vector<Outcome> outcomes;
  sched::Schedule afSchedule;
  sim::SimResult afRun;
  // ---- DisagMoE: Z3 placement + AF-Pipe, refined on simulated step times ----
  // The Z3 optimum assumes 2p micro-batches in flight fill the ring; the simulator shows the ring
  // needs more when exchanges take as long as compute, so, as DisagMoE refines its roofline start
  // by local search on measured stage times, the Z3 optima with recomputation off and on and with
  // p halved or doubled are simulated too and the fastest wins (--no-search: the Z3 optimum only).
  {
    Outcome best;
    best.system = "disagmoe";
    best.error = "no configuration";
    int searched = 0;
    auto runOne = [&](const placement::Problem &pr, Outcome &out, sched::Schedule &sched,
                      sim::SimResult &run) {
      placement::Solution sol = placement::solveZ3(pr);
      if (!sol.ok) {
        out.error = sol.error;
        return false;
      }
      const placement::Config &c = sol.config;
      afpipe::Config cfg = ac;
      cfg.replicas = c.cand.replicas;
      cfg.groups = c.cand.groups;
      cfg.attnRanks = c.cand.attnRanks;
      cfg.ffnRanks = c.cand.ffnRanks;
      cfg.microbatches = c.cand.microbatches;
      cfg.attnRecompute = c.attnRecompute;
      cfg.ffnRecompute = c.ffnRecompute;
      cfg.attnNics = c.attnNics;
      cfg.ffnNics = c.ffnNics;
      cfg.nicBandwidth = clu.nic.bandwidth;
      cfg.pcieBandwidth = clu.gpu.pcieBandwidth;
      cfg.inflight = inflight;
      cfg.reserveBytes = o.reserveBytes;
      cfg.computeEfficiency = efficiency;
      out.config =
          formatv(
              "{0}:{1} GPUs, {2}:{3} NICs, p {4}, r {5}, dA {6}, eF {7}, m {8}, recompute {9}/{10}",
              c.cand.attnGpus(), c.cand.ffnGpus(), c.attnNics, c.ffnNics, c.cand.groups,
              c.cand.replicas, c.cand.attnRanks, c.cand.ffnRanks, c.cand.microbatches,
              cost::recomputationName(c.attnRecompute), cost::recomputationName(c.ffnRecompute))
              .str();
      out.gpus = c.cand.gpus();
      if (!afpipe::buildAfPipe(afpipe::workloadFromModel(m, clu, cfg), hw, cfg, sched, error)) {
        out.error = error;
        return false;
      }
      sim::SimOptions so;
      so.opTimes = opTimes.empty() ? nullptr : &times;
      so.recordTimes = !traceOut.empty();
      run = sim::simulate(sched, so);
      out.ok = run.ok;
      out.error = run.error;
      out.result = run;
      fillMemory(out, sched);
      return out.ok;
    };
    auto t0 = std::chrono::steady_clock::now();
    Outcome first;
    if (runOne(problem, first, afSchedule, afRun))
      best = first;
    else
      best.error = first.error;
    if (!noSearch) {
      int64_t p0 = groups;
      if (!p0) {
        placement::Solution z = placement::solveZ3(problem);
        p0 = z.ok ? z.config.cand.groups : 1;
      }
      std::vector<int64_t> ps{p0};
      if (!groups) {
        if (p0 / 2 >= 1)
          ps.push_back(p0 / 2);
        if (p0 * 2 <= m.numLayers())
          ps.push_back(p0 * 2);
      }
      // Auto: each side's lightest level that fits (the planner's choice), beside none and full.
      std::vector<placement::Recompute> rcs{placement::Recompute::Auto, placement::Recompute::Never,
                                            placement::Recompute::Always};
      if (recompute != "auto")
        rcs = {o.recompute};
      for (int64_t pg : ps)
        for (placement::Recompute rc : rcs) {
          placement::Problem pr = problem;
          pr.options.fixedGroups = pg;
          pr.options.recompute = rc;
          Outcome out;
          sched::Schedule sc;
          sim::SimResult run;
          ++searched;
          if (runOne(pr, out, sc, run) && (!best.ok || run.stepTime < best.result.stepTime)) {
            best = out;
            afSchedule = std::move(sc);
            afRun = std::move(run);
          }
        }
    }
    best.system = "disagmoe";
    best.wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (best.ok && searched)
      os << formatv("DisagMoE configuration: Z3 optimum {0} ({1}); best of {2} Z3 optima around it "
                    "on simulated "
                    "times: {3}\n",
                    first.config,
                    first.ok ? formatv("step {0:F4} s simulated", first.result.stepTime).str()
                             : first.error,
                    searched + 1, best.config);
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
