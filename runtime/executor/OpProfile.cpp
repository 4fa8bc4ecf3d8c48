// Per-op timing of executed steps, written as measured op times or a Chrome trace (OpProfile.h).
#include "runtime/executor/OpProfile.h"
#include "runtime/io/FileKind.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
#include <stdexcept>
#include <tuple>

namespace disagmoe {
namespace {

// Temp file + rename: a reader never sees half a file.
void writeAtomically(const std::string &path, const std::string &text) {
  // The rename would replace a device, FIFO or symlink: refuse it (again just before the rename).
  if (const std::string why = outputRefusal(path); !why.empty())
    throw std::runtime_error(path + ": " + why);
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out)
      throw std::runtime_error(path + ": cannot write");
    out << text;
    out.flush();
    if (!out) {
      std::remove(tmp.c_str());
      throw std::runtime_error(path + ": write failed");
    }
  }
  if (const std::string why = outputRefusal(path); !why.empty()) {
    std::remove(tmp.c_str());
    throw std::runtime_error(path + ": " + why);
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    throw std::runtime_error(path + ": cannot rename " + tmp + " onto it");
  }
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

GroupRole roleOfRank(const Plan &plan, int rank) {
  for (const Group &g : plan.placement.groups)
    for (int r : g.ranks)
      if (r == rank)
        return g.role;
  return GroupRole::Attention;
}

} // namespace

OpProfile::OpProfile(int worldSize)
    : origin_(std::chrono::steady_clock::now()),
      events_(static_cast<size_t>(std::max(worldSize, 0))) {}

double OpProfile::now() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - origin_).count();
}

namespace {
thread_local RankRecorder *tCurrent = nullptr;
} // namespace

RankRecorder::RankRecorder(OpProfile &profile, const Plan &plan, int rank)
    : profile_(profile), rank_(rank), group_(plan.placement.groupOf(rank).index),
      role_(plan.placement.groupOf(rank).role) {}

RankRecorder *RankRecorder::current() { return tCurrent; }

void RankRecorder::record(const Instruction &ins, size_t index, bool backward, double start) {
  // A forward instruction after a backward one (or the first) starts the next micro-batch.
  if (!backward && (microBatch_ < 0 || lastBackward_))
    ++microBatch_;
  lastBackward_ = backward;
  (void)index;
  record(ins, backward, start, microBatch_);
}

void RankRecorder::record(const Instruction &ins, bool backward, double start, int64_t microBatch) {
  OpEvent e;
  e.name = toString(ins.op);
  if (ins.op == OpCode::RmsNorm)
    e.name += std::string(" ") + toString(ins.role);
  e.simOp = simOpOf(ins, role_);
  e.phase = backward ? "backward" : "forward";
  e.group = group_;
  e.layer = ins.layer;
  e.microBatch = microBatch;
  e.step = profile_.step;
  e.start = start;
  e.stream = backward ? kBackwardStream : kForwardStream;
  std::lock_guard<std::mutex> lock(mutex_);
  e.end = lastEnd_ = std::max(lastEnd_, profile_.now());
  profile_.events(rank_).push_back(std::move(e));
}

void RankRecorder::recordComm(const std::string &name, double start, int peer, int tag,
                              int64_t bytes, bool sent) {
  OpEvent e;
  e.name = name;
  e.peer = peer;
  e.tag = tag;
  e.bytes = bytes;
  e.sent = sent;
  e.phase = "comm";
  e.group = group_;
  e.step = profile_.step;
  e.start = start;
  e.stream = kCommStream;
  std::lock_guard<std::mutex> lock(mutex_);
  e.end = lastCommEnd_ = profile_.now();
  profile_.events(rank_).push_back(std::move(e));
}

void RankRecorder::recordOther(const std::string &name, const std::string &simOp,
                               const std::string &phase, double start) {
  OpEvent e;
  e.name = name;
  e.simOp = simOp;
  e.phase = phase;
  e.group = group_;
  e.step = profile_.step;
  e.start = start;
  std::lock_guard<std::mutex> lock(mutex_);
  e.end = lastEnd_ = profile_.now();
  profile_.events(rank_).push_back(std::move(e));
}

ScopedRecorder::ScopedRecorder(RankRecorder *recorder) : previous_(tCurrent) {
  tCurrent = recorder;
}
ScopedRecorder::~ScopedRecorder() { tCurrent = previous_; }

std::string simOpOf(const Instruction &ins, GroupRole role) {
  switch (ins.op) {
  case OpCode::Embed:
  case OpCode::Attention:
  case OpCode::ResidualAdd:
  case OpCode::Router:
    return role == GroupRole::Attention ? "attention" : "";
  case OpCode::RmsNorm:
    if (ins.role == NormRole::FinalNorm)
      return "head";
    return "attention";
  case OpCode::Head:
    return "head";
  case OpCode::Experts:
    return "experts";
  case OpCode::DenseFfn:
    return role == GroupRole::Attention ? "attention" : "dense_ffn";
  default:
    return ""; // sends and receives: the simulator's network model
  }
}

void writeOpTimes(const Plan &plan, const OpProfile &profile, const std::string &path) {
  // (role, op, phase) -> (group, layer, mb, step) -> rank -> seconds
  using Key = std::tuple<std::string, std::string, std::string>;
  using Where = std::tuple<int, int64_t, int64_t, int64_t>;
  std::map<Key, std::map<Where, std::map<int, double>>> sums;
  for (int r = 0; r < profile.worldSize(); ++r) {
    const std::string role = toString(roleOfRank(plan, r));
    for (const OpEvent &e : profile.events(r)) {
      if (e.simOp.empty())
        continue;
      // The embedding belongs to layer 0's attention (the schedule has no embedding compute).
      const int64_t layer = e.simOp == "attention" ? std::max<int64_t>(e.layer, 0) : e.layer;
      sums[{role, e.simOp, e.phase}][{e.group, layer, e.microBatch, e.step}][r] += e.end - e.start;
    }
  }
  if (sums.empty())
    throw std::runtime_error(path + ": no compute instruction was timed (nothing to write)");
  nlohmann::json entries = nlohmann::json::array();
  for (const auto &[key, byWhere] : sums) {
    // Layer -1 (any layer) over everything, and each layer's own median (the simulator prefers the
    // exact layer: layers differ, e.g. a dense first layer).
    std::map<int64_t, std::vector<double>> busiest; // layer (-1: all) -> busiest-rank seconds
    for (const auto &[where, byRank] : byWhere) {
      double m = 0;
      for (const auto &[rank, seconds] : byRank)
        m = std::max(m, seconds);
      busiest[-1].push_back(m);
      if (std::get<1>(where) >= 0)
        busiest[std::get<1>(where)].push_back(m);
    }
    for (const auto &[layer, values] : busiest)
      entries.push_back({{"role", std::get<0>(key)},
                         {"op", std::get<1>(key)},
                         {"phase", std::get<2>(key)},
                         {"layer", layer},
                         {"seconds", median(values)},
                         {"samples", values.size()}});
  }
  nlohmann::json root = {{"format", "disagmoe-op-times"},
                         {"version", 1},
                         {"source", "disagmoe-run --backend cpu (measured medians, seconds)"},
                         {"plan", plan.path},
                         {"entries", entries}};
  writeAtomically(path, root.dump(1) + "\n");
}

void writeExecutionTrace(const Plan &plan, const OpProfile &profile, int64_t step,
                         const std::string &path) {
  // The layout the simulator's traces share (runtime/sim/Simulator.cpp, writeTrace): a process per
  // rank (pid = rank), a track per stream (tid 0 forward, 1 backward, 2 comm), args mb, layer,
  // phase and step (1-based, as the training log counts), bytes on the comm stream's messages and a
  // flow arrow from each send to its receive.
  nlohmann::json events = nlohmann::json::array();
  static const char *const streamNames[kStreams] = {"forward", "backward", "comm"};
  // The k-th message from a to b with tag t, on both sides: one flow id.
  std::map<std::tuple<int, int, int, int64_t>, int64_t> flowIds;
  std::map<std::tuple<int, int, int>, int64_t> sentSoFar, receivedSoFar;
  auto flowId = [&](int src, int dst, int tag, bool sent) {
    auto &count = sent ? sentSoFar : receivedSoFar;
    const int64_t k = count[{src, dst, tag}]++;
    auto [it, inserted] = flowIds.try_emplace({src, dst, tag, k}, 0);
    if (inserted)
      it->second = static_cast<int64_t>(flowIds.size());
    return it->second;
  };
  for (int r = 0; r < profile.worldSize(); ++r) {
    std::string group = "?";
    for (const Group &g : plan.placement.groups)
      if (std::find(g.ranks.begin(), g.ranks.end(), r) != g.ranks.end())
        group = std::string(toString(g.role)) + " group " + std::to_string(g.index);
    events.push_back({{"ph", "M"},
                      {"name", "process_name"},
                      {"pid", r},
                      {"args", {{"name", "rank " + std::to_string(r) + " (" + group + ")"}}}});
    events.push_back(
        {{"ph", "M"}, {"name", "process_sort_index"}, {"pid", r}, {"args", {{"sort_index", r}}}});
    bool used[kStreams] = {true, false, false};
    for (const OpEvent &e : profile.events(r))
      if (step < 0 || e.step == step)
        used[e.stream] = true;
    for (int st = 0; st < kStreams; ++st)
      if (used[st])
        events.push_back({{"ph", "M"},
                          {"name", "thread_name"},
                          {"pid", r},
                          {"tid", st},
                          {"args", {{"name", streamNames[st]}}}});
    for (const OpEvent &e : profile.events(r)) {
      if (step >= 0 && e.step != step)
        continue;
      nlohmann::json args = {
          {"layer", e.layer}, {"mb", e.microBatch}, {"phase", e.phase}, {"step", e.step + 1}};
      if (e.stream == kCommStream) { // the comm worker's own sends and receives
        if (e.bytes >= 0) {
          args["bytes"] = e.bytes;
          args["peer"] = e.peer;
          args["tag"] = e.tag;
        }
        events.push_back({{"ph", "X"},
                          {"name", e.name},
                          {"cat", "comm"},
                          {"pid", r},
                          {"tid", kCommStream},
                          {"ts", e.start * 1e6},
                          {"dur", (e.end - e.start) * 1e6},
                          {"args", args}});
        if (e.peer >= 0) {
          const int64_t id =
              e.sent ? flowId(r, e.peer, e.tag, true) : flowId(e.peer, r, e.tag, false);
          nlohmann::json flow = {{"ph", e.sent ? "s" : "f"},
                                 {"name", "message"},
                                 {"cat", "flow"},
                                 {"id", id},
                                 {"pid", r},
                                 {"tid", kCommStream},
                                 {"ts", e.start * 1e6}};
          if (!e.sent)
            flow["bp"] = "e";
          events.push_back(std::move(flow));
        }
        continue;
      }
      // The backward of a send receives the gradient, the backward of a receive sends it.
      const bool bwd = e.phase == "backward";
      const bool sendName = e.name.find("send") != std::string::npos,
                 recvName = e.name.find("recv") != std::string::npos;
      const bool send = bwd ? recvName : sendName, recv = bwd ? sendName : recvName;
      const std::string cat = !e.simOp.empty() ? "compute"
                              : send           ? "send"
                              : recv           ? "recv"
                                               : "other";
      events.push_back({{"ph", "X"},
                        {"name", e.name + (e.phase == "backward" ? " (bwd)" : "")},
                        {"cat", cat},
                        {"pid", r},
                        {"tid", e.stream},
                        {"ts", e.start * 1e6},
                        {"dur", (e.end - e.start) * 1e6},
                        {"args", args}});
    }
  }
  nlohmann::json root = {{"traceEvents", events},
                         {"displayTimeUnit", "ms"},
                         {"otherData", {{"source", "disagmoe-run " + plan.path}}}};
  writeAtomically(path, root.dump() + "\n");
}

} // namespace disagmoe
