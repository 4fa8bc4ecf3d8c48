// The simulator against hand-computed timelines: link sharing, NVLink vs NIC, ring all-reduce,
// processor sharing of the forward and backward streams, calibration files, trace output.
#include "Uniform.h"

#include "runtime/sim/ScheduleBuilder.h"
#include "runtime/sim/Simulator.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>

using namespace disagmoe;
using namespace disagmoe::sched;

namespace {

Schedule header(int gpusPerNode = 1) {
  Schedule s;
  s.kind = "test";
  s.microBatches = 4;
  s.pipelineStages = 1;
  s.hw = simtest::uniformHardware(gpusPerNode);
  s.modelFlops = 1;
  return s;
}

Schedule build(sim::ScheduleBuilder &b) {
  Schedule s;
  std::string error;
  EXPECT_TRUE(b.build(false, false, s, error)) << error;
  EXPECT_EQ(verifySchedule(s), "");
  return s;
}

double endOf(const Schedule &s, const sim::SimResult &r, const std::string &role, Kind kind,
             int mb) {
  for (size_t p = 0; p < s.programs.size(); ++p)
    if (s.programs[p].role == role)
      for (size_t i = 0; i < s.programs[p].instrs.size(); ++i)
        if (s.programs[p].instrs[i].kind == kind && s.programs[p].instrs[i].mb == mb)
          return r.end[p][i];
  return -1;
}

} // namespace

TEST(Simulator, TwoFlowsShareOneNicFairly) {
  // Rank 0 (node 0) sends 1 MB and 3 MB to rank 1 (node 1) at once over 1 GB/s: each gets 0.5 GB/s
  // until the first finishes at 2 ms, then the second runs alone: it ends at (1 + 3) MB / 1 GB/s.
  sim::ScheduleBuilder b(header());
  int a = b.addGroup("a", 0, {{0}}, 0), c = b.addGroup("b", 0, {{1}}, 0);
  int w = b.compute(a, Stream::Forward, Phase::Forward, "x", -1, -1, 0, 0, 0, 0);
  b.send(a, c, Peers::All, "m", Phase::Forward, 0, 0, 1e6, Stream::Comm, 0, {w});
  b.send(a, c, Peers::All, "m", Phase::Forward, 1, 0, 3e6, Stream::Comm, 1, {w});
  int r0 = b.recv(c, a, Peers::All, "m", Phase::Forward, 0, 0, 1e6, Stream::Comm, 0);
  int r1 = b.recv(c, a, Peers::All, "m", Phase::Forward, 1, 0, 3e6, Stream::Comm, 1);
  b.compute(c, Stream::Forward, Phase::Forward, "y", -1, -1, 0, 0, 0, 0, {r0, r1});
  Schedule s = build(b);
  sim::SimOptions o;
  o.recordTimes = true;
  sim::SimResult r = sim::simulate(s, o);
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_NEAR(endOf(s, r, "b", Kind::Recv, 0), 2e-3, 1e-12);
  EXPECT_NEAR(endOf(s, r, "b", Kind::Recv, 1), 4e-3, 1e-12);
  EXPECT_NEAR(r.stepTime, 4e-3, 1e-12);
  // Both groups communicate for 4 ms with no compute running: all of it is exposed.
  EXPECT_NEAR(r.exposedComm, 4e-3, 1e-12);
}

TEST(Simulator, AllPairsUseNvlinkInsideANodeAndNicsAcross) {
  // Groups of 2 ranks; "a" on node 0 (ranks 0, 1), "b" = ranks 2, 3. With 4 GPUs per node every
  // pair is inside the node: each rank sends 2 x 1 MB over NVLink (4 GB/s) = 0.5 ms. With 2 GPUs
  // per node every pair crosses: 2 MB over the 1 GB/s NIC = 2 ms.
  for (int perNode : {4, 2}) {
    sim::ScheduleBuilder b(header(perNode));
    int a = b.addGroup("a", 0, {{0, 1}}, 0), c = b.addGroup("b", 0, {{2, 3}}, 0);
    b.compute(a, Stream::Forward, Phase::Forward, "x", -1, -1, 0, 0, 0, 0);
    b.send(a, c, Peers::All, "m", Phase::Forward, 0, 0, 1e6, Stream::Comm, 0);
    int rc = b.recv(c, a, Peers::All, "m", Phase::Forward, 0, 0, 1e6, Stream::Comm, 0);
    b.compute(c, Stream::Forward, Phase::Forward, "y", -1, -1, 0, 0, 0, 0, {rc});
    Schedule s = build(b);
    sim::SimResult r = sim::simulate(s);
    ASSERT_TRUE(r.ok) << r.error;
    EXPECT_NEAR(r.stepTime, perNode == 4 ? 0.5e-3 : 2e-3, 1e-12) << perNode;
  }
}

TEST(Simulator, RingAllReduceTime) {
  // 2 replicas x 2 ranks, one GPU per node: n = 4 members over NICs: 2 (n-1)/n x 8 MB / 1 GB/s.
  sim::ScheduleBuilder b(header());
  b.schedule().replicas = 2;
  int a = b.addGroup("a", 0, {{0, 1}, {2, 3}}, 0);
  int c = b.compute(a, Stream::Forward, Phase::Forward, "x", -1, -1, 0, 0, 0, 0);
  b.allReduce(a, Peers::All, "grad", 0, 8e6, Stream::Comm, 0, {c});
  Schedule s = build(b);
  sim::SimResult r = sim::simulate(s);
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_NEAR(r.stepTime, 2.0 * 3 / 4 * 8e-3, 1e-12);
  // Over the replicas only (rank i of each replica: n = 2): 2 * 1/2 * 8 MB.
  sim::ScheduleBuilder b2(header());
  b2.schedule().replicas = 2;
  int a2 = b2.addGroup("a", 0, {{0, 1}, {2, 3}}, 0);
  b2.compute(a2, Stream::Forward, Phase::Forward, "x", -1, -1, 0, 0, 0, 0);
  b2.allReduce(a2, Peers::Same, "grad", 0, 8e6, Stream::Comm, 0);
  Schedule s2 = build(b2);
  EXPECT_NEAR(sim::simulate(s2).stepTime, 8e-3, 1e-12);
}

TEST(Simulator, CollectivesAreHierarchicalNvlinkThenNics) {
  // 4 replicas x 2 ranks on nodes of 4 GPUs (ranks 0-3 on node 0, 4-7 on node 1). All 8 ranks in
  // one all-reduce: k = 4 members per node, N = 2 nodes. Per member: NVLink 2 (k-1)/k x B =
  // 1.5 x 8 MB at 4 GB/s = 3 ms; NIC 2 (N-1)/N x B/k = 2 MB at 1 GB/s = 2 ms. Pipelined over
  // chunks: the slower, 3 ms. A flat ring over NICs would take 2 x 7/8 x 8 ms = 14 ms.
  auto run = [](Kind kind, Peers peers, double bytes) {
    sim::ScheduleBuilder b(header(4));
    b.schedule().replicas = 4;
    int a = b.addGroup("a", 0, {{0, 1}, {2, 3}, {4, 5}, {6, 7}}, 0);
    int c = b.compute(a, Stream::Forward, Phase::Forward, "x", -1, -1, 0, 0, 0, 0);
    b.collective(kind, a, peers, "grad", 0, bytes, Stream::Comm, 0, {c});
    Schedule s = build(b);
    sim::SimResult r = sim::simulate(s);
    EXPECT_TRUE(r.ok) << r.error;
    return r.stepTime;
  };
  EXPECT_NEAR(run(Kind::AllReduce, Peers::All, 8e6), 3e-3, 1e-12);
  // A reduce-scatter or all-gather alone moves half of each.
  EXPECT_NEAR(run(Kind::ReduceScatter, Peers::All, 8e6), 1.5e-3, 1e-12);
  EXPECT_NEAR(run(Kind::AllGather, Peers::All, 8e6), 1.5e-3, 1e-12);
  // Rank i of every replica: {0, 2, 4, 6} and {1, 3, 5, 7}, k = 2 per node, N = 2: NVLink
  // 2 x 1/2 x 8 MB / 4 GB/s = 2 ms, NIC 2 x 1/2 x 4 MB / 1 GB/s = 4 ms: the NICs bind.
  EXPECT_NEAR(run(Kind::AllReduce, Peers::Same, 8e6), 4e-3, 1e-12);
}

TEST(Simulator, ForwardAndBackwardStreamsShareTheGpu) {
  // 1 ms forward and 3 ms backward started together: 2 ms at half speed finishes the forward;
  // the backward then has 2 ms left alone: it ends at 4 ms. Busy the whole time.
  sim::ScheduleBuilder b(header());
  int a = b.addGroup("a", 0, {{0}}, 0);
  b.compute(a, Stream::Forward, Phase::Forward, "f", 0, 0, 1e9, 0, 0, 0);
  b.compute(a, Stream::Backward, Phase::Backward, "b", 1, 0, 3e9, 0, 0, 0);
  Schedule s = build(b);
  sim::SimOptions o;
  o.recordTimes = true;
  sim::SimResult r = sim::simulate(s, o);
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_NEAR(endOf(s, r, "a", Kind::Compute, 0), 2e-3, 1e-12);
  EXPECT_NEAR(r.stepTime, 4e-3, 1e-12);
  EXPECT_NEAR(r.bubbleFraction, 0, 1e-12);
  EXPECT_NEAR(r.mfu, 1 / (4e-3 * 1e12), 1e-18);
}

TEST(Simulator, MemoryBoundComputeUsesHbmBandwidth) {
  sim::ScheduleBuilder b(header());
  int a = b.addGroup("a", 0, {{0}}, 0);
  b.compute(a, Stream::Forward, Phase::Update, "optimizer", -1, -1, 1e6, 5e9, 0, 0);
  Schedule s = build(b);
  EXPECT_NEAR(sim::simulate(s).stepTime, 5e-3, 1e-12); // 5 GB / 1 TB/s beats 1 MFLOP / 1 TFLOP/s
}

TEST(Simulator, CalibrationFileReplacesTheRoofline) {
  std::string path = std::string(DISAGMOE_TEST_TMP) + "/op-times.json";
  {
    std::ofstream f(path);
    f << R"({"format": "disagmoe-op-times", "version": 1, "entries": [
      {"op": "f", "phase": "forward", "seconds": 0.25},
      {"role": "a", "op": "f", "phase": "forward", "layer": 1, "seconds": 0.5}]})";
  }
  sim::OpTimes times;
  std::string error;
  ASSERT_TRUE(times.load(path, error)) << error;
  sim::ScheduleBuilder b(header());
  int a = b.addGroup("a", 0, {{0}}, 0);
  b.compute(a, Stream::Forward, Phase::Forward, "f", 0, 0, 1e9, 0, 0, 0);
  b.compute(a, Stream::Forward, Phase::Forward, "f", 0, 1, 1e9, 0, 0, 1);
  b.compute(a, Stream::Forward, Phase::Forward, "g", 0, 2, 1e9, 0, 0, 2);
  Schedule s = build(b);
  sim::SimOptions o;
  o.opTimes = &times;
  EXPECT_NEAR(sim::simulate(s, o).stepTime, 0.25 + 0.5 + 1e-3, 1e-12);
  std::ofstream(path)
      << R"({"format": "disagmoe-op-times", "version": 1, "entries": [{"op": "f"}]})";
  EXPECT_FALSE(times.load(path, error));
  EXPECT_NE(error.find("entries[0]: needs \"op\" (string) and \"seconds\""), std::string::npos)
      << error;
  std::remove(path.c_str());
}

TEST(Simulator, MeasuredExchangeTimeReplacesTheNetworkModel) {
  // a: x (1 ms measured), then sends 1 MB to b (rank 1 on node 1, 1 GB/s NIC: 1 ms by the network
  // model); b: receives, then y (2 ms measured). An "exchange:m" entry of the sending role makes
  // the send take its 0.25 ms instead: step 1 + 0.25 + 2 ms, all 0.25 ms of it exposed
  // communication. An entry of the other role does not apply (the network model's 1 + 1 + 2 ms).
  for (const char *role : {"a", "b"}) {
    std::string path = std::string(DISAGMOE_TEST_TMP) + "/op-times-exchange.json";
    std::ofstream(path) << R"({"format": "disagmoe-op-times", "version": 1, "entries": [
      {"op": "x", "seconds": 1e-3}, {"op": "y", "seconds": 2e-3},
      {"role": ")" << role
                        << R"(", "op": "exchange:m", "phase": "forward", "seconds": 2.5e-4}]})";
    sim::OpTimes times;
    std::string error;
    ASSERT_TRUE(times.load(path, error)) << error;
    std::remove(path.c_str());
    sim::ScheduleBuilder b(header());
    int a = b.addGroup("a", 0, {{0}}, 0), c = b.addGroup("b", 0, {{1}}, 0);
    int w = b.compute(a, Stream::Forward, Phase::Forward, "x", 0, 0, 0, 0, 0, 0);
    b.send(a, c, Peers::All, "m", Phase::Forward, 0, 0, 1e6, Stream::Comm, 0, {w});
    int r0 = b.recv(c, a, Peers::All, "m", Phase::Forward, 0, 0, 1e6, Stream::Comm, 0);
    b.compute(c, Stream::Forward, Phase::Forward, "y", 0, 0, 0, 0, 0, 0, {r0});
    Schedule s = build(b);
    sim::SimOptions o;
    o.opTimes = &times;
    sim::SimResult r = sim::simulate(s, o);
    ASSERT_TRUE(r.ok) << r.error;
    const bool measured = std::string(role) == "a";
    EXPECT_NEAR(r.stepTime, measured ? 3.25e-3 : 4e-3, 1e-12) << role;
    EXPECT_NEAR(r.groups[0].exposedComm, measured ? 2.5e-4 : 1e-3, 1e-12) << role;
  }
}

TEST(Simulator, HostCoresAreSharedByEveryRanksThreads) {
  // a (1 rank): x; b (2 ranks): y then z; x, y 1 s and z 0.5 s measured. On C host cores every
  // running instruction of every rank is a thread: x and y are 1 + 2 = 3 threads, z alone 2.
  //   C = 2: x, y at 2/3 -> both end at 1.5 s; z at min(1, 2/2) -> 2.0 s.
  //   C = 1: x, y at 1/3 -> 3 s; z at 1/2 -> 4 s.   C = 0 (a device per rank): 1 + 0.5 s.
  std::string path = std::string(DISAGMOE_TEST_TMP) + "/op-times-host.json";
  std::ofstream(path) << R"({"format": "disagmoe-op-times", "version": 1, "entries": [
    {"op": "x", "seconds": 1}, {"op": "y", "seconds": 1}, {"op": "z", "seconds": 0.5}]})";
  sim::OpTimes times;
  std::string error;
  ASSERT_TRUE(times.load(path, error)) << error;
  std::remove(path.c_str());
  sim::ScheduleBuilder b(header());
  int a = b.addGroup("a", 0, {{0}}, 0), c = b.addGroup("b", 0, {{1, 2}}, 0);
  b.compute(a, Stream::Forward, Phase::Forward, "x", 0, 0, 0, 0, 0, 0);
  int y = b.compute(c, Stream::Forward, Phase::Forward, "y", 0, 0, 0, 0, 0, 0);
  b.compute(c, Stream::Forward, Phase::Forward, "z", 1, 0, 0, 0, 0, 1, {y});
  Schedule s = build(b);
  for (const auto &[cores, step] : {std::pair<double, double>{2, 2.0}, {1, 4.0}, {0, 1.5}}) {
    sim::SimOptions o;
    o.opTimes = &times;
    o.hostCores = cores;
    sim::SimResult r = sim::simulate(s, o);
    ASSERT_TRUE(r.ok) << r.error;
    EXPECT_NEAR(r.stepTime, step, 1e-9) << cores << " cores";
  }
}

TEST(Simulator, ChromeTraceIsJsonWithOneProcessPerGroup) {
  afpipe::Config c = simtest::uniformConfig(2, 4);
  Schedule s;
  std::string error;
  ASSERT_TRUE(afpipe::buildAfPipe(simtest::uniformWorkload(4, 1e-3, 1e-4),
                                  simtest::uniformHardware(), c, s, error))
      << error;
  sim::SimOptions o;
  o.recordTimes = true;
  sim::SimResult r = sim::simulate(s, o);
  ASSERT_TRUE(r.ok) << r.error;
  std::string path = std::string(DISAGMOE_TEST_TMP) + "/trace.json";
  ASSERT_TRUE(sim::writeChromeTrace(s, r, path, error)) << error;
  std::ifstream in(path);
  const nlohmann::json t = nlohmann::json::parse(in);
  std::remove(path.c_str());
  // The runtime's layout: a process per group (pid = its first rank), tracks per stream.
  std::map<int, std::string> processes;
  std::map<int64_t, int> flowStarts, flowEnds;
  int sends = 0, sendsWithBytes = 0, computeWithStep = 0;
  for (const auto &e : t.at("traceEvents")) {
    const std::string ph = e.at("ph");
    if (ph == "M" && e.at("name") == "process_name")
      processes[e.at("pid")] = e.at("args").at("name");
    if (ph == "s")
      ++flowStarts[e.at("id").get<int64_t>()];
    if (ph == "f")
      ++flowEnds[e.at("id").get<int64_t>()];
    if (ph != "X")
      continue;
    const std::string name = e.at("name");
    if (name == "send m2n forward") {
      ++sends;
      sendsWithBytes += e.at("args").at("bytes").get<double>() > 0;
    }
    computeWithStep += e.at("args").value("step", 0) == 1;
  }
  ASSERT_EQ(processes.size(), s.groups.size());
  for (const sched::Group &g : s.groups)
    EXPECT_EQ(processes[g.ranks[0][0]], "rank " + std::to_string(g.ranks[0][0]) + " (" + g.role +
                                            " group " + std::to_string(g.index) + ", " +
                                            std::to_string(g.size()) + " ranks)");
  EXPECT_GT(sends, 0);
  EXPECT_EQ(sendsWithBytes, sends);
  EXPECT_GT(computeWithStep, 0);
  // One arrow per message: every send's start has its receive's end, and no id twice.
  EXPECT_GE(static_cast<int>(flowStarts.size()), sends);
  EXPECT_EQ(flowStarts, flowEnds);
  for (const auto &[id, n] : flowStarts)
    EXPECT_EQ(n, 1) << id;
}
