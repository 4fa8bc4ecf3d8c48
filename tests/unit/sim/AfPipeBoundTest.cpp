// afpipe::computeBoundSeconds against the schedule it bounds. Oracles: the built schedule's own
// compute instructions (the busiest group's attention, expert and FFN-side dense FLOPs over
// peak x efficiency, summed instruction by instruction: the bound must equal it), every compute
// instruction of a group (the head and optimizer included: the bound must not exceed it), and
// the simulator (no simulated step is shorter than the bound).
#include "passes/schedule/AfPipeBound.h"
#include "runtime/sim/Simulator.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>

using namespace disagmoe;
using namespace disagmoe::sched;

namespace {

cost::ModelShape fourLayerModel() {
  cost::ModelShape m;
  m.name = "four-layer";
  m.hidden = 64;
  m.vocab = 128;
  cost::LayerShape moe;
  moe.heads = 4;
  moe.kvHeads = 2;
  moe.headDim = 16;
  moe.experts = 8;
  moe.topK = 2;
  moe.expertHidden = 48;
  moe.sharedHidden = 32;
  cost::LayerShape dense = moe;
  dense.experts = dense.topK = dense.expertHidden = dense.sharedHidden = 0;
  dense.denseHidden = 96;
  m.layers = {dense, moe, moe, moe};
  return m;
}

cost::ClusterSpec smallCluster() {
  cost::ClusterSpec cl;
  cl.nodes = 4;
  cl.gpusPerNode = 8;
  cl.nicsPerNode = 8;
  cl.gpu.peakFlops = 1e12;
  cl.gpu.hbmBandwidth = 2e12;
  cl.gpu.hbmBytes = 80e9;
  cl.gpu.nvlinkBandwidth = 1e11;
  cl.gpu.pcieBandwidth = 5e10;
  cl.nic.bandwidth = 5e9;
  return cl;
}

} // namespace

TEST(AfPipeBound, EqualsTheScheduleComputeAndBoundsTheSimulation) {
  const cost::ModelShape model = fourLayerModel();
  const cost::ClusterSpec cl = smallCluster();
  const Hardware hw = afpipe::hardwareOf(cl);
  int cases = 0;
  for (int p : {1, 2, 4})
    for (int dA : {1, 2})
      for (int eF : {1, 2, 4})
        for (bool ffnSide : {false, true})
          for (auto rec : {cost::Recomputation::None, cost::Recomputation::Full})
            for (double eff : {1.0, 0.6}) {
              afpipe::Config c;
              c.groups = p;
              c.attnRanks = dA;
              c.ffnRanks = eF;
              c.microbatches = 3 * p;
              c.seqLen = 32;
              c.sequencesPerStep = 3 * p * dA;
              c.attnRecompute = rec;
              c.ffnRecompute = rec;
              c.denseOnFfn = c.sharedOnFfn = ffnSide;
              c.computeEfficiency = eff;
              c.layout =
                  ffnSide ? afpipe::Config::Layout::Packed : afpipe::Config::Layout::Separate;
              const afpipe::Workload w = afpipe::workloadFromModel(model, cl, c);
              Schedule s;
              std::string error;
              ASSERT_TRUE(afpipe::buildAfPipe(w, hw, c, s, error)) << error;
              std::map<int, double> layerFlops, allFlops; // per group
              for (const Program &P : s.programs)
                for (const Instr &in : P.instrs) {
                  if (in.kind != Kind::Compute)
                    continue;
                  allFlops[in.group] += in.flops;
                  if (in.op == "attention" || in.op == "experts" || in.op == "dense_ffn")
                    layerFlops[in.group] += in.flops;
                }
              double busiestLayers = 0, busiestAll = 0;
              for (auto &[g, f] : layerFlops)
                busiestLayers = std::max(busiestLayers, f);
              for (auto &[g, f] : allFlops)
                busiestAll = std::max(busiestAll, f);
              const double peak = cl.gpu.peakFlops * eff;
              const double bound = afpipe::computeBoundSeconds(w, c, hw);
              const std::string where = "p " + std::to_string(p) + " dA " + std::to_string(dA) +
                                        " eF " + std::to_string(eF) + " ffnSide " +
                                        std::to_string(ffnSide) + " eff " + std::to_string(eff);
              ASSERT_GT(bound, 0) << where;
              EXPECT_NEAR(bound, busiestLayers / peak, 1e-12 * bound) << where;
              EXPECT_LE(bound, busiestAll / peak * (1 + 1e-12)) << where;
              const sim::SimResult r = sim::simulate(s);
              ASSERT_TRUE(r.ok) << r.error;
              EXPECT_GE(r.stepTime, bound * (1 - 1e-12)) << where;
              ++cases;
            }
  EXPECT_EQ(cases, 3 * 2 * 3 * 2 * 2 * 2);
}

TEST(AfPipeBound, ZeroWithoutPeak) {
  afpipe::Workload w;
  w.layers.resize(2);
  w.layers[0].attnFwdFlops = 1e9;
  afpipe::Config c;
  Hardware hw;
  EXPECT_EQ(afpipe::computeBoundSeconds(w, c, hw), 0.0);
  hw.peakFlops = 1e9;
  c.microbatches = 4;
  EXPECT_DOUBLE_EQ(afpipe::computeBoundSeconds(w, c, hw), 4.0);
}
