//===- ScheduleBuilder.cpp ------------------------------------------------------===//
#include "runtime/sim/ScheduleBuilder.h"

#include "runtime/sim/Simulator.h"

#include <algorithm>
#include <map>
#include <numeric>

namespace disagmoe::sim {

using namespace sched;

int ScheduleBuilder::addGroup(const std::string &role, int index,
                              std::vector<std::vector<int>> ranks, double staticBytes,
                              double nicBandwidth) {
  Group g;
  g.role = role;
  g.index = index;
  g.ranks = std::move(ranks);
  g.staticBytes = staticBytes;
  g.nicBandwidth = nicBandwidth;
  s_.groups.push_back(std::move(g));
  return static_cast<int>(s_.groups.size()) - 1;
}

int ScheduleBuilder::add(Instr in, double priority) {
  instrs_.push_back(std::move(in));
  priority_.push_back(priority);
  return static_cast<int>(instrs_.size()) - 1;
}

// The fields every instruction kind sets; the callers add their own.
Instr ScheduleBuilder::instr(Kind kind, int group, Stream stream, Phase phase,
                             const std::string &op, int mb, int layer, std::vector<int> after) {
  Instr in;
  in.kind = kind;
  in.stream = stream;
  in.phase = phase;
  in.op = op;
  in.group = group;
  in.mb = mb;
  in.layer = layer;
  in.after = std::move(after);
  return in;
}

int ScheduleBuilder::compute(int group, Stream stream, Phase phase, const std::string &op, int mb,
                             int layer, double flops, double memBytes, double activationBytes,
                             double priority, std::vector<int> after) {
  Instr in = instr(Kind::Compute, group, stream, phase, op, mb, layer, std::move(after));
  in.flops = flops;
  in.memBytes = memBytes;
  in.activationBytes = activationBytes;
  return add(std::move(in), priority);
}

int ScheduleBuilder::send(int group, int peer, Peers peers, const std::string &op, Phase phase,
                          int mb, int layer, double bytes, Stream stream, double priority,
                          std::vector<int> after) {
  Instr in = instr(Kind::Send, group, stream, phase, op, mb, layer, std::move(after));
  in.peer = peer;
  in.peers = peers;
  in.bytes = bytes;
  return add(std::move(in), priority);
}

int ScheduleBuilder::recv(int group, int peer, Peers peers, const std::string &op, Phase phase,
                          int mb, int layer, double bytes, Stream stream, double priority,
                          std::vector<int> after) {
  int h = send(group, peer, peers, op, phase, mb, layer, bytes, stream, priority, std::move(after));
  instrs_[h].kind = Kind::Recv;
  return h;
}

int ScheduleBuilder::allToAll(int group, const std::string &op, Phase phase, int mb, int layer,
                              double bytes, Stream stream, double priority,
                              std::vector<int> after) {
  Instr in = instr(Kind::AllToAll, group, stream, phase, op, mb, layer, std::move(after));
  in.bytes = bytes;
  return add(std::move(in), priority);
}

int ScheduleBuilder::allReduce(int group, Peers peers, const std::string &op, int layer,
                               double bytes, Stream stream, double priority,
                               std::vector<int> after) {
  return collective(Kind::AllReduce, group, peers, op, layer, bytes, stream, priority,
                    std::move(after));
}

int ScheduleBuilder::collective(Kind kind, int group, Peers peers, const std::string &op, int layer,
                                double bytes, Stream stream, double priority,
                                std::vector<int> after) {
  Instr in = instr(kind, group, stream, Phase::Update, op, /*mb=*/-1, layer, std::move(after));
  in.peers = peers;
  in.bytes = bytes;
  return add(std::move(in), priority);
}

void ScheduleBuilder::after(int handle, int dependency) {
  instrs_[handle].after.push_back(dependency);
}

bool ScheduleBuilder::build(bool listScheduleCompute, bool orderCommByReadiness, Schedule &out,
                            std::string &error) {
  // Programs per role in order of first appearance; within a program, by (group, priority,
  // creation).
  std::map<std::string, int> progOf;
  out = s_;
  out.programs.clear();
  std::vector<int> progOfGroup(s_.groups.size()); // the role lookup once per group, not per instr
  for (size_t g = 0; g < s_.groups.size(); ++g) {
    auto [it, fresh] = progOf.emplace(s_.groups[g].role, static_cast<int>(out.programs.size()));
    if (fresh)
      out.programs.push_back(Program{s_.groups[g].role, {}});
    progOfGroup[g] = it->second;
  }
  const int n = static_cast<int>(instrs_.size());
  // The keys themselves are sorted (contiguous, no indirection into the instructions).
  struct Key {
    int group;
    double priority;
    int handle;
  };
  std::vector<Key> order(n);
  for (int h = 0; h < n; ++h)
    order[h] = {instrs_[h].group, priority_[h], h};
  std::stable_sort(order.begin(), order.end(), [](const Key &a, const Key &b) {
    if (a.group != b.group)
      return a.group < b.group;
    return a.priority < b.priority;
  });
  std::vector<int> indexIn(n);
  std::vector<std::vector<double>> prio(out.programs.size());
  {
    std::vector<size_t> sizes(out.programs.size(), 0);
    for (const Key &k : order)
      ++sizes[progOfGroup[k.group]];
    for (size_t p = 0; p < out.programs.size(); ++p) {
      out.programs[p].instrs.reserve(sizes[p]);
      prio[p].reserve(sizes[p]);
    }
  }
  for (const Key &k : order) {
    const int h = k.handle, p = progOfGroup[k.group];
    indexIn[h] = static_cast<int>(out.programs[p].instrs.size());
    out.programs[p].instrs.push_back(std::move(instrs_[h])); // handed over: a builder builds once
    prio[p].push_back(priority_[h]);
  }
  instrs_.clear();
  priority_.clear();
  for (size_t p = 0; p < out.programs.size(); ++p)
    for (Instr &in : out.programs[p].instrs)
      for (int &d : in.after)
        d = indexIn[d];
  if (!listScheduleCompute && !orderCommByReadiness)
    return true;
  SimOptions o;
  o.dynamicCompute = listScheduleCompute;
  o.dynamicComm = orderCommByReadiness;
  o.priority = &prio;
  o.recordTimes = true;
  SimResult r = simulate(out, o);
  if (!r.ok) {
    error = "ordering run of the " + s_.kind + " schedule: " + r.error;
    return false;
  }
  freezeOrder(out, r);
  return true;
}

} // namespace disagmoe::sim
