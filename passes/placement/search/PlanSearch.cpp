//===- PlanSearch.cpp - DisagMoE configurations scored by the simulator -------------===//
#include "passes/placement/search/PlanSearch.h"

#include "passes/schedule/AfPipeBound.h"

#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <set>
#include <thread>
#include <tuple>

namespace disagmoe::search {

using Layout = afpipe::Config::Layout;

afpipe::Config baseOf(const placement::Problem &problem) {
  const placement::PlannerOptions &o = problem.options;
  afpipe::Config base;
  base.seqLen = o.seqLen;
  base.sequencesPerStep = o.globalTokens / o.seqLen;
  base.reserveBytes = o.reserveBytes;
  base.memory = o.memory;
  base.gradSync = o.gradSync;
  return base;
}

afpipe::Config toAfPipe(const placement::Config &c, const placement::Problem &problem,
                        const afpipe::Config &base, Layout layout) {
  afpipe::Config cfg = base;
  cfg.replicas = c.cand.replicas;
  cfg.groups = c.cand.groups;
  cfg.attnRanks = c.cand.attnRanks;
  cfg.ffnRanks = c.cand.ffnRanks;
  cfg.microbatches = c.cand.microbatches;
  cfg.attnRecompute = c.attnRecompute;
  cfg.ffnRecompute = c.ffnRecompute;
  cfg.attnNics = c.attnNics;
  cfg.ffnNics = c.ffnNics;
  cfg.nicBandwidth = problem.cluster.nic.bandwidth;
  cfg.pcieBandwidth = problem.cluster.gpu.pcieBandwidth;
  cfg.layout = layout;
  return cfg;
}

std::string describe(const placement::Config &c, Layout layout) {
  return llvm::formatv(
             "{0}:{1} GPUs, {2}:{3} NICs, p {4}, r {5}, dA {6}, eF {7}, m {8}, recompute {9}/{10}, "
             "layout {11}",
             c.cand.attnGpus(), c.cand.ffnGpus(), c.attnNics, c.ffnNics, c.cand.groups,
             c.cand.replicas, c.cand.attnRanks, c.cand.ffnRanks, c.cand.microbatches,
             cost::recomputationName(c.attnRecompute), cost::recomputationName(c.ffnRecompute),
             afpipe::toString(layout))
      .str();
}

namespace {

/// Packed layout: each GPU keeps its own NIC share, so the NIC counts are the GPU counts (every
/// NIC of the nodes used; the cluster has one share per GPU).
placement::Config withLayoutNics(placement::Config c, const placement::Problem &problem,
                                 Layout layout) {
  if (layout == Layout::Packed) {
    const double perGpu = static_cast<double>(problem.cluster.nicsPerNode) /
                          static_cast<double>(std::max<int64_t>(1, problem.cluster.gpusPerNode));
    c.attnNics = static_cast<int64_t>(perGpu * static_cast<double>(c.cand.attnGpus()) + 0.5);
    c.ffnNics = static_cast<int64_t>(perGpu * static_cast<double>(c.cand.ffnGpus()) + 0.5);
  }
  return c;
}

struct Job {
  placement::Config config;
  Layout layout;
  std::string origin;
  int64_t inflight = 0;
};

/// The schedule and simulation of the fastest trial so far (the smallest (step, trial index), the
/// order in which searchPlan picks its winner), kept so that the winner is not built and
/// simulated a second time: the build and the simulator are deterministic, so the kept ones are
/// the ones a rebuild would give.
struct Kept {
  bool ok = false;
  double simulated = 0;
  size_t trial = 0;     ///< index in SearchResult::trials
  int64_t inflight = 0; ///< the job's window override (0: by memory)
  sched::Schedule schedule;
  sim::SimResult run;
};

struct Runner {
  const placement::Problem &problem;
  const SearchOptions &o;
  const sched::Hardware hw;
  SearchResult &res;
  std::set<std::tuple<int64_t, int64_t, int64_t, int64_t, int64_t, int, int, int, int64_t>> seen;
  std::mutex keptMutex;
  Kept kept;

  std::chrono::steady_clock::time_point deadline;
  std::atomic<bool> skipped{false};
  std::atomic<int64_t> pruned{0};

  Runner(const placement::Problem &p, const SearchOptions &opt, SearchResult &r)
      : problem(p), o(opt), hw(afpipe::hardwareOf(p.cluster)), res(r),
        deadline(std::chrono::steady_clock::now() +
                 std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                     std::chrono::duration<double>(opt.budgetSeconds))) {}

  /// Keeps `s` and `r` when they are the fastest so far (the lowest step, then the lowest trial
  /// index: the tie rule of bestIndex and of the climb). Safe on several threads.
  void keepIfFastest(size_t trial, int64_t inflight, sched::Schedule &s, sim::SimResult &r) {
    std::lock_guard<std::mutex> lock(keptMutex);
    if (kept.ok &&
        (kept.simulated < r.stepTime || (kept.simulated == r.stepTime && kept.trial < trial)))
      return;
    kept.ok = true;
    kept.simulated = r.stepTime;
    kept.trial = trial;
    kept.inflight = inflight;
    kept.schedule = std::move(s);
    kept.run = std::move(r);
  }

  /// Builds (unverified) and simulates one configuration, the search's trial number `trial`;
  /// keeps its schedule when it is the fastest so far. Safe on several threads.
  Trial evaluate(const Job &job, size_t trial) {
    Trial t;
    t.config = job.config;
    t.layout = job.layout;
    t.origin = job.origin;
    t.predicted = placement::evaluate(problem, job.config).stepTime;
    afpipe::Config cfg = toAfPipe(job.config, problem, o.base, job.layout);
    if (job.inflight > 0)
      cfg.inflight = job.inflight;
    sched::Schedule s;
    std::string error;
    const afpipe::Workload work = afpipe::workloadFromModel(problem.model, problem.cluster, cfg);
    if (!afpipe::buildAfPipe(work, hw, cfg, s, error, /*verify=*/false)) {
      t.error = error;
      return t;
    }
    for (size_t g = 0; g < s.groups.size(); ++g) {
      int live = 0;
      double peak = sched::peakMemory(s, static_cast<int>(g), &live);
      if (peak > t.peakMemory) {
        t.peakMemory = peak;
        t.inflight = live;
      }
    }
    if (s.capacityBytes > 0 && t.peakMemory > s.capacityBytes) {
      t.error = llvm::formatv("peak memory {0:F1} GB exceeds the usable {1:F1} GB",
                              t.peakMemory / 1e9, s.capacityBytes / 1e9)
                    .str();
      return t;
    }
    sim::SimOptions so;
    so.opTimes = o.opTimes;
    sim::SimResult r = sim::simulate(s, so);
    t.ok = r.ok;
    t.error = r.error;
    t.simulated = r.ok ? r.stepTime : 0;
    if (r.ok)
      keepIfFastest(trial, job.inflight, s, r);
    return t;
  }

  /// Runs the jobs not tried before, on up to hardware_concurrency threads; their trials are
  /// appended in job order (so the result does not depend on the thread count). Returns the
  /// index of each job's trial, -1 for one already tried.
  std::vector<int> run(std::vector<Job> jobs) {
    std::vector<int> index(jobs.size(), -1);
    std::vector<size_t> todo;
    for (size_t k = 0; k < jobs.size(); ++k) {
      jobs[k].config = withLayoutNics(jobs[k].config, problem, jobs[k].layout);
      const placement::Config &c = jobs[k].config;
      auto key = std::make_tuple(c.cand.replicas, c.cand.groups, c.cand.attnRanks, c.cand.ffnRanks,
                                 c.cand.microbatches, static_cast<int>(c.attnRecompute),
                                 static_cast<int>(c.ffnRecompute), static_cast<int>(jobs[k].layout),
                                 jobs[k].inflight * 1000000 + c.attnNics);
      if (seen.insert(key).second)
        todo.push_back(k);
    }
    std::vector<Trial> out(todo.size());
    // Best bound first: each job's compute bound (afpipe::computeBoundSeconds; none with measured
    // op times, which replace the FLOP model), the search's first job (Z3's optimum) always
    // first. A job whose bound exceeds the fastest step simulated so far cannot be strictly
    // faster, so it cannot become the winner (ties go to the lower trial index, and a pruned job
    // is never equal): it is not simulated. Trials keep their job order whatever the order of
    // evaluation, so the winner is the one a full evaluation picks; only how many are pruned
    // depends on the threads' timing.
    std::vector<double> bound(todo.size(), 0);
    if (!o.opTimes)
      for (size_t i = 0; i < todo.size(); ++i) {
        const Job &job = jobs[todo[i]];
        const afpipe::Config cfg = toAfPipe(job.config, problem, o.base, job.layout);
        bound[i] = afpipe::computeBoundSeconds(
            afpipe::workloadFromModel(problem.model, problem.cluster, cfg), cfg, hw);
      }
    std::vector<size_t> order(todo.size());
    for (size_t i = 0; i < order.size(); ++i)
      order[i] = i;
    const size_t fixedFirst = res.trials.empty() ? 1 : 0;
    if (order.size() > fixedFirst)
      std::stable_sort(order.begin() + fixedFirst, order.end(),
                       [&](size_t a, size_t b) { return bound[a] < bound[b]; });
    std::mutex fastestMutex;
    double fastest = 1e300; // the fastest simulated step so far, previous batches included
    for (const Trial &t : res.trials)
      if (t.ok)
        fastest = std::min(fastest, t.simulated);
    std::atomic<size_t> next{0};
    // A job that would start after the deadline is not simulated (the first job of the search,
    // Z3's optimum, always runs), so the budget bounds the seeds as well as the climb.
    auto worker = [&] {
      for (size_t k = next++; k < todo.size(); k = next++) {
        const size_t i = order[k];
        const Job &job = jobs[todo[i]];
        auto notSimulated = [&](const std::string &why) {
          out[i].config = job.config;
          out[i].layout = job.layout;
          out[i].origin = job.origin;
          out[i].error = "not simulated: " + why;
        };
        if (!res.trials.empty() || i > 0) {
          if (std::chrono::steady_clock::now() >= deadline) {
            notSimulated("the search's time budget was spent");
            skipped = true;
            continue;
          }
          double best;
          {
            std::lock_guard<std::mutex> lock(fastestMutex);
            best = fastest;
          }
          // The margin covers the rounding of two sums of the same FLOPs in different orders.
          if (bound[i] * (1 - 1e-9) > best) {
            notSimulated(llvm::formatv("its compute bound {0:F4} s exceeds the fastest simulated "
                                       "step {1:F4} s",
                                       bound[i], best)
                             .str());
            out[i].predicted = placement::evaluate(problem, job.config).stepTime;
            ++pruned;
            continue;
          }
        }
        out[i] = evaluate(job, res.trials.size() + i);
        if (out[i].ok) {
          std::lock_guard<std::mutex> lock(fastestMutex);
          fastest = std::min(fastest, out[i].simulated);
        }
      }
    };
    const size_t threads =
        std::min<size_t>(todo.size(), std::max(1u, std::thread::hardware_concurrency()));
    std::vector<std::thread> pool;
    for (size_t t = 1; t < threads; ++t)
      pool.emplace_back(worker);
    worker();
    for (std::thread &t : pool)
      t.join();
    for (size_t i = 0; i < todo.size(); ++i) {
      index[todo[i]] = static_cast<int>(res.trials.size());
      res.trials.push_back(std::move(out[i]));
    }
    return index;
  }
  int bestIndex() const {
    int best = -1;
    for (size_t i = 0; i < res.trials.size(); ++i)
      if (res.trials[i].ok && (best < 0 || res.trials[i].simulated < res.trials[best].simulated))
        best = static_cast<int>(i);
    return best;
  }
};

const cost::Recomputation kLevels[] = {cost::Recomputation::None, cost::Recomputation::Selective,
                                       cost::Recomputation::Full, cost::Recomputation::Redispatch};

} // namespace

SearchResult searchPlan(const placement::Problem &problem, const placement::Solution &z3,
                        const SearchOptions &o, bool recordTimes) noexcept {
  const auto t0 = std::chrono::steady_clock::now();
  auto elapsed = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  SearchResult res;
  Runner run(problem, o, res);
  // 1-2. Seeds: Z3's optimum first (its simulation is reported beside the winner), then the
  // roofline's fastest candidates, each in every layout.
  std::vector<Job> seeds;
  if (z3.ok)
    for (Layout layout : o.layouts)
      seeds.push_back({z3.config, layout, "z3"});
  std::vector<placement::Solution> ranked = placement::rankByRoofline(problem, o.seeds);
  for (size_t k = 0; k < ranked.size(); ++k)
    for (Layout layout : o.layouts)
      seeds.push_back({ranked[k].config, layout, "roofline #" + std::to_string(k + 1)});
  const int seedIndex = seeds.empty() ? -1 : run.run(seeds).front();
  int best = run.bestIndex();
  if (best < 0) {
    res.error =
        z3.ok ? (res.trials.empty() ? "no configuration to simulate" : res.trials.front().error)
              : z3.error;
    res.seconds = elapsed();
    return res;
  }
  // 3. Climb.
  const bool autoRecompute = problem.options.recompute == placement::Recompute::Auto;
  res.budgetHit = run.skipped;
  for (int64_t move = 0; move < o.maxMoves && !res.budgetHit; ++move) {
    if (elapsed() >= o.budgetSeconds) {
      res.budgetHit = true;
      break;
    }
    const Trial cur = res.trials[best];
    std::vector<std::pair<placement::Config, std::string>> next;
    if (autoRecompute)
      for (int side = 0; side < 2; ++side)
        for (int step : {-1, 1}) {
          placement::Config c = cur.config;
          cost::Recomputation &level = side == 0 ? c.attnRecompute : c.ffnRecompute;
          int k = static_cast<int>(level) + step;
          int maxLevel = side == 0 ? 2 : 3; // Redispatch is an FFN-side level
          if (k < 0 || k > maxLevel)
            continue;
          level = kLevels[k];
          next.push_back({c, std::string(side == 0 ? "attention" : "FFN") + " recompute " +
                                 cost::recomputationName(level)});
        }
    std::vector<Job> jobs;
    for (auto &[c, what] : next)
      jobs.push_back({c, cur.layout, "climb: " + what});
    for (Layout layout : o.layouts)
      if (layout != cur.layout)
        jobs.push_back(
            {cur.config, layout, std::string("climb: layout ") + afpipe::toString(layout)});
    // One window step below the largest that fits (a smaller window can shorten the tail).
    const int64_t p = cur.config.cand.groups;
    for (int64_t w : {6 * p, 4 * p, 3 * p, 2 * p})
      if (w < cur.inflight) {
        jobs.push_back({cur.config, cur.layout, "climb: window " + std::to_string(w), w});
        break;
      }
    bool improved = false;
    for (int i : run.run(jobs))
      if (i >= 0 && res.trials[i].ok && res.trials[i].simulated < res.trials[best].simulated) {
        best = i;
        improved = true;
      }
    if (!improved)
      break;
  }
  res.budgetHit = res.budgetHit || run.skipped;
  res.pruned = run.pruned;
  // 4. The winner, verified.
  res.best = res.trials[best];
  if (seedIndex >= 0)
    res.seed = res.trials[seedIndex];
  res.afpipe = toAfPipe(res.best.config, problem, o.base, res.best.layout);
  sim::SimOptions so;
  so.opTimes = o.opTimes;
  so.recordTimes = recordTimes;
  // The winner's schedule as its trial built it (toAfPipe(res.best...) with no window override
  // is the trial's configuration), verified here; a winner whose trial fixed the window (a climb
  // move) is rebuilt from res.afpipe, whose window is chosen by memory.
  if (run.kept.ok && run.kept.trial == static_cast<size_t>(best) && run.kept.inflight == 0) {
    res.schedule = std::move(run.kept.schedule);
    const std::string e = sched::verifySchedule(res.schedule);
    if (!e.empty()) {
      res.error = "afpipe: " + e;
      res.seconds = elapsed();
      return res;
    }
    res.run = recordTimes ? sim::simulate(res.schedule, so) : std::move(run.kept.run);
  } else {
    std::string error;
    const afpipe::Workload work =
        afpipe::workloadFromModel(problem.model, problem.cluster, res.afpipe);
    if (!afpipe::buildAfPipe(work, run.hw, res.afpipe, res.schedule, error, /*verify=*/true)) {
      res.error = error;
      res.seconds = elapsed();
      return res;
    }
    res.run = sim::simulate(res.schedule, so);
  }
  res.ok = res.run.ok;
  res.error = res.run.error;
  // Why it won against Z3's optimum, in the levers that differ.
  if (res.seed.ok || !res.seed.error.empty()) {
    std::vector<std::string> levers;
    const placement::Config &a = res.seed.config, &b = res.best.config;
    if (a.cand.groups != b.cand.groups || a.cand.replicas != b.cand.replicas ||
        a.cand.attnRanks != b.cand.attnRanks || a.cand.ffnRanks != b.cand.ffnRanks)
      levers.push_back(
          llvm::formatv("structure p {0} -> {1}, r {2} -> {3}, dA {4} -> {5}, eF {6} "
                        "-> {7} (expert replicas {2} -> {3}: gradient bytes per "
                        "F-rank x{8:F2})",
                        a.cand.groups, b.cand.groups, a.cand.replicas, b.cand.replicas,
                        a.cand.attnRanks, b.cand.attnRanks, a.cand.ffnRanks, b.cand.ffnRanks,
                        static_cast<double>(a.cand.ffnRanks) / static_cast<double>(b.cand.ffnRanks))
              .str());
    if (a.cand.microbatches != b.cand.microbatches)
      levers.push_back(llvm::formatv("m {0} -> {1}", a.cand.microbatches, b.cand.microbatches));
    if (res.seed.layout != res.best.layout)
      levers.push_back(std::string("layout ") + afpipe::toString(res.seed.layout) + " -> " +
                       afpipe::toString(res.best.layout) +
                       (res.best.layout == Layout::Packed
                            ? " (M2N/N2M inside a node over NVLink, every NIC used)"
                            : ""));
    if (a.attnRecompute != b.attnRecompute || a.ffnRecompute != b.ffnRecompute)
      levers.push_back(std::string("recompute ") + cost::recomputationName(a.attnRecompute) + "/" +
                       cost::recomputationName(a.ffnRecompute) + " -> " +
                       cost::recomputationName(b.attnRecompute) + "/" +
                       cost::recomputationName(b.ffnRecompute));
    if (res.seed.inflight != res.best.inflight)
      levers.push_back(llvm::formatv("micro-batches in flight {0} -> {1}", res.seed.inflight,
                                     res.best.inflight));
    std::string text;
    for (const std::string &l : levers)
      text += (text.empty() ? "" : "; ") + l;
    res.why = text.empty() ? "Z3's optimum is the fastest simulated" : text;
  }
  res.seconds = elapsed();
  return res;
}

} // namespace disagmoe::search
