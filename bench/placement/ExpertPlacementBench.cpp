//===- ExpertPlacementBench.cpp - expert placement against LPT and contiguous ---===//
//
//   disagmoe-bench-expert-placement [--seeds N]
//
// Synthetic routing profiles (tokens * top_k assignments): uniform (every expert equally likely)
// and concentrated (Zipf weights, exponent 1.2, over a random expert order). For each, the median
// over seeds of the maximum rank load of contiguous placement, greedy LPT, balanced (ours) and
// balanced with R extra replicas, and the ratios ours/LPT and ours/contiguous in the same run.
//
//===----------------------------------------------------------------------===//
#include "passes/placement/solver/ExpertPlacement.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

using namespace disagmoe::placement;

namespace {
std::vector<int64_t> profile(int64_t experts, int64_t assignments, bool concentrated,
                             std::mt19937_64 &rng) {
  std::vector<double> w(experts, 1.0);
  if (concentrated) {
    std::vector<int64_t> order(experts);
    for (int64_t e = 0; e < experts; ++e)
      order[e] = e;
    std::shuffle(order.begin(), order.end(), rng);
    for (int64_t i = 0; i < experts; ++i)
      w[order[i]] = 1.0 / std::pow(double(i + 1), 1.2);
  }
  std::discrete_distribution<int64_t> pick(w.begin(), w.end());
  std::vector<int64_t> loads(experts, 0);
  for (int64_t i = 0; i < assignments; ++i)
    ++loads[pick(rng)];
  return loads;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}
} // namespace

int main(int argc, char **argv) {
  int seeds = 9;
  for (int i = 1; i + 1 < argc; ++i)
    if (std::string(argv[i]) == "--seeds")
      seeds = std::stoi(argv[++i]);
  std::printf("max rank load / mean rank load, median over %d seeds (65536 tokens x top-k)\n",
              seeds);
  std::printf("%-13s %4s %3s %3s | %10s %8s %8s %10s %8s | %9s %12s %12s\n", "profile", "E", "k",
              "R", "contiguous", "LPT", "ours", "ours+R rep", "bound+R", "ours/LPT", "ours/contig",
              "rep/contig");
  for (bool concentrated : {false, true})
    for (int64_t experts : {64, 128})
      for (int64_t ranks : {8, 16, 32}) {
        int64_t k = experts == 64 ? 6 : 8, slots = experts / ranks;
        std::vector<double> c, l, o, r, b, ol, oc, rc;
        for (int s = 0; s < seeds; ++s) {
          std::mt19937_64 rng(1000 + s);
          std::vector<int64_t> loads = profile(experts, 65536 * k, concentrated, rng);
          ExpertPlacement pc = placeContiguous(loads, ranks);
          ExpertPlacement pl = placeGreedyLpt(loads, ranks, slots);
          ExpertPlacement po = placeBalanced(loads, ranks, slots);
          ExpertPlacement pr = placeBalanced(loads, ranks, slots + 1, ranks);
          double mean = pc.meanLoad();
          c.push_back(pc.maxLoad() / mean);
          l.push_back(pl.maxLoad() / mean);
          o.push_back(po.maxLoad() / mean);
          r.push_back(pr.maxLoad() / mean);
          b.push_back(maxLoadLowerBound(loads, ranks, ranks) / mean);
          ol.push_back(po.maxLoad() / pl.maxLoad());
          oc.push_back(po.maxLoad() / pc.maxLoad());
          rc.push_back(pr.maxLoad() / pc.maxLoad());
        }
        std::printf(
            "%-13s %4lld %3lld %3lld | %10.3f %8.3f %8.3f %10.3f %8.3f | %9.3f %12.3f %12.3f\n",
            concentrated ? "concentrated" : "uniform", (long long)experts, (long long)k,
            (long long)ranks, median(c), median(l), median(o), median(r), median(b), median(ol),
            median(oc), median(rc));
      }
  return 0;
}
