// bench/sim: how fast the simulator replays one training step of a large plan (not part of ctest).
//
//   build/bin/disagmoe-bench-sim [--runs N]
//
// Qwen3-235B-A22B's shape (94 layers, hidden 4096, 128 experts top-8; docs/reference/
// papers.md), AF-Pipe with 64 micro-batches on 128 ranks (16 x 8 H800) and 1024 ranks (128 x 8),
// and the Megatron baseline on the same ranks. Prints, per plan, the median seconds to order
// (one dynamic run), verify and replay, against the targets (1 s at 128 ranks, 15 s at 1024), and
// the simulated step time against the roofline lower bound measured in the same run.
#include "passes/schedule/AfPipe.h"
#include "runtime/cost/Roofline.h"
#include "runtime/sim/Baselines.h"
#include "runtime/sim/Simulator.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

using namespace disagmoe;

namespace {
cost::ModelShape qwen3() {
  cost::ModelShape m;
  m.name = "qwen3-235b-a22b";
  m.hidden = 4096;
  m.vocab = 151936;
  for (int l = 0; l < 94; ++l) {
    cost::LayerShape s;
    s.heads = 64;
    s.kvHeads = 4;
    s.headDim = 128;
    s.experts = 128;
    s.topK = 8;
    s.expertHidden = 1536;
    m.layers.push_back(s);
  }
  return m;
}

sched::Hardware h800() {
  sched::Hardware hw;
  hw.name = "H800";
  hw.peakFlops = 989.4e12;
  hw.hbmBandwidth = 3.35e12;
  hw.hbmBytes = 80e9;
  hw.nvlinkBandwidth = 200e9;
  hw.nicBandwidth = 50e9;
  hw.gpusPerNode = 8;
  return hw;
}

double seconds(const std::function<void()> &f) {
  auto t0 = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}
} // namespace

int main(int argc, char **argv) {
  int runs = 3;
  for (int i = 1; i + 1 < argc; ++i)
    if (!std::strcmp(argv[i], "--runs"))
      runs = std::max(1, std::atoi(argv[i + 1]));
  const cost::ModelShape m = qwen3();
  const sched::Hardware hw = h800();
  std::printf("%-40s %7s %9s %9s %9s %8s %9s %10s\n", "plan", "ranks", "instrs", "order s",
              "verify s", "replay s", "target s", "step / LB");
  struct Case {
    const char *name;
    int ranks, dA, eF, p;
    double target;
  };
  for (const Case &c : {Case{"AF-Pipe, p 4, 64 micro-batches", 128, 16, 16, 4, 1.0},
                        Case{"AF-Pipe, p 4, 64 micro-batches", 1024, 128, 128, 4, 15.0}}) {
    afpipe::Config cfg;
    cfg.groups = c.p;
    cfg.attnRanks = c.dA;
    cfg.ffnRanks = c.eF;
    cfg.microbatches = 64;
    cfg.seqLen = 4096;
    cfg.sequencesPerStep = 64 * c.dA;
    cfg.inflight = 2 * c.p;
    cfg.reserveBytes = 0;
    afpipe::Workload w = afpipe::workloadFromModel(m, cost::ClusterSpec(), cfg);
    std::vector<double> order, verify, replay;
    sched::Schedule s;
    sim::SimResult r;
    std::string error;
    for (int k = 0; k < runs; ++k) {
      order.push_back(seconds([&] {
        if (!afpipe::buildAfPipe(w, hw, cfg, s, error, false))
          std::fprintf(stderr, "%s\n", error.c_str());
      }));
      verify.push_back(seconds([&] { error = sched::verifySchedule(s); }));
      replay.push_back(seconds([&] { r = sim::simulate(s); }));
    }
    double lb = w.modelFlops / (c.ranks * hw.peakFlops);
    std::printf("%-40s %7d %9lld %9.3f %9.3f %8.3f %9.1f %10.2f%s\n", c.name, c.ranks,
                static_cast<long long>(r.instructions), median(order), median(verify),
                median(replay), c.target, r.stepTime / lb,
                error.empty() ? "" : "  (verifier: memory)");
    std::printf("  replay / target %.3f, order + verify + replay / target %.3f\n",
                median(replay) / c.target,
                (median(order) + median(verify) + median(replay)) / c.target);
  }
  for (int ranks : {128, 1024}) {
    sim::BaselineConfig bc;
    bc.kind = sim::Baseline::Megatron;
    bc.pp = 8;
    bc.vpp = 2;
    bc.ep = 16;
    bc.replicas = ranks / 128;
    bc.microbatches = 64;
    bc.seqLen = 4096;
    bc.sequencesPerStep = 64 * 16 * bc.replicas;
    bc.reserveBytes = 0;
    sched::Schedule s;
    sim::SimResult r;
    std::string error;
    std::vector<double> order, replay;
    for (int k = 0; k < runs; ++k) {
      order.push_back(seconds([&] { sim::buildBaseline(m, hw, bc, s, error, false); }));
      replay.push_back(seconds([&] { r = sim::simulate(s); }));
    }
    std::printf("%-40s %7d %9lld %9.3f %9s %8.3f %9.1f\n", "Megatron interleaved 1F1B, pp 8, vpp 2",
                ranks, static_cast<long long>(r.instructions), median(order), "-", median(replay),
                ranks == 128 ? 1.0 : 15.0);
  }
  return 0;
}
