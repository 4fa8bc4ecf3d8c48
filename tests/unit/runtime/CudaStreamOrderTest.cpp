// The cuda backend's stream order (runtime/backends/cuda/StreamOrder.h), tested on every machine.
// Hand cases name the exact waits and records; random programs are checked against CUDA's stream
// and event semantics directly: work on a stream runs in enqueue order, a wait orders a stream
// after the record it follows (a record enqueued before the wait), and every `after` dependency
// and each stream's program order must follow from those edges alone.
#include "runtime/backends/cuda/StreamOrder.h"

#include "Uniform.h" // tests/unit/sim: AF-Pipe schedules of a uniform model

#include <gtest/gtest.h>

#include <cstdio>
#include <functional>
#include <random>
#include <string>
#include <vector>

using namespace disagmoe;
using namespace disagmoe::cuda;
using sched::Stream;

namespace {

sched::Instr instr(Stream s, std::vector<int> after = {}, int group = 0) {
  sched::Instr I;
  I.stream = s;
  I.kind = s == Stream::Comm ? sched::Kind::Send : sched::Kind::Compute;
  I.after = std::move(after);
  I.group = group;
  return I;
}

sched::Program program(std::vector<sched::Instr> instrs) {
  sched::Program p;
  p.role = "ffn";
  p.instrs = std::move(instrs);
  return p;
}

std::string messageOf(const std::function<void()> &f) {
  try {
    f();
  } catch (const StreamOrderError &e) {
    return e.what();
  } catch (const std::exception &e) {
    return std::string("(not a StreamOrderError) ") + e.what();
  }
  return "(no exception)";
}

// Checks `plan` for `p`'s instructions of `group` under CUDA's semantics (see the file comment).
void expectCudaOrderHolds(const sched::Program &p, int group, const StreamPlan &plan) {
  const int n = static_cast<int>(p.instrs.size());
  const int steps = static_cast<int>(plan.steps.size());
  std::vector<int> stepOf(n, -1);
  for (int k = 0; k < steps; ++k) {
    const StreamStep &s = plan.steps[k];
    ASSERT_GE(s.instr, 0);
    ASSERT_LT(s.instr, n);
    ASSERT_EQ(stepOf[s.instr], -1) << "instruction " << s.instr << " enqueued twice";
    stepOf[s.instr] = k;
    EXPECT_EQ(s.stream, static_cast<int>(p.instrs[s.instr].stream)) << "instruction " << s.instr;
  }
  for (int i = 0; i < n; ++i)
    EXPECT_EQ(stepOf[i] >= 0, p.instrs[i].group == group) << "instruction " << i;
  // Happens-before edges between steps: consecutive steps of one stream, record -> wait.
  std::vector<int> recordStep(plan.events, -1);
  for (int k = 0; k < steps; ++k)
    if (plan.steps[k].records >= 0) {
      ASSERT_LT(plan.steps[k].records, plan.events);
      ASSERT_EQ(recordStep[plan.steps[k].records], -1) << "event recorded twice";
      recordStep[plan.steps[k].records] = k;
    }
  std::vector<std::vector<char>> reach(steps, std::vector<char>(steps, 0));
  std::vector<int> lastOnStream(3, -1);
  for (int k = 0; k < steps; ++k) {
    const StreamStep &s = plan.steps[k];
    if (lastOnStream[s.stream] >= 0) {
      reach[lastOnStream[s.stream]][k] = 1;
      // Each stream runs its instructions in program order.
      EXPECT_LT(plan.steps[lastOnStream[s.stream]].instr, s.instr) << "stream " << s.stream;
    }
    lastOnStream[s.stream] = k;
    for (int e : s.waits) {
      ASSERT_GE(e, 0);
      ASSERT_LT(e, plan.events);
      ASSERT_GE(recordStep[e], 0) << "event " << e << " is waited on but never recorded";
      ASSERT_LT(recordStep[e], k) << "event " << e << " is waited on before its record";
      reach[recordStep[e]][k] = 1;
    }
  }
  for (int m = 0; m < steps; ++m) // transitive closure (Floyd-Warshall), steps in enqueue order
    for (int a = 0; a < steps; ++a)
      if (reach[a][m])
        for (int b = 0; b < steps; ++b)
          if (reach[m][b])
            reach[a][b] = 1;
  for (int i = 0; i < n; ++i)
    if (p.instrs[i].group == group)
      for (int d : p.instrs[i].after)
        EXPECT_TRUE(reach[stepOf[d]][stepOf[i]])
            << "instruction " << i << " may run before its dependency " << d;
}

} // namespace

TEST(CudaStreamOrder, CrossStreamDependenciesBecomeOneEventEachAndStreamOrderNeedsNone) {
  // 0 forward; 1 comm send after 0; 2 comm recv; 3 forward after 2 (and 0: same stream);
  // 4 backward after 3 and 1.
  const sched::Program p =
      program({instr(Stream::Forward), instr(Stream::Comm, {0}), instr(Stream::Comm),
               instr(Stream::Forward, {2, 0}), instr(Stream::Backward, {3, 1})});
  const StreamPlan plan = planStreams(p, 0);
  ASSERT_EQ(plan.steps.size(), 5u);
  for (int k = 0; k < 5; ++k)
    EXPECT_EQ(plan.steps[k].instr, k); // program order is a valid order here
  EXPECT_EQ(plan.steps[0].stream, 0);
  EXPECT_EQ(plan.steps[1].stream, 2);
  EXPECT_EQ(plan.steps[4].stream, 1);
  // Events: 0 on instruction 0 (waited by 1), 1 on instruction 2 (waited by 3), 2 on 3 (by 4).
  // 4's dependency on 1 needs no wait: 3 waited on 2, which follows 1 on the comm stream.
  EXPECT_EQ(plan.events, 3);
  EXPECT_EQ(plan.steps[0].records, 0);
  EXPECT_EQ(plan.steps[1].waits, std::vector<int>{0});
  EXPECT_EQ(plan.steps[1].records, -1);
  EXPECT_EQ(plan.steps[2].records, 1);
  EXPECT_EQ(plan.steps[3].waits, std::vector<int>{1}); // 0 is the same stream
  EXPECT_EQ(plan.steps[3].records, 2);
  EXPECT_EQ(plan.steps[4].waits, std::vector<int>{2});
  expectCudaOrderHolds(p, 0, plan);
}

TEST(CudaStreamOrder, ADependencyLaterInTheProgramIsEnqueuedFirst) {
  // 0 forward waits on 1, a receive later in the program on the comm stream.
  const sched::Program p = program({instr(Stream::Forward, {1}), instr(Stream::Comm)});
  const StreamPlan plan = planStreams(p, 0);
  ASSERT_EQ(plan.steps.size(), 2u);
  EXPECT_EQ(plan.steps[0].instr, 1);
  EXPECT_EQ(plan.steps[0].records, 0);
  EXPECT_EQ(plan.steps[1].instr, 0);
  EXPECT_EQ(plan.steps[1].waits, std::vector<int>{0});
  expectCudaOrderHolds(p, 0, plan);
}

TEST(CudaStreamOrder, AWaitImpliedThroughAnotherStreamIsDropped) {
  // 2 backward waits on 0 (forward) and 1 (comm); 1 already waited on 0.
  const sched::Program p =
      program({instr(Stream::Forward), instr(Stream::Comm, {0}), instr(Stream::Backward, {0, 1})});
  const StreamPlan plan = planStreams(p, 0);
  EXPECT_EQ(plan.steps[2].waits.size(), 1u);
  EXPECT_EQ(plan.events, 2);
  expectCudaOrderHolds(p, 0, plan);
}

TEST(CudaStreamOrder, OnlyTheGroupsInstructionsAreKept) {
  const sched::Program p = program({instr(Stream::Forward, {}, 1), instr(Stream::Forward, {}, 0),
                                    instr(Stream::Comm, {1}, 0), instr(Stream::Comm, {0}, 1)});
  const StreamPlan zero = planStreams(p, 0), one = planStreams(p, 1);
  ASSERT_EQ(zero.steps.size(), 2u);
  EXPECT_EQ(zero.steps[0].instr, 1);
  EXPECT_EQ(zero.steps[1].instr, 2);
  ASSERT_EQ(one.steps.size(), 2u);
  EXPECT_EQ(one.steps[0].instr, 0);
  EXPECT_EQ(one.steps[1].instr, 3);
  expectCudaOrderHolds(p, 0, zero);
  expectCudaOrderHolds(p, 1, one);
}

TEST(CudaStreamOrder, RandomProgramsSatisfyEveryDependencyUnderCudaSemantics) {
  std::mt19937 rng(11);
  for (int trial = 0; trial < 200; ++trial) {
    const int n = 2 + static_cast<int>(rng() % 40);
    std::vector<sched::Instr> instrs(n);
    for (int i = 0; i < n; ++i) {
      instrs[i] = instr(static_cast<Stream>(rng() % 3), {}, static_cast<int>(rng() % 4 == 0));
    }
    // A hidden execution order consistent with every stream's program order (per group): take
    // the next instruction of a random non-empty (group, stream); dependencies only point to
    // instructions earlier in it, so an order exists.
    std::vector<std::vector<int>> queues(6);
    for (int i = 0; i < n; ++i)
      queues[instrs[i].group * 3 + static_cast<int>(instrs[i].stream)].push_back(i);
    std::vector<size_t> head(6, 0);
    std::vector<int> hidden;
    while (static_cast<int>(hidden.size()) < n) {
      const int q = static_cast<int>(rng() % 6);
      if (head[q] < queues[q].size())
        hidden.push_back(queues[q][head[q]++]);
    }
    for (int k = 1; k < n; ++k) {
      const int i = hidden[k];
      const int deps = static_cast<int>(rng() % 4);
      for (int d = 0; d < deps; ++d) {
        const int j = hidden[rng() % k];
        if (instrs[j].group == instrs[i].group)
          instrs[i].after.push_back(j);
      }
    }
    const sched::Program p = program(instrs);
    for (int group = 0; group < 2; ++group) {
      const StreamPlan plan = planStreams(p, group);
      expectCudaOrderHolds(p, group, plan);
      if (::testing::Test::HasFailure()) {
        ADD_FAILURE() << "trial " << trial << " group " << group;
        return;
      }
    }
  }
}

TEST(CudaStreamOrder, RefusesDependenciesNoStreamOrderSatisfies) {
  EXPECT_EQ(messageOf([] { planStreams(program({instr(Stream::Forward, {5})}), 0); }),
            "stream order: instruction 0 waits on instruction 5, which does not exist");
  EXPECT_EQ(messageOf([] { planStreams(program({instr(Stream::Forward, {0})}), 0); }),
            "stream order: instruction 0 waits on itself");
  EXPECT_EQ(messageOf([] {
              planStreams(program({instr(Stream::Forward, {1}), instr(Stream::Comm, {}, 1)}), 0);
            }),
            "stream order: instruction 0 waits on instruction 1 of group 1, not its own group 0");
  EXPECT_EQ(messageOf([] {
              planStreams(program({instr(Stream::Forward, {1}), instr(Stream::Forward)}), 0);
            }),
            "stream order: instruction 0 waits on instruction 1, later on the same forward "
            "stream (a stream runs in program order)");
  EXPECT_EQ(messageOf([] {
              planStreams(program({instr(Stream::Forward, {1}), instr(Stream::Comm, {0})}), 0);
            }),
            "stream order: instruction 0 is on a dependency cycle (its `after` list and the "
            "stream orders wait on each other)");
  // A cycle through stream order: 1 (forward) waits on 2 (comm), 2 on 0 (forward) is fine
  // (enqueued 0, 2, 1); 2 on 1 instead is a cycle, and so is 2 on 3 when 3 follows 1 on its stream.
  EXPECT_NO_THROW(planStreams(
      program({instr(Stream::Forward), instr(Stream::Forward, {2}), instr(Stream::Comm, {0})}), 0));
  EXPECT_EQ(messageOf([] {
              planStreams(program({instr(Stream::Forward), instr(Stream::Forward, {2}),
                                   instr(Stream::Comm, {3}), instr(Stream::Forward)}),
                          0);
            }),
            "stream order: instruction 1 is on a dependency cycle (its `after` list and the "
            "stream orders wait on each other)");
}

// The AF-Pipe schedules the compiler writes into plans (passes/schedule/AfPipe.h, verified by the
// schedule verifier): every group's program plans, and the plan satisfies CUDA's semantics.
TEST(CudaStreamOrder, EveryGroupOfAfPipeSchedulesPlans) {
  int totalWaits = 0, totalEvents = 0;
  for (int groups : {1, 2, 3})
    for (int layers : {groups, 2 * groups + 1}) {
      sched::Schedule s;
      std::string error;
      ASSERT_TRUE(afpipe::buildAfPipe(simtest::uniformWorkload(layers, 1e-3, 3e-4),
                                      simtest::uniformHardware(),
                                      simtest::uniformConfig(groups, 2 * groups + 2), s, error))
          << error;
      for (const sched::Program &p : s.programs)
        for (size_t g = 0; g < s.groups.size(); ++g) {
          if (s.groups[g].role != p.role)
            continue;
          const StreamPlan plan = planStreams(p, static_cast<int>(g));
          EXPECT_FALSE(plan.steps.empty()) << p.role << " group " << g;
          expectCudaOrderHolds(p, static_cast<int>(g), plan);
          int crossStream = 0;
          for (const sched::Instr &I : p.instrs)
            if (I.group == static_cast<int>(g))
              for (int d : I.after)
                crossStream += p.instrs[d].stream != I.stream;
          int waits = 0;
          for (const StreamStep &step : plan.steps)
            waits += static_cast<int>(step.waits.size());
          EXPECT_LE(waits, crossStream) << p.role << " group " << g;
          totalWaits += waits;
          totalEvents += plan.events;
        }
    }
  // The schedules do cross streams (exchanges on the comm stream feed the compute streams).
  EXPECT_GT(totalWaits, 0);
  EXPECT_GT(totalEvents, 0);
  std::printf("AF-Pipe schedules: %d waits on %d events\n", totalWaits, totalEvents);
}
