// The simulated search (passes/placement/search) against an exhaustive oracle: every structural
// candidate at its roofline-best levels, in every layout, simulated one by one; and the gradient
// synchronisation and rank layouts of the AF-Pipe schedule it builds, against closed forms.
#include "passes/placement/search/PlanSearch.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <limits>

using namespace disagmoe;
using namespace disagmoe::placement;

namespace {

cost::ModelShape model() {
  cost::ModelShape m;
  m.name = "mini";
  m.hidden = 512;
  m.vocab = 8000;
  cost::LayerShape l;
  l.heads = 8;
  l.kvHeads = 2;
  l.headDim = 64;
  l.experts = 8;
  l.topK = 2;
  l.expertHidden = 1024;
  for (int i = 0; i < 4; ++i)
    m.layers.push_back(l);
  return m;
}

Problem problem(int nodes, int gpusPerNode) {
  Problem p;
  p.model = model();
  p.cluster.name = "test";
  p.cluster.gpu.name = "H800";
  p.cluster.gpu.peakFlops = 989.4e12;
  p.cluster.gpu.hbmBytes = 80e9;
  p.cluster.gpu.hbmBandwidth = 3.35e12;
  p.cluster.gpu.pcieBandwidth = 64e9;
  p.cluster.gpu.nvlinkBandwidth = 200e9;
  p.cluster.nic.bandwidth = 50e9;
  p.cluster.nodes = nodes;
  p.cluster.gpusPerNode = gpusPerNode;
  p.cluster.nicsPerNode = gpusPerNode;
  p.cluster.nvlinkBandwidth = 200e9;
  p.options.seqLen = 2048;
  p.options.globalTokens = int64_t(1) << 17;
  p.options.reserveBytes = 0;
  p.options.fixedCp = 1;
  p.options.timeLimitSeconds = 20;
  return p;
}

search::SearchOptions options(const Problem &p) {
  search::SearchOptions o;
  o.base = search::baseOf(p);
  return o;
}

double simulateOne(const Problem &p, const Config &c, afpipe::Config::Layout layout) {
  search::SearchOptions o = options(p);
  afpipe::Config cfg = search::toAfPipe(c, p, o.base, layout);
  if (layout == afpipe::Config::Layout::Packed)
    cfg.attnNics = cfg.ffnNics = 0; // each GPU its own share, as the search does
  sched::Schedule s;
  std::string error;
  if (!afpipe::buildAfPipe(afpipe::workloadFromModel(p.model, p.cluster, cfg),
                           afpipe::hardwareOf(p.cluster), cfg, s, error))
    return std::numeric_limits<double>::infinity();
  for (size_t g = 0; g < s.groups.size(); ++g)
    if (sched::peakMemory(s, static_cast<int>(g)) > s.capacityBytes)
      return std::numeric_limits<double>::infinity();
  sim::SimResult r = sim::simulate(s);
  return r.ok ? r.stepTime : std::numeric_limits<double>::infinity();
}

} // namespace

// With every candidate as a seed, the search's winner is the fastest of an exhaustive loop that
// simulates each candidate (at its roofline-best levels and NICs) in each layout; and it is never
// slower than Z3's optimum simulated.
TEST(PlanSearch, WinnerIsTheFastestOfAnExhaustiveSimulation) {
  Problem p = problem(2, 8);
  Solution z = solveZ3(p);
  ASSERT_TRUE(z.ok) << z.error;
  search::SearchOptions o = options(p);
  o.seeds = 100000;
  o.maxMoves = 0; // seeds only: the climb's moves are outside the oracle's set
  search::SearchResult r = search::searchPlan(p, z, o);
  ASSERT_TRUE(r.ok) << r.error;
  double best = std::numeric_limits<double>::infinity();
  for (const Solution &s : rankByRoofline(p, 100000))
    for (auto layout : {afpipe::Config::Layout::Separate, afpipe::Config::Layout::Packed})
      best = std::min(best, simulateOne(p, s.config, layout));
  for (auto layout : {afpipe::Config::Layout::Separate, afpipe::Config::Layout::Packed})
    best = std::min(best, simulateOne(p, z.config, layout));
  EXPECT_NEAR(r.best.simulated, best, 1e-12 * best);
  EXPECT_NEAR(r.run.stepTime, r.best.simulated, 1e-9 * best); // the verified winner replays alike
  ASSERT_TRUE(r.seed.ok) << r.seed.error;
  EXPECT_LE(r.best.simulated, r.seed.simulated);
  EXPECT_EQ(sched::verifySchedule(r.schedule), "");
}

// The climb only moves to faster configurations: its winner is never slower than the seeds'.
TEST(PlanSearch, ClimbNeverEndsSlowerThanItsSeeds) {
  Problem p = problem(2, 8);
  Solution z = solveZ3(p);
  ASSERT_TRUE(z.ok) << z.error;
  search::SearchOptions o = options(p);
  o.seeds = 4;
  search::SearchResult r = search::searchPlan(p, z, o);
  ASSERT_TRUE(r.ok) << r.error;
  for (const search::Trial &t : r.trials)
    if (t.ok)
      EXPECT_LE(r.best.simulated, t.simulated) << t.origin;
}

// Rank layouts: Separate puts every attention group first; Packed keeps replica r's groups on
// ranks r (p dA + p eF) ..; with a replica on one node, Packed's M2N/N2M never load a NIC, so on a
// model whose exchanges dominate its step is the shorter.
TEST(PlanSearch, PackedLayoutKeepsAReplicaOnItsNode) {
  Problem p = problem(2, 4);
  Config c;
  c.cand = Candidate{2, 1, 2, 2, 8};
  c.attnNics = c.ffnNics = 4;
  search::SearchOptions o = options(p);
  for (auto layout : {afpipe::Config::Layout::Separate, afpipe::Config::Layout::Packed}) {
    afpipe::Config cfg = search::toAfPipe(c, p, o.base, layout);
    sched::Schedule s;
    std::string error;
    ASSERT_TRUE(afpipe::buildAfPipe(afpipe::workloadFromModel(p.model, p.cluster, cfg),
                                    afpipe::hardwareOf(p.cluster), cfg, s, error))
        << error;
    ASSERT_EQ(s.groups.size(), 2u);
    const bool packed = layout == afpipe::Config::Layout::Packed;
    EXPECT_EQ(s.groups[0].ranks, (packed ? std::vector<std::vector<int>>{{0, 1}, {4, 5}}
                                         : std::vector<std::vector<int>>{{0, 1}, {2, 3}}));
    EXPECT_EQ(s.groups[1].ranks, (packed ? std::vector<std::vector<int>>{{2, 3}, {6, 7}}
                                         : std::vector<std::vector<int>>{{4, 5}, {6, 7}}));
  }
}

// Gradient synchronisation in the schedule (runtime/sim/GradSync.h): the distributed optimizer
// reduce-scatters params x reduceBytes and all-gathers params x 2 bf16 bytes per parameter block;
// without it, one all-reduce of params x reduceBytes and no gather.
TEST(PlanSearch, GradientsAreReduceScatteredOrAllReducedAsConfigured) {
  Problem p = problem(1, 8);
  Config c;
  c.cand = Candidate{2, 1, 2, 2, 4};
  c.attnNics = c.ffnNics = 4;
  search::SearchOptions o = options(p);
  // Expert parameters per F-rank and layer: 8 experts on 2 ranks = 4 x 3 x 512 x 1024.
  const double expertParams = 4.0 * 3 * 512 * 1024;
  for (int mode = 0; mode < 3; ++mode) {
    afpipe::Config cfg = search::toAfPipe(c, p, o.base, afpipe::Config::Layout::Separate);
    cfg.gradSync.distributedOptimizer = cfg.memory.zero1 = mode == 0;
    cfg.gradSync.reduceBytes = mode == 2 ? 2 : 4;
    sched::Schedule s;
    std::string error;
    ASSERT_TRUE(afpipe::buildAfPipe(afpipe::workloadFromModel(p.model, p.cluster, cfg),
                                    afpipe::hardwareOf(p.cluster), cfg, s, error))
        << error;
    int rs = 0, ag = 0, ar = 0;
    for (const sched::Program &prog : s.programs)
      for (const sched::Instr &in : prog.instrs) {
        if (in.op != "grad_experts" && in.op != "weights_experts")
          continue;
        if (in.kind == sched::Kind::ReduceScatter) {
          ++rs;
          EXPECT_DOUBLE_EQ(in.bytes, expertParams * 4);
        } else if (in.kind == sched::Kind::AllGather) {
          ++ag;
          EXPECT_DOUBLE_EQ(in.bytes, expertParams * 2);
        } else if (in.kind == sched::Kind::AllReduce) {
          ++ar;
          EXPECT_DOUBLE_EQ(in.bytes, expertParams * cfg.gradSync.reduceBytes);
        }
      }
    EXPECT_EQ(rs, mode == 0 ? 4 : 0) << mode; // one per MoE layer
    EXPECT_EQ(ag, mode == 0 ? 4 : 0) << mode;
    EXPECT_EQ(ar, mode == 0 ? 0 : 4) << mode;
  }
  // The two must agree: a distributed optimizer without the sharded optimizer state is refused.
  afpipe::Config cfg = search::toAfPipe(c, p, o.base, afpipe::Config::Layout::Separate);
  cfg.memory.zero1 = false;
  sched::Schedule s;
  std::string error;
  EXPECT_FALSE(afpipe::buildAfPipe(afpipe::workloadFromModel(p.model, p.cluster, cfg),
                                   afpipe::hardwareOf(p.cluster), cfg, s, error));
  EXPECT_NE(error.find("zero1"), std::string::npos) << error;
}
