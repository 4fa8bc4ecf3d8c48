// bench/sim: build and replay time of long schedules, with a digest of every simulated figure (not
// part of ctest).
//
//   build/bin/disagmoe-bench-sim-replay [--runs N] [--case NAME] [--quick]
//
// Each case builds a schedule (Megatron, Megatron with overlap, DualPipe, AF-Pipe in several
// settings, up to 4096 micro-batches: the lengths `disagmoe plan` simulates for 4096 sequences on
// 16 GPUs), then replays it. Printed per case: instructions, the median seconds of the build (its
// ordering run included) and of the replay, and two 64-bit digests: of the built schedule (every
// field of every instruction, in order) and of the replay (step time, per-group figures, and every
// instruction's start, end and start order). A change to the simulator or the schedule builders
// that keeps the digests keeps every result bit for bit; compare them against the binary of the
// parent commit. --quick skips the cases with 4096 micro-batches.
#include "passes/schedule/AfPipe.h"
#include "runtime/sim/Baselines.h"
#include "runtime/sim/Simulator.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <functional>
#include <string>
#include <vector>

using namespace disagmoe;

namespace {

/// FNV-1a over the bytes of the values fed to it (doubles by their bit pattern).
struct Digest {
  uint64_t h = 1469598103934665603ull;
  void bytes(const void *p, size_t n) {
    const auto *c = static_cast<const unsigned char *>(p);
    for (size_t i = 0; i < n; ++i) {
      h ^= c[i];
      h *= 1099511628211ull;
    }
  }
  template <typename T> void add(const T &v) { bytes(&v, sizeof v); }
  void add(const std::string &s) {
    add(s.size());
    bytes(s.data(), s.size());
  }
};

uint64_t scheduleDigest(const sched::Schedule &s) {
  Digest d;
  for (const sched::Program &p : s.programs) {
    d.add(p.role);
    d.add(p.instrs.size());
    for (const sched::Instr &in : p.instrs) {
      d.add(static_cast<int>(in.kind));
      d.add(static_cast<int>(in.stream));
      d.add(static_cast<int>(in.phase));
      d.add(static_cast<int>(in.peers));
      d.add(in.op);
      for (int v : {in.group, in.mb, in.layer, in.peer})
        d.add(v);
      for (double v : {in.flops, in.memBytes, in.bytes, in.activationBytes})
        d.add(v);
      d.add(in.after.size());
      for (int a : in.after)
        d.add(a);
    }
  }
  return d.h;
}

uint64_t resultDigest(const sim::SimResult &r) {
  Digest d;
  d.add(r.ok);
  d.add(r.error);
  for (double v : {r.stepTime, r.bubbleFraction, r.exposedComm, r.commActive, r.busy, r.mfu})
    d.add(v);
  for (int64_t v : {r.instructions, r.events, r.flows})
    d.add(v);
  for (const sim::GroupStats &g : r.groups)
    for (double v : {g.busy, g.commActive, g.exposedComm, g.firstStart, g.lastEnd, g.flops})
      d.add(v);
  for (const auto *table : {&r.start, &r.end})
    for (const std::vector<double> &row : *table)
      for (double v : row)
        d.add(v);
  for (const std::vector<int64_t> &row : r.startOrder)
    for (int64_t v : row)
      d.add(v);
  return d.h;
}

cost::ModelShape mixtral8x7b() {
  cost::ModelShape m;
  m.name = "mixtral-8x7b";
  m.hidden = 4096;
  m.vocab = 32000;
  for (int l = 0; l < 32; ++l) {
    cost::LayerShape s;
    s.heads = 32;
    s.kvHeads = 8;
    s.headDim = 128;
    s.experts = 8;
    s.topK = 2;
    s.expertHidden = 14336;
    m.layers.push_back(s);
  }
  return m;
}

/// DeepSeek-MoE-16B's shape: a dense first layer, then 64 routed experts (top 6) and 2 shared.
cost::ModelShape deepseekMoe16b() {
  cost::ModelShape m;
  m.name = "deepseek-moe-16b";
  m.hidden = 2048;
  m.vocab = 102400;
  for (int l = 0; l < 28; ++l) {
    cost::LayerShape s;
    s.heads = 16;
    s.kvHeads = 16;
    s.headDim = 128;
    if (l == 0) {
      s.denseHidden = 10944;
    } else {
      s.experts = 64;
      s.topK = 6;
      s.expertHidden = 1408;
      s.sharedHidden = 2816;
    }
    m.layers.push_back(s);
  }
  return m;
}

/// H800 nodes of 8 GPUs; memory large enough that no case is refused for it (a benchmark of speed).
sched::Hardware h800() {
  sched::Hardware hw;
  hw.name = "H800";
  hw.peakFlops = 989.4e12;
  hw.hbmBandwidth = 3.35e12;
  hw.hbmBytes = 1e15;
  hw.nvlinkBandwidth = 200e9;
  hw.nicBandwidth = 50e9;
  hw.gpusPerNode = 8;
  return hw;
}

struct Case {
  std::string name;
  bool longCase = false;
  std::function<bool(sched::Schedule &, std::string &)> build;
  sim::SimOptions options;
};

sim::BaselineConfig baseline(sim::Baseline kind, int64_t ep, int64_t pp, int64_t vpp, int64_t m,
                             bool recompute = false) {
  sim::BaselineConfig c;
  c.kind = kind;
  c.ep = ep;
  c.pp = pp;
  c.vpp = vpp;
  c.replicas = 1;
  c.microbatches = m;
  c.seqLen = 4096;
  c.sequencesPerStep = m * ep;
  c.recompute = recompute;
  c.reserveBytes = 0;
  return c;
}

afpipe::Config afpipeConfig(int64_t p, int64_t dA, int64_t eF, int64_t m, int64_t r = 1) {
  afpipe::Config c;
  c.replicas = r;
  c.groups = p;
  c.attnRanks = dA;
  c.ffnRanks = eF;
  c.microbatches = m;
  c.seqLen = 4096;
  c.sequencesPerStep = m * dA * r;
  c.reserveBytes = 0;
  return c;
}

/// Wall and CPU seconds of f: the CPU time of this single-threaded benchmark is the steadier figure
/// on a machine shared with other jobs.
struct Timing {
  double wall = 0, cpu = 0;
};
double cpuNow() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}
Timing seconds(const std::function<void()> &f) {
  const auto t0 = std::chrono::steady_clock::now();
  const double c0 = cpuNow();
  f();
  return {std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(),
          cpuNow() - c0};
}

double median(std::vector<Timing> v, double Timing::*field) {
  std::sort(v.begin(), v.end(),
            [&](const Timing &a, const Timing &b) { return a.*field < b.*field; });
  return v[v.size() / 2].*field;
}

} // namespace

int main(int argc, char **argv) {
  int runs = 1;
  std::string only;
  bool quick = false;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--runs") && i + 1 < argc)
      runs = std::max(1, std::atoi(argv[++i]));
    else if (!std::strcmp(argv[i], "--case") && i + 1 < argc)
      only = argv[++i];
    else if (!std::strcmp(argv[i], "--quick"))
      quick = true;
  }
  const cost::ModelShape mix = mixtral8x7b(), ds = deepseekMoe16b();
  const sched::Hardware hw = h800();
  static sim::OpTimes opTimes;
  opTimes.entries = {{"", "attention", sched::Phase::Forward, -1, 2e-3},
                     {"ffn", "experts", sched::Phase::Backward, 3, 5e-3},
                     {"attention", "exchange:m2n", sched::Phase::Forward, -1, 1e-3}};
  std::vector<Case> cases;
  auto addBaseline = [&](const std::string &name, bool longCase, const cost::ModelShape &model,
                         sim::BaselineConfig c) {
    cases.push_back({name, longCase, [&model, c, &hw](sched::Schedule &s, std::string &e) {
                       return sim::buildBaseline(model, hw, c, s, e, /*verify=*/false);
                     }});
  };
  auto addAfPipe = [&](const std::string &name, bool longCase, const cost::ModelShape &model,
                       afpipe::Config c, sim::SimOptions o = {}) {
    cases.push_back({name, longCase,
                     [&model, c, &hw](sched::Schedule &s, std::string &e) {
                       const afpipe::Workload w =
                           afpipe::workloadFromModel(model, cost::ClusterSpec(), c);
                       return afpipe::buildAfPipe(w, hw, c, s, e, /*verify=*/false);
                     },
                     o});
  };
  using sim::Baseline;
  addBaseline("megatron ep1 pp16 m4096", true, mix, baseline(Baseline::Megatron, 1, 16, 1, 4096));
  addBaseline("megatron-overlap ep1 pp16 m4096", true, mix,
              baseline(Baseline::MegatronOverlap, 1, 16, 1, 4096));
  addBaseline("dualpipe ep1 pp16 m4096", true, mix, baseline(Baseline::DualPipe, 1, 16, 1, 4096));
  addBaseline("megatron ep8 pp2 vpp2 m512", false, mix,
              baseline(Baseline::Megatron, 8, 2, 2, 512, true));
  addBaseline("megatron-overlap ep16 pp4 vpp2 m256", false, ds,
              baseline(Baseline::MegatronOverlap, 16, 4, 2, 256));
  addBaseline("dualpipe ep8 pp4 m256", false, ds, baseline(Baseline::DualPipe, 8, 4, 1, 256, true));
  {
    afpipe::Config c = afpipeConfig(2, 4, 4, 4096);
    addAfPipe("afpipe p2 dA4 eF4 m4096", true, mix, c);
  }
  {
    afpipe::Config c = afpipeConfig(2, 4, 4, 512);
    addAfPipe("afpipe p2 dA4 eF4 m512", false, mix, c);
    c.layout = afpipe::Config::Layout::Packed;
    c.sharing = sched::Schedule::Sharing::Backward;
    addAfPipe("afpipe packed backward-sharing m512", false, mix, c);
    c.sharing = sched::Schedule::Sharing::Exclusive;
    c.inflight = 6;
    addAfPipe("afpipe packed exclusive W6 m512", false, mix, c);
  }
  {
    afpipe::Config c = afpipeConfig(4, 8, 8, 256, 2);
    c.attnRecompute = cost::Recomputation::Selective;
    c.ffnRecompute = cost::Recomputation::Redispatch;
    c.denseOnFfn = c.sharedOnFfn = c.embeddingOnFfn = c.headOnFfn = true;
    c.attnNics = 8;
    c.ffnNics = 24;
    c.nicBandwidth = 50e9;
    c.pcieBandwidth = 64e9;
    addAfPipe("afpipe deepseek ffn-side p4 r2 m256", false, ds, c);
    c.gradSync.distributedOptimizer = c.memory.zero1 = !c.memory.zero1;
    addAfPipe("afpipe deepseek grad-sync flipped m256", false, ds, c);
  }
  {
    afpipe::Config c = afpipeConfig(2, 2, 2, 64);
    sim::SimOptions o;
    o.opTimes = &opTimes;
    addAfPipe("afpipe op-times m64", false, mix, c, o);
    sim::SimOptions h;
    h.hostCores = 3;
    addAfPipe("afpipe host-cores m64", false, mix, c, h);
  }
  std::printf("%-40s %9s %8s %8s %8s %8s  %-16s %-16s %s\n", "case", "instrs", "build s", "(cpu)",
              "replay s", "(cpu)", "schedule digest", "result digest", "step s");
  for (const Case &c : cases) {
    if ((!only.empty() && c.name != only) || (quick && c.longCase))
      continue;
    std::vector<Timing> build, replay;
    sched::Schedule s;
    sim::SimResult r;
    std::string error;
    bool ok = true;
    for (int k = 0; k < runs && ok; ++k) {
      build.push_back(seconds([&] { ok = c.build(s, error); }));
      sim::SimOptions o = c.options;
      o.recordTimes = true;
      replay.push_back(seconds([&] { r = sim::simulate(s, o); }));
    }
    if (!ok) {
      std::printf("%-40s build failed: %s\n", c.name.c_str(), error.c_str());
      continue;
    }
    std::printf("%-40s %9lld %8.3f %8.3f %8.3f %8.3f  %016llx %016llx %a%s%s\n", c.name.c_str(),
                static_cast<long long>(r.instructions), median(build, &Timing::wall),
                median(build, &Timing::cpu), median(replay, &Timing::wall),
                median(replay, &Timing::cpu), static_cast<unsigned long long>(scheduleDigest(s)),
                static_cast<unsigned long long>(resultDigest(r)), r.stepTime,
                r.ok ? "" : "  failed: ", r.error.c_str());
    std::fflush(stdout);
  }
  return 0;
}
