//===- BaselineSearch.cpp - the fastest simulated configuration of one baseline ----------===//
#include "runtime/sim/BaselineSearch.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <limits>
#include <mutex>
#include <numeric>
#include <thread>

namespace disagmoe::sim {

std::string describeSetting(const BaselineConfig &c) {
  char buf[160];
  std::snprintf(buf, sizeof buf, "ep %lld, pp %lld, vpp %lld, m %lld, recompute %s",
                static_cast<long long>(c.ep), static_cast<long long>(c.pp),
                static_cast<long long>(c.vpp), static_cast<long long>(c.microbatches),
                c.recompute ? "on" : "off");
  return buf;
}

std::vector<BaselineConfig> baselineSearchSpace(Baseline kind, const cost::ModelShape &model,
                                                const BaselineSearchOptions &o) {
  std::vector<BaselineConfig> out;
  const int64_t G = o.gpus, L = model.numLayers(), E = model.numExperts(),
                S = o.base.sequencesPerStep;
  if (G < 1 || S < 1)
    return out;
  const bool dual = kind == Baseline::DualPipe;
  for (int64_t ep = 1; ep <= G; ++ep) {
    if (G % ep || (E > 0 && E % ep))
      continue;
    for (int64_t pp = 1; pp * ep <= G; ++pp) {
      if ((G / ep) % pp || L < pp || (dual && pp % 2))
        continue;
      const int64_t R = G / (ep * pp);
      if (S % (R * ep))
        continue;
      const int64_t perRank = S / (R * ep); // sequences per rank and step
      for (int64_t vpp : dual ? std::vector<int64_t>{1} : std::vector<int64_t>{1, 2, 4}) {
        if (L < pp * vpp || (vpp > 1 && pp == 1))
          continue;
        for (int64_t q = 1; q <= perRank; ++q) {
          if (perRank % q)
            continue;
          const int64_t m = perRank / q;
          if (dual ? (m % 2 || m < 2 * pp) : (m < pp || (vpp > 1 && m % pp)))
            continue;
          for (bool rc : o.recompute) {
            BaselineConfig c = o.base;
            c.kind = kind;
            c.ep = ep;
            c.pp = pp;
            c.vpp = vpp;
            c.replicas = R;
            c.microbatches = m;
            c.recompute = rc;
            out.push_back(c);
          }
        }
      }
    }
  }
  return out;
}

BaselineSearchResult searchBaseline(Baseline kind, const cost::ModelShape &model,
                                    const sched::Hardware &hw, const BaselineSearchOptions &o) {
  const auto t0 = std::chrono::steady_clock::now();
  auto elapsed = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  BaselineSearchResult res;
  const std::vector<BaselineConfig> space = baselineSearchSpace(kind, model, o);
  res.candidates = static_cast<int64_t>(space.size());
  if (space.empty()) {
    res.error = std::string(toString(kind)) + ": no configuration of " + std::to_string(o.gpus) +
                " GPUs divides the experts, layers and " + std::to_string(o.base.sequencesPerStep) +
                " sequences";
    return res;
  }
  const bool bound = o.opTimes == nullptr;
  std::vector<double> lb(space.size(), 0);
  std::vector<size_t> order(space.size());
  std::iota(order.begin(), order.end(), 0);
  if (bound) {
    for (size_t i = 0; i < space.size(); ++i)
      lb[i] = baselineLowerBound(model, hw, space[i]);
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return lb[a] < lb[b]; });
  }
  std::mutex mu;
  const double inf = std::numeric_limits<double>::infinity();
  double bestStep = inf, epStep = inf; // read under mu
  size_t bestIdx = space.size(), epIdx = space.size(), lastRefusedIdx = 0, lastRefusedEpIdx = 0;
  bool anyRefused = false, anyRefusedEp = false;
  std::vector<BaselineTrial> trials(space.size());
  std::atomic<size_t> next{0};
  std::atomic<bool> stop{false};
  std::atomic<int64_t> simulated{0}, refused{0}, pruned{0};
  auto better = [](double step, size_t idx, double curStep, size_t curIdx) {
    return step < curStep || (step == curStep && idx < curIdx);
  };
  auto worker = [&] {
    for (;;) {
      if (stop.load())
        return;
      const size_t pos = next.fetch_add(1);
      if (pos >= order.size())
        return;
      const size_t i = order[pos];
      const BaselineConfig &c = space[i];
      const bool atEp = c.ep == o.fixedEp;
      if (bound) {
        std::lock_guard<std::mutex> lock(mu);
        // Not simulated only when it can beat neither the best nor (at the given EP) the best
        // there; ties keep the earlier candidate, so a bound equal to the best still prunes a
        // later one only.
        const bool canBest = lb[i] < bestStep || (lb[i] == bestStep && i < bestIdx);
        const bool canEp = atEp && (lb[i] < epStep || (lb[i] == epStep && i < epIdx));
        if (!canBest && !canEp) {
          ++pruned;
          continue;
        }
      }
      if (o.wallBudgetSeconds > 0 && elapsed() > o.wallBudgetSeconds) {
        stop = true;
        return;
      }
      BaselineTrial &t = trials[i];
      t.config = c;
      sched::Schedule s;
      std::string error;
      if (!buildBaseline(model, hw, c, s, error)) {
        t.error = error;
        ++refused;
        std::lock_guard<std::mutex> lock(mu);
        if (!anyRefused || i > lastRefusedIdx)
          lastRefusedIdx = i;
        anyRefused = true;
        if (atEp && (!anyRefusedEp || i > lastRefusedEpIdx))
          lastRefusedEpIdx = i;
        anyRefusedEp |= atEp;
        continue;
      }
      SimOptions so;
      so.opTimes = o.opTimes;
      t.result = simulate(s, so);
      ++simulated;
      if (!t.result.ok) {
        t.error = t.result.error;
        continue;
      }
      t.ok = true;
      for (const BaselineStageMemory &x : baselineMemory(model, c))
        if (x.total() > t.peakMemoryBytes) {
          t.peakMemoryBytes = x.total();
          t.liveUnits = x.liveUnits;
        }
      std::lock_guard<std::mutex> lock(mu);
      const double step = t.result.stepTime;
      if (better(step, i, bestStep, bestIdx)) {
        bestStep = step;
        bestIdx = i;
      }
      if (atEp && better(step, i, epStep, epIdx)) {
        epStep = step;
        epIdx = i;
      }
    }
  };
  unsigned n = o.threads ? o.threads : std::thread::hardware_concurrency();
  n = std::max(1u, std::min<unsigned>(n, static_cast<unsigned>(space.size())));
  std::vector<std::thread> pool;
  for (unsigned k = 1; k < n; ++k)
    pool.emplace_back(worker);
  worker();
  for (std::thread &th : pool)
    th.join();
  res.simulated = simulated;
  res.refused = refused;
  res.pruned = pruned;
  res.budgetHit = stop;
  if (anyRefused)
    res.lastRefusal = trials[lastRefusedIdx].error;
  if (anyRefusedEp)
    res.lastRefusalAtEp = trials[lastRefusedEpIdx].error;
  if (bestIdx < space.size()) {
    res.ok = true;
    res.best = trials[bestIdx];
  } else {
    res.error = anyRefused ? res.lastRefusal
                           : std::string(toString(kind)) + ": no configuration was simulated";
  }
  if (epIdx < space.size()) {
    res.okAtEp = true;
    res.atEp = trials[epIdx];
  }
  res.seconds = elapsed();
  return res;
}

} // namespace disagmoe::sim
