// The enqueue order, streams and events of a rank's program (StreamOrder.h).
#include "runtime/backends/cuda/StreamOrder.h"

#include <algorithm>
#include <array>
#include <functional>
#include <queue>
#include <string>

namespace disagmoe::cuda {
namespace {

constexpr int kStreams = 3;
using Clock = std::array<int, kStreams>; // per stream: the last position known complete (-1: none)

[[noreturn]] void fail(int instr, const std::string &what) {
  throw StreamOrderError("stream order: instruction " + std::to_string(instr) + " " + what);
}

} // namespace

StreamPlan planStreams(const sched::Program &program, int group) {
  const int n = static_cast<int>(program.instrs.size());
  std::vector<int> mine;            // program indices of the group's instructions
  std::vector<int> position(n, -1); // position of an instruction in its stream (program order)
  std::array<int, kStreams> streamLength{};
  for (int i = 0; i < n; ++i)
    if (program.instrs[i].group == group) {
      mine.push_back(i);
      position[i] = streamLength[static_cast<int>(program.instrs[i].stream)]++;
    }
  // Edges: each instruction's predecessor on its stream, and its `after` list.
  std::vector<std::vector<int>> successors(n);
  std::vector<int> pending(n, 0);
  std::array<int, kStreams> lastOnStream = {-1, -1, -1};
  for (int i : mine) {
    const sched::Instr &I = program.instrs[i];
    const int s = static_cast<int>(I.stream);
    if (lastOnStream[s] >= 0) {
      successors[lastOnStream[s]].push_back(i);
      ++pending[i];
    }
    lastOnStream[s] = i;
    for (int d : I.after) {
      if (d < 0 || d >= n)
        fail(i, "waits on instruction " + std::to_string(d) + ", which does not exist");
      if (d == i)
        fail(i, "waits on itself");
      if (program.instrs[d].group != group)
        fail(i, "waits on instruction " + std::to_string(d) + " of group " +
                    std::to_string(program.instrs[d].group) + ", not its own group " +
                    std::to_string(group));
      if (program.instrs[d].stream == I.stream && d > i)
        fail(i, "waits on instruction " + std::to_string(d) + ", later on the same " +
                    sched::toString(I.stream) + " stream (a stream runs in program order)");
      successors[d].push_back(i);
      ++pending[i];
    }
  }
  // Kahn's algorithm, the lowest program index first.
  std::priority_queue<int, std::vector<int>, std::greater<int>> ready;
  for (int i : mine)
    if (pending[i] == 0)
      ready.push(i);
  std::vector<int> order;
  order.reserve(mine.size());
  while (!ready.empty()) {
    const int i = ready.top();
    ready.pop();
    order.push_back(i);
    for (int j : successors[i])
      if (--pending[j] == 0)
        ready.push(j);
  }
  if (order.size() != mine.size()) {
    int stuck = -1;
    for (int i : mine)
      if (pending[i] > 0) {
        stuck = i;
        break;
      }
    fail(stuck, "is on a dependency cycle (its `after` list and the stream orders wait on each "
                "other)");
  }

  // Events: the vector clock of each stream, and the clock each step had when it completed.
  StreamPlan plan;
  std::array<Clock, kStreams> streamClock;
  for (Clock &c : streamClock)
    c.fill(-1);
  std::vector<Clock> clockAt(n);
  std::vector<int> eventOf(n, -1);
  std::vector<int> stepOf(n, -1);
  for (int i : order) {
    const sched::Instr &I = program.instrs[i];
    const int s = static_cast<int>(I.stream);
    StreamStep step;
    step.instr = i;
    step.stream = s;
    std::vector<int> deps = I.after;
    // The latest enqueued dependency first: its clock may imply the others (never the reverse).
    std::sort(deps.begin(), deps.end(), [&](int a, int b) { return stepOf[a] > stepOf[b]; });
    for (int d : deps) {
      const int t = static_cast<int>(program.instrs[d].stream);
      if (t == s || streamClock[s][t] >= position[d])
        continue; // stream order, or implied by an earlier wait
      if (eventOf[d] < 0) {
        eventOf[d] = plan.events++;
        plan.steps[static_cast<size_t>(stepOf[d])].records = eventOf[d];
      }
      step.waits.push_back(eventOf[d]);
      for (int u = 0; u < kStreams; ++u)
        streamClock[s][u] = std::max(streamClock[s][u], clockAt[d][u]);
    }
    streamClock[s][s] = position[i];
    clockAt[i] = streamClock[s];
    stepOf[i] = static_cast<int>(plan.steps.size());
    plan.steps.push_back(step);
  }
  return plan;
}

} // namespace disagmoe::cuda
