//===- Simulator.cpp - discrete-event replay of a schedule ---------------------===//
#include "runtime/sim/Simulator.h"
#include "runtime/io/FileKind.h"
#include "runtime/sim/MessageIndex.h"

#include "runtime/io/JsonError.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <queue>
#include <sstream>

namespace disagmoe::sim {

using sched::Instr;
using sched::Kind;
using sched::Peers;
using sched::Phase;
using sched::Schedule;
using sched::Stream;

// ---- calibration ---------------------------------------------------------------------------

const OpTimes::Entry *OpTimes::find(const std::string &role, const std::string &op, Phase phase,
                                    int layer) const {
  const Entry *best = nullptr;
  int bestScore = -1;
  for (const Entry &e : entries) {
    if (e.op != op || e.phase != phase)
      continue;
    if (!e.role.empty() && e.role != role)
      continue;
    if (e.layer >= 0 && e.layer != layer)
      continue;
    int score = (e.layer >= 0 ? 2 : 0) + (e.role.empty() ? 0 : 1);
    if (score > bestScore) {
      best = &e;
      bestScore = score;
    }
  }
  return best;
}

bool OpTimes::load(const std::string &path, std::string &error) {
  if (const std::string why = inputRefusal(path); !why.empty()) {
    error = path + ": " + why;
    return false;
  }
  std::ifstream in(path);
  if (!in) {
    error = path + ": cannot open";
    return false;
  }
  std::stringstream text;
  text << in.rdbuf();
  nlohmann::json root;
  try {
    root = nlohmann::json::parse(text.str());
  } catch (const nlohmann::json::parse_error &e) {
    error = jsonParseError(path, e);
    return false;
  }
  if (!root.is_object()) {
    error = path + ": expected a JSON object at the top level";
    return false;
  }
  if (root.value("format", "") != "disagmoe-op-times") {
    error = path + ": format: expected \"disagmoe-op-times\"";
    return false;
  }
  if (!root.contains("version") || !root["version"].is_number_integer() ||
      root["version"].get<int>() != 1) {
    error = path + ": version: expected 1";
    return false;
  }
  if (!root.contains("entries") || !root["entries"].is_array()) {
    error = path + ": entries: expected an array";
    return false;
  }
  entries.clear();
  for (size_t k = 0; k < root["entries"].size(); ++k) {
    const nlohmann::json &e = root["entries"][k];
    std::string where = path + ": entries[" + std::to_string(k) + "]";
    if (!e.is_object() || !e.contains("op") || !e["op"].is_string() || !e.contains("seconds") ||
        !e["seconds"].is_number() || e["seconds"].get<double>() < 0) {
      error = where + ": needs \"op\" (string) and \"seconds\" (number >= 0)";
      return false;
    }
    Entry x;
    x.op = e["op"].get<std::string>();
    x.seconds = e["seconds"].get<double>();
    if (e.contains("role")) {
      if (!e["role"].is_string()) {
        error = where + ".role: expected a string";
        return false;
      }
      x.role = e["role"].get<std::string>();
    }
    std::string phase = e.value("phase", "forward");
    if (phase == "forward")
      x.phase = Phase::Forward;
    else if (phase == "backward")
      x.phase = Phase::Backward;
    else if (phase == "update")
      x.phase = Phase::Update;
    else {
      error = where + ".phase: \"" + phase + "\" is not forward, backward or update";
      return false;
    }
    if (e.contains("layer")) {
      if (!e["layer"].is_number_integer()) {
        error = where + ".layer: expected an integer (-1: any layer)";
        return false;
      }
      x.layer = e["layer"].get<int>();
    }
    entries.push_back(x);
  }
  return true;
}

// ---- the simulator -------------------------------------------------------------------------

namespace {

constexpr int kNicOut = 0, kNicIn = 1, kNvlOut = 2, kNvlIn = 3;
const std::string kExchangePrefix = OpTimes::kExchangePrefix;

/// Per-rank link loads of an exchange, per byte of Instr::bytes (busiest rank of each side).
struct Loads {
  double nicOut = 0, nvlOut = 0, nicIn = 0, nvlIn = 0;
};

class Sim {
public:
  Sim(const Schedule &s, const SimOptions &o) : s_(s), o_(o) {}
  SimResult run();

private:
  // What the event loop reads of an instruction, kept here so that it does not touch the Instr.
  struct GI {
    int prog, idx, group, stream;
    Kind kind = Kind::Compute;
    double flops = 0;    // Instr::flops
    double priority = 0; // on a dynamic stream: SimOptions::priority, else its index
    double work = 0;     // compute seconds at the full rate
    int deps = 0;        // unfinished dependencies
    int state = 0;       // 0 waiting, 1 started/issued, 2 done
    int transfer = -1;
    double fixed =
        -1; // a send's measured seconds (op-times "exchange:<op>"); -1: the network model
  };
  struct Transfer {
    bool delivered = false;
    int recv = -1;
  };
  struct Flow {
    int n = 0; // link classes it loads: at most out NIC, out NVLink, in NIC, in NVLink
    int cls[4];
    double load[4];
    double need[4]; // load x rmax: its demand on each class while open
    double rem = 1, rate = 0, rmax = 0;
    int gid = -1, transfer = -1;
    int groups[2] = {-1, -1};
    bool active = false;
  };
  struct Ev {
    double t;
    int64_t seq;
    int type; // 0 compute of a group, 1 flows, 2 a send with a measured time (id: its instruction)
    int id;
    int64_t ver;
    bool operator>(const Ev &o) const { return t != o.t ? t > o.t : seq > o.seq; }
  };
  struct GroupState {
    std::vector<int> list[3];
    size_t head[3] = {0, 0, 0};
    int running[2] = {-1, -1};
    std::priority_queue<std::pair<double, int>, std::vector<std::pair<double, int>>,
                        std::greater<std::pair<double, int>>>
        ready[3];
    std::vector<std::pair<int, double>> ps; // processor sharing: (gid, remaining work)
    double psLast = 0;
    int64_t psVer = 0;
    int commFlows = 0;
    double last = 0;
    bool dirty = false;
  };

  Loads loadsFor(const Instr &in);
  int node(int rank) const { return rank / std::max(1, s_.hw.gpusPerNode); }
  double capacity(int cls) const {
    int g = cls / 4, k = cls % 4;
    if (k == kNicOut || k == kNicIn)
      return s_.groups[g].nicBandwidth > 0 ? s_.groups[g].nicBandwidth : s_.hw.nicBandwidth;
    return s_.hw.nvlinkBandwidth;
  }
  void touch(int g) {
    GroupState &G = gs_[g];
    double dt = now_ - G.last;
    if (dt > 0) {
      GroupStats &st = res_.groups[g];
      bool comp = !G.ps.empty(), comm = G.commFlows > 0;
      if (comp)
        st.busy += dt;
      if (comm)
        st.commActive += dt;
      if (comm && !comp)
        st.exposedComm += dt;
    }
    G.last = now_;
  }
  void push(int type, int id, int64_t ver, double t) { heap_.push(Ev{t, seq_++, type, id, ver}); }
  bool dynamicStream(int stream) const { return stream == 2 ? o_.dynamicComm : o_.dynamicCompute; }
  void markDirty(int g) {
    if (!gs_[g].dirty) {
      gs_[g].dirty = true;
      dirty_.push_back(g);
    }
  }
  void complete(int gid);
  void completeSend(int gid, int transfer);
  void start(int gid);
  void issueExchange(int gid);
  double psRate(const GroupState &G, int gid) const;
  void psUpdate(int g);
  void psSchedule(int g);
  // With SimOptions::hostCores every group's rate depends on every other's: all of them.
  void psUpdateAll(int g) {
    if (o_.hostCores <= 0)
      return psUpdate(g);
    for (size_t k = 0; k < gs_.size(); ++k)
      psUpdate(static_cast<int>(k));
  }
  void psScheduleAll(int g) {
    if (o_.hostCores <= 0)
      return psSchedule(g);
    for (size_t k = 0; k < gs_.size(); ++k)
      psSchedule(static_cast<int>(k));
  }
  void advance(int g);
  void addFlow(Flow f);
  void updateFlows();
  void recomputeRates();
  void drain();

  const Schedule &s_;
  const SimOptions &o_;
  SimResult res_;
  std::vector<GI> gi_;
  std::vector<int> offset_;
  std::vector<int> depStart_, depList_; // CSR of dependents
  std::vector<GroupState> gs_;
  std::vector<Transfer> transfers_; // one per message (MessageIndex)
  std::map<std::tuple<int, int, int, int>, Loads> loadCache_;
  std::vector<Flow> flows_;
  std::vector<int> activeFlows_, freeFlows_;
  double flowsLast_ = 0;
  int64_t flowEpoch_ = 0;
  std::priority_queue<Ev, std::vector<Ev>, std::greater<Ev>> heap_;
  int64_t seq_ = 0, startCount_ = 0;
  double now_ = 0;
  std::vector<int> dirty_;
  std::vector<double> used_, demand_, capacity_; // per link class (capacity(): fixed)
  std::vector<int64_t> mark_;
  std::vector<char> saturated_;
  int64_t stamp_ = 0;
  std::vector<int> touchedCls_;
  // Scratch of the event loop, reused so that an event allocates nothing.
  std::vector<int> finished_, open_, still_, frozen_;
  std::vector<double> rates_;
};

Loads Sim::loadsFor(const Instr &in) {
  int code = static_cast<int>(in.kind) * 2 + static_cast<int>(in.peers);
  auto key = std::make_tuple(
      in.group, in.kind == Kind::Send || in.kind == Kind::Recv ? in.peer : -1, code, 0);
  auto it = loadCache_.find(key);
  if (it != loadCache_.end())
    return it->second;
  Loads L;
  const sched::Group &A = s_.groups[in.group];
  auto countPeers = [&](int self, const std::vector<int> &peers, double &nic, double &nvl) {
    double a = 0, b = 0;
    for (int q : peers) {
      if (q == self)
        continue;
      if (node(q) == node(self))
        ++b;
      else
        ++a;
    }
    nic = std::max(nic, a);
    nvl = std::max(nvl, b);
  };
  if (in.kind == Kind::Send) {
    const sched::Group &B = s_.groups[in.peer];
    for (size_t r = 0; r < A.ranks.size(); ++r) {
      if (in.peers == Peers::All) {
        for (int a : A.ranks[r])
          countPeers(a, B.ranks[r], L.nicOut, L.nvlOut);
        for (int b : B.ranks[r])
          countPeers(b, A.ranks[r], L.nicIn, L.nvlIn);
      } else {
        for (size_t i = 0; i < A.ranks[r].size(); ++i) {
          int a = A.ranks[r][i], b = B.ranks[r][i];
          if (a == b)
            continue;
          if (node(a) == node(b))
            L.nvlOut = L.nvlIn = 1;
          else
            L.nicOut = L.nicIn = 1;
        }
      }
    }
  } else if (in.kind == Kind::AllToAll) {
    for (const auto &rep : A.ranks)
      for (int a : rep)
        countPeers(a, rep, L.nicOut, L.nvlOut);
    L.nicIn = L.nicOut;
    L.nvlIn = L.nvlOut;
  } else if (isCollective(in.kind)) {
    // Hierarchical ring (NCCL's intra-node then inter-node rings, pipelined over chunks): a set of
    // n members on N nodes with k of them on a node moves, per member, (k-1)/k of the payload over
    // NVLink for the intra-node reduce-scatter and again for the all-gather, and 2 (N-1)/N of its
    // 1/k shard over its NIC for the inter-node all-reduce (Patarasuk & Yuan 2009 per level). A
    // reduce-scatter or an all-gather alone is half of each. With k = 1 this is the flat ring
    // over NICs, with N = 1 the flat ring over NVLink. The busiest node (fewest members, most NIC
    // bytes each; most members, most NVLink bytes) sets the loads.
    std::vector<std::vector<int>> sets;
    if (in.peers == Peers::All) {
      sets.emplace_back();
      for (const auto &rep : A.ranks)
        sets.back().insert(sets.back().end(), rep.begin(), rep.end());
    } else {
      for (int i = 0; i < A.size(); ++i) {
        sets.emplace_back();
        for (const auto &rep : A.ranks)
          sets.back().push_back(rep[i]);
      }
    }
    const double half = in.kind == Kind::AllReduce ? 1.0 : 0.5;
    for (const auto &set : sets) {
      if (set.size() < 2)
        continue;
      std::map<int, int> perNode;
      for (int q : set)
        ++perNode[node(q)];
      int kMin = static_cast<int>(set.size()), kMax = 0;
      for (const auto &[nd, k] : perNode) {
        kMin = std::min(kMin, k);
        kMax = std::max(kMax, k);
      }
      const double N = static_cast<double>(perNode.size());
      const double nvl = half * 2 * (kMax - 1) / static_cast<double>(kMax);
      const double nic = N > 1 ? half * 2 * (N - 1) / N / static_cast<double>(kMin) : 0.0;
      L.nicOut = L.nicIn = std::max(L.nicOut, nic);
      L.nvlOut = L.nvlIn = std::max(L.nvlOut, nvl);
    }
  }
  loadCache_[key] = L;
  return L;
}

/// Rate of each running compute instruction: equal shares (processor sharing), or, with
/// Schedule::Sharing::Backward, the backward stream first (the forward gets what it leaves:
/// nothing). With Exclusive, at most one runs (advance() starts no second one).
double Sim::psRate(const GroupState &G, int gid) const {
  if (o_.hostCores > 0) { // every running instruction of every rank is a thread; C cores shared
    double threads = 0;
    for (size_t g = 0; g < gs_.size(); ++g)
      threads += static_cast<double>(gs_[g].ps.size()) * s_.groups[g].size();
    return std::min(1.0, o_.hostCores / threads);
  }
  if (s_.sharing != Schedule::Sharing::Backward)
    return 1.0 / static_cast<double>(G.ps.size());
  int bwd = 0;
  for (const auto &p : G.ps)
    bwd += gi_[p.first].stream == 1;
  if (bwd == 0)
    return 1.0 / static_cast<double>(G.ps.size());
  return gi_[gid].stream == 1 ? 1.0 / bwd : 0.0;
}

void Sim::psUpdate(int g) {
  GroupState &G = gs_[g];
  const double dt = now_ - G.psLast;
  if (!G.ps.empty() && dt > 0) {
    rates_.clear();
    for (auto &p : G.ps)
      rates_.push_back(psRate(G, p.first));
    for (size_t k = 0; k < G.ps.size(); ++k)
      G.ps[k].second -= dt * rates_[k];
  }
  G.psLast = now_;
}

void Sim::psSchedule(int g) {
  GroupState &G = gs_[g];
  ++G.psVer;
  if (G.ps.empty())
    return;
  double next = 1e300;
  for (auto &p : G.ps) {
    double rate = psRate(G, p.first);
    if (rate > 0)
      next = std::min(next, std::max(0.0, p.second) / rate);
  }
  push(0, g, G.psVer, now_ + next);
}

// A send (or flow-carried instruction) is done: complete it and, when it carries a transfer,
// deliver the message and complete a receive already waiting for it.
void Sim::completeSend(int gid, int transfer) {
  complete(gid);
  if (transfer < 0)
    return;
  Transfer &t = transfers_[transfer];
  t.delivered = true;
  if (t.recv >= 0)
    complete(t.recv);
}

void Sim::complete(int gid) {
  GI &x = gi_[gid];
  if (x.state == 2)
    return;
  x.state = 2;
  if (o_.recordTimes)
    res_.end[x.prog][x.idx] = now_;
  GroupState &G = gs_[x.group];
  res_.groups[x.group].lastEnd = std::max(res_.groups[x.group].lastEnd, now_);
  if (x.stream < 2 && G.running[x.stream] == gid)
    G.running[x.stream] = -1;
  markDirty(x.group);
  for (int k = depStart_[gid]; k < depStart_[gid + 1]; ++k) {
    int d = depList_[k];
    if (--gi_[d].deps == 0) {
      if (dynamicStream(gi_[d].stream))
        gs_[gi_[d].group].ready[gi_[d].stream].push({gi_[d].priority, d});
      markDirty(gi_[d].group);
    }
  }
}

void Sim::addFlow(Flow f) {
  updateFlows();
  int id;
  if (!freeFlows_.empty()) {
    id = freeFlows_.back();
    freeFlows_.pop_back();
    flows_[id] = f;
  } else {
    id = static_cast<int>(flows_.size());
    flows_.push_back(f);
  }
  Flow &F = flows_[id];
  F.active = true;
  F.rem = 1;
  F.rmax = 1e300;
  for (int k = 0; k < F.n; ++k)
    F.rmax = std::min(F.rmax, capacity_[F.cls[k]] / F.load[k]);
  for (int k = 0; k < F.n; ++k)
    F.need[k] = F.load[k] * F.rmax;
  for (int g : F.groups)
    if (g >= 0) {
      touch(g);
      ++gs_[g].commFlows;
    }
  activeFlows_.push_back(id);
  ++res_.flows;
  recomputeRates();
}

void Sim::updateFlows() {
  double dt = now_ - flowsLast_;
  if (dt > 0)
    for (int id : activeFlows_)
      flows_[id].rem -= flows_[id].rate * dt;
  flowsLast_ = now_;
}

void Sim::recomputeRates() {
  // Progressive filling on x_f = rate_f / rmax_f (each flow's fraction of its stand-alone speed):
  // raise x for every open flow until a link class saturates, freeze the flows through it, repeat.
  ++stamp_;
  touchedCls_.clear();
  for (int id : activeFlows_)
    for (int k = 0; k < flows_[id].n; ++k) {
      int c = flows_[id].cls[k];
      if (mark_[c] != stamp_) {
        mark_[c] = stamp_;
        touchedCls_.push_back(c);
        used_[c] = 0;
      }
    }
  open_ = activeFlows_;
  while (!open_.empty()) {
    for (int c : touchedCls_)
      demand_[c] = 0;
    for (int id : open_)
      for (int k = 0; k < flows_[id].n; ++k)
        demand_[flows_[id].cls[k]] += flows_[id].need[k];
    double x = 1; // a flow never exceeds its stand-alone speed
    for (int c : touchedCls_)
      if (demand_[c] > 0)
        x = std::min(x, std::max(0.0, capacity_[c] - used_[c]) / demand_[c]);
    // A flow is frozen when one of its classes saturates at x: decided once per class (used_ and
    // demand_ do not change during the pass).
    for (int c : touchedCls_)
      saturated_[c] = std::max(0.0, capacity_[c] - used_[c]) <= x * demand_[c] * (1 + 1e-9);
    still_.clear();
    frozen_.clear();
    for (int id : open_) {
      Flow &F = flows_[id];
      bool bottleneck = x >= 1;
      for (int k = 0; k < F.n && !bottleneck; ++k)
        bottleneck = saturated_[F.cls[k]];
      if (bottleneck) {
        F.rate = x * F.rmax;
        frozen_.push_back(id);
      } else {
        still_.push_back(id);
      }
    }
    if (frozen_.empty()) { // numerical safety
      for (int id : still_)
        flows_[id].rate = x * flows_[id].rmax;
      break;
    }
    for (int id : frozen_)
      for (int k = 0; k < flows_[id].n; ++k)
        used_[flows_[id].cls[k]] += flows_[id].load[k] * flows_[id].rate;
    open_.swap(still_);
  }
  ++flowEpoch_;
  double next = 1e300;
  for (int id : activeFlows_)
    if (flows_[id].rate > 0)
      next = std::min(next, now_ + std::max(0.0, flows_[id].rem) / flows_[id].rate);
  if (next < 1e300)
    push(1, 0, flowEpoch_, next);
}

void Sim::issueExchange(int gid) {
  GI &x = gi_[gid];
  const Instr &in = s_.programs[x.prog].instrs[x.idx];
  if (in.kind == Kind::Recv) {
    Transfer &t = transfers_[x.transfer];
    if (t.delivered)
      complete(gid);
    else
      t.recv = gid;
    return;
  }
  if (x.fixed >= 0) { // measured: done (and delivered) `fixed` seconds after it starts
    for (int g : {in.group, in.peer}) { // counts as communication of both groups, as a flow does
      touch(g);
      ++gs_[g].commFlows;
      if (in.peer == in.group)
        break;
    }
    ++res_.flows;
    push(2, gid, 0, now_ + x.fixed);
    return;
  }
  Loads L = loadsFor(in);
  Flow f;
  auto add = [&](int g, int k, double perByte) {
    double b = perByte * in.bytes;
    if (b > 0) {
      f.cls[f.n] = g * 4 + k;
      f.load[f.n] = b;
      ++f.n;
    }
  };
  int dst = in.kind == Kind::Send ? in.peer : in.group;
  add(in.group, kNicOut, L.nicOut);
  add(in.group, kNvlOut, L.nvlOut);
  add(dst, kNicIn, L.nicIn);
  add(dst, kNvlIn, L.nvlIn);
  f.gid = gid;
  f.transfer = in.kind == Kind::Send ? x.transfer : -1;
  f.groups[0] = in.group;
  f.groups[1] = dst != in.group ? dst : -1;
  if (f.n == 0) { // nothing crosses a link (a rank to itself, a one-rank all-reduce)
    completeSend(gid, f.transfer);
    return;
  }
  addFlow(f);
}

void Sim::start(int gid) {
  GI &x = gi_[gid];
  x.state = 1;
  if (o_.recordTimes) {
    res_.start[x.prog][x.idx] = now_;
    res_.startOrder[x.prog][x.idx] = startCount_++;
  }
  GroupState &G = gs_[x.group];
  if (x.stream < 2)
    G.running[x.stream] = gid;
  if (x.kind == Kind::Compute) {
    GroupStats &st = res_.groups[x.group];
    if (st.firstStart < 0)
      st.firstStart = now_;
    st.flops += x.flops;
    if (x.work <= 0) {
      complete(gid);
      return;
    }
    psUpdateAll(x.group);
    touch(x.group);
    G.ps.push_back({gid, x.work});
    psScheduleAll(x.group);
    return;
  }
  issueExchange(gid);
}

void Sim::advance(int g) {
  GroupState &G = gs_[g];
  bool progress = true;
  while (progress) {
    progress = false;
    // On a CPU host (hostCores) a rank's streams are threads of their own: never exclusive.
    const bool exclusive = s_.sharing == Schedule::Sharing::Exclusive && o_.hostCores <= 0;
    for (int st : {1, 0}) { // the backward stream first when the GPU is exclusive
      if (G.running[st] >= 0)
        continue;
      int next = -1;
      if (o_.dynamicCompute) {
        if (!G.ready[st].empty())
          next = G.ready[st].top().second;
      } else if (G.head[st] < G.list[st].size() && gi_[G.list[st][G.head[st]]].deps == 0) {
        next = G.list[st][G.head[st]];
      }
      if (next < 0)
        continue;
      if (exclusive && !G.ps.empty() && gi_[next].kind == Kind::Compute && gi_[next].work > 0)
        continue; // the GPU is busy: wait for it
      if (o_.dynamicCompute)
        G.ready[st].pop();
      else
        ++G.head[st];
      start(next);
      progress = true;
    }
    if (o_.dynamicComm) {
      while (!G.ready[2].empty()) {
        int next = G.ready[2].top().second;
        G.ready[2].pop();
        start(next);
        progress = true;
      }
    } else {
      while (G.head[2] < G.list[2].size() && gi_[G.list[2][G.head[2]]].deps == 0) {
        start(G.list[2][G.head[2]++]);
        progress = true;
      }
    }
  }
}

void Sim::drain() {
  while (!dirty_.empty()) {
    int g = dirty_.back();
    dirty_.pop_back();
    gs_[g].dirty = false;
    advance(g);
  }
}

SimResult Sim::run() {
  auto wall = std::chrono::steady_clock::now();
  const int G = static_cast<int>(s_.groups.size());
  res_.groups.assign(G, GroupStats());
  gs_.assign(G, GroupState());
  used_.assign(4 * G, 0.0);
  demand_.assign(4 * G, 0.0);
  mark_.assign(4 * G, 0);
  saturated_.assign(4 * G, 0);
  capacity_.resize(4 * G);
  for (int c = 0; c < 4 * G; ++c)
    capacity_[c] = capacity(c);
  // Flatten the programs.
  offset_.clear();
  int total = 0;
  for (const auto &p : s_.programs) {
    offset_.push_back(total);
    total += static_cast<int>(p.instrs.size());
  }
  res_.instructions = total;
  if (o_.recordTimes) {
    res_.start.resize(s_.programs.size());
    res_.end.resize(s_.programs.size());
    res_.startOrder.resize(s_.programs.size());
    for (size_t p = 0; p < s_.programs.size(); ++p) {
      res_.startOrder[p].assign(s_.programs[p].instrs.size(), -1);
      res_.start[p].assign(s_.programs[p].instrs.size(), -1);
      res_.end[p].assign(s_.programs[p].instrs.size(), -1);
    }
  }
  gi_.resize(total);
  const MessageIndex messages = indexMessages(s_);
  transfers_.assign(messages.count, Transfer());
  std::vector<int> counts(total + 1, 0);
  const double peak = s_.hw.peakFlops * (s_.computeEfficiency > 0 ? s_.computeEfficiency : 1.0);
  for (size_t p = 0; p < s_.programs.size(); ++p) {
    const auto &P = s_.programs[p];
    for (size_t i = 0; i < P.instrs.size(); ++i) {
      const Instr &in = P.instrs[i];
      int gid = offset_[p] + static_cast<int>(i);
      GI &x = gi_[gid];
      x.prog = static_cast<int>(p);
      x.idx = static_cast<int>(i);
      x.group = in.group;
      x.stream = static_cast<int>(in.stream);
      x.kind = in.kind;
      x.flops = in.flops;
      if (dynamicStream(x.stream))
        x.priority = o_.priority ? (*o_.priority)[p][i] : static_cast<double>(i);
      x.deps = static_cast<int>(in.after.size());
      for (int d : in.after)
        ++counts[offset_[p] + d];
      if (in.kind == Kind::Compute) {
        const OpTimes::Entry *e =
            o_.opTimes ? o_.opTimes->find(P.role, in.op, in.phase, in.layer) : nullptr;
        x.work = e ? e->seconds
                   : std::max(peak > 0 ? in.flops / peak : 0.0,
                              s_.hw.hbmBandwidth > 0 ? in.memBytes / s_.hw.hbmBandwidth : 0.0);
      }
      if (in.kind == Kind::Send && o_.opTimes) { // a measured exchange replaces the network model
        const OpTimes::Entry *e =
            o_.opTimes->find(P.role, kExchangePrefix + in.op, in.phase, in.layer);
        x.fixed = e ? e->seconds : -1;
      }
      x.transfer = messages.message[p][i];
      gs_[in.group].list[x.stream].push_back(gid);
    }
  }
  depStart_.assign(total + 1, 0);
  for (int i = 0; i < total; ++i)
    depStart_[i + 1] = depStart_[i] + counts[i];
  depList_.assign(depStart_[total], 0);
  std::vector<int> fill(depStart_.begin(), depStart_.end() - 1);
  for (size_t p = 0; p < s_.programs.size(); ++p)
    for (size_t i = 0; i < s_.programs[p].instrs.size(); ++i)
      for (int d : s_.programs[p].instrs[i].after)
        depList_[fill[offset_[p] + d]++] = offset_[p] + static_cast<int>(i);
  for (int gid = 0; gid < total; ++gid)
    if (gi_[gid].deps == 0 && dynamicStream(gi_[gid].stream))
      gs_[gi_[gid].group].ready[gi_[gid].stream].push({gi_[gid].priority, gid});
  for (int g = 0; g < G; ++g)
    markDirty(g);
  drain();
  while (!heap_.empty()) {
    Ev ev = heap_.top();
    heap_.pop();
    ++res_.events;
    if (ev.type == 0 && ev.ver != gs_[ev.id].psVer)
      continue;
    if (ev.type == 1 && ev.ver != flowEpoch_)
      continue;
    now_ = std::max(now_, ev.t);
    if (ev.type == 2) { // a measured send (issueExchange): complete it and deliver its message
      const Instr &in = s_.programs[gi_[ev.id].prog].instrs[gi_[ev.id].idx];
      for (int g : {in.group, in.peer}) {
        touch(g);
        --gs_[g].commFlows;
        if (in.peer == in.group)
          break;
      }
      completeSend(ev.id, gi_[ev.id].transfer);
      drain();
      continue;
    }
    if (ev.type == 0) {
      int g = ev.id;
      psUpdateAll(g);
      touch(g);
      GroupState &Gs = gs_[g];
      std::vector<int> &finished = finished_;
      finished.clear();
      double eps = 1e-12;
      for (size_t k = 0; k < Gs.ps.size();) {
        // Also done when its remaining time no longer moves the clock: late in a long schedule
        // (now_ ~ 1e5 s and beyond) a remainder above eps but below now_'s rounding step would
        // otherwise be rescheduled at now_ forever, never shrinking (dt = 0).
        const double rate = psRate(Gs, Gs.ps[k].first);
        if (Gs.ps[k].second <= eps || (rate > 0 && now_ + Gs.ps[k].second / rate <= now_)) {
          finished.push_back(Gs.ps[k].first);
          Gs.ps[k] = Gs.ps.back();
          Gs.ps.pop_back();
        } else {
          ++k;
        }
      }
      psScheduleAll(g);
      for (int gid : finished)
        complete(gid);
    } else {
      updateFlows();
      std::vector<int> &finished = finished_;
      finished.clear();
      for (size_t k = 0; k < activeFlows_.size();) {
        Flow &F = flows_[activeFlows_[k]];
        if (F.rem <= 1e-9 ||
            (F.rate > 0 && (F.rem / F.rate <= 1e-12 || now_ + F.rem / F.rate <= now_))) {
          finished.push_back(activeFlows_[k]);
          activeFlows_[k] = activeFlows_.back();
          activeFlows_.pop_back();
        } else {
          ++k;
        }
      }
      for (int id : finished) {
        Flow &F = flows_[id];
        F.active = false;
        for (int g : F.groups)
          if (g >= 0) {
            touch(g);
            --gs_[g].commFlows;
          }
        freeFlows_.push_back(id);
      }
      recomputeRates();
      for (int id : finished)
        completeSend(flows_[id].gid, flows_[id].transfer);
    }
    drain();
  }
  // Everything must have completed.
  for (int gid = 0; gid < total; ++gid)
    if (gi_[gid].state != 2) {
      const GI &x = gi_[gid];
      // Report the first stuck instruction of that group's stream.
      int first = gid;
      for (int k : gs_[x.group].list[x.stream])
        if (gi_[k].state != 2) {
          first = k;
          break;
        }
      const GI &f = gi_[first];
      res_.error =
          "the simulation stopped at t = " + std::to_string(now_) +
          " s with unfinished work: " + sched::describe(s_, f.prog, f.idx) +
          (f.state == 1 ? " never completes (its message never arrives)"
                        : " never starts (it waits on an instruction that never completes)");
      return res_;
    }
  res_.stepTime = now_;
  for (int g = 0; g < G; ++g)
    touch(g);
  double ranks = 0, busy = 0, exposed = 0, comm = 0;
  for (int g = 0; g < G; ++g) {
    double n = static_cast<double>(s_.groups[g].size()) * static_cast<double>(s_.replicas);
    ranks += n;
    busy += n * res_.groups[g].busy;
    exposed += n * res_.groups[g].exposedComm;
    comm += n * res_.groups[g].commActive;
  }
  if (ranks > 0 && res_.stepTime > 0) {
    res_.busy = busy / ranks;
    res_.bubbleFraction = 1 - res_.busy / res_.stepTime;
    res_.exposedComm = exposed / ranks;
    res_.commActive = comm / ranks;
    res_.mfu = s_.modelFlops / (res_.stepTime * ranks * s_.hw.peakFlops);
  }
  res_.ok = true;
  res_.wallSeconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall).count();
  return res_;
}

} // namespace

SimResult simulate(const Schedule &s, const SimOptions &options) {
  SimResult r;
  try {
    Sim sim(s, options);
    return sim.run();
  } catch (const std::exception &e) {
    r.error = std::string("simulation failed: ") + e.what();
  }
  return r;
}

// ---- freezing a dynamic run's order --------------------------------------------------------

void freezeOrder(Schedule &s, const SimResult &run) {
  // The issue time of each send, by message (the last send of a name, in program order).
  struct SendAt {
    double t = 0;
    int64_t seq = 0;
    bool found = false;
  };
  const MessageIndex messages = indexMessages(s);
  std::vector<SendAt> sendAt(messages.count);
  for (size_t p = 0; p < s.programs.size(); ++p)
    for (size_t i = 0; i < s.programs[p].instrs.size(); ++i)
      if (s.programs[p].instrs[i].kind == Kind::Send)
        sendAt[messages.message[p][i]] = {run.start[p][i], run.startOrder[p][i], true};
  for (size_t p = 0; p < s.programs.size(); ++p) {
    sched::Program &P = s.programs[p];
    const int n = static_cast<int>(P.instrs.size());
    // (group, time, global start order): a receive takes its send's place, so that it is posted
    // before anything that depends on its arrival and in send order within each pair of groups.
    // The keys themselves are sorted (contiguous, no indirection), each carrying its index.
    struct Key {
      int group;
      double t;
      int64_t seq;
      int stream;
      int index;
    };
    std::vector<Key> keys(n);
    for (int i = 0; i < n; ++i) {
      const Instr &in = P.instrs[i];
      Key k{in.group, run.start[p][i], run.startOrder[p][i], static_cast<int>(in.stream), i};
      if (in.kind == Kind::Recv) {
        const SendAt &at = sendAt[messages.message[p][i]];
        if (at.found) {
          k.t = at.t;
          k.seq = at.seq;
        }
      }
      keys[i] = k;
    }
    std::stable_sort(keys.begin(), keys.end(), [](const Key &x, const Key &y) {
      if (x.group != y.group)
        return x.group < y.group;
      if (x.t != y.t)
        return x.t < y.t;
      if (x.seq != y.seq)
        return x.seq < y.seq;
      return x.stream < y.stream;
    });
    std::vector<int> newIndex(n);
    for (int k = 0; k < n; ++k)
      newIndex[keys[k].index] = k;
    for (Instr &in : P.instrs)
      for (int &d : in.after)
        d = newIndex[d];
    // Permuted in place, cycle by cycle (no second copy of a program of millions of
    // instructions): instruction i goes to newIndex[i].
    for (int i = 0; i < n; ++i)
      while (newIndex[i] != i) {
        const int j = newIndex[i];
        std::swap(P.instrs[i], P.instrs[j]);
        std::swap(newIndex[i], newIndex[j]);
      }
  }
}

// ---- Chrome trace --------------------------------------------------------------------------

bool writeChromeTrace(const Schedule &s, const SimResult &r, const std::string &path,
                      std::string &error, int64_t maxEvents) {
  if (r.start.size() != s.programs.size()) {
    error = "the simulation did not record instruction times";
    return false;
  }
  // The rename would replace a device, FIFO or symlink: refuse it (again just before the rename).
  if (const std::string why = outputRefusal(path); !why.empty()) {
    error = path + ": " + why;
    return false;
  }
  std::string tmp = path + ".tmp";
  FILE *f = std::fopen(tmp.c_str(), "w");
  if (!f) {
    error = path + ": cannot write";
    return false;
  }
  std::fprintf(f, "{\"displayTimeUnit\": \"ms\", \"traceEvents\": [\n");
  bool first = true;
  auto sep = [&] {
    if (!first)
      std::fprintf(f, ",\n");
    first = false;
  };
  // The runtime's layout (runtime/executor/OpProfile.h, writeExecutionTrace): a process per rank,
  // here one per group standing for its ranks (pid = the group's first rank), a track per stream.
  std::vector<int> pidOf(s.groups.size());
  for (size_t g = 0; g < s.groups.size(); ++g) {
    pidOf[g] = s.groups[g].ranks[0][0];
    sep();
    std::fprintf(f,
                 "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":%d,\"args\":{\"name\":\"rank %d "
                 "(%s group %d, %d ranks)\"}}",
                 pidOf[g], s.groups[g].ranks[0][0], s.groups[g].role.c_str(), s.groups[g].index,
                 s.groups[g].size());
  }
  int64_t events = 0;
  // Comm lanes per group: greedy interval colouring so that slices on one thread never overlap.
  std::vector<std::vector<double>> laneEnd(s.groups.size());
  std::vector<std::tuple<double, int, int>> comm; // (start, prog, idx)
  for (size_t p = 0; p < s.programs.size(); ++p)
    for (size_t i = 0; i < s.programs[p].instrs.size(); ++i) {
      const Instr &in = s.programs[p].instrs[i];
      double t0 = r.start[p][i], t1 = r.end[p][i];
      if (t0 < 0 || t1 < 0)
        continue;
      if (in.stream == Stream::Comm) {
        comm.emplace_back(t0, static_cast<int>(p), static_cast<int>(i));
        continue;
      }
      if (events >= maxEvents || t1 <= t0)
        continue;
      ++events;
      sep();
      std::fprintf(
          f,
          "{\"name\":\"%s "
          "%s\",\"cat\":\"%s\",\"ph\":\"X\",\"pid\":%d,\"tid\":%d,\"ts\":%.3f,\"dur\":%.3f,"
          "\"args\":{\"mb\":%d,\"layer\":%d,\"phase\":\"%s\",\"step\":1}}",
          in.op.c_str(), sched::toString(in.phase), sched::toString(in.kind), pidOf[in.group],
          static_cast<int>(in.stream), t0 * 1e6, (t1 - t0) * 1e6, in.mb, in.layer,
          sched::toString(in.phase));
    }
  std::sort(comm.begin(), comm.end());
  // Flow arrows: a Send and the Recv of the same message (groups, op, phase, micro-batch, layer).
  using MsgId = std::tuple<int, int, std::string, int, int, int>;
  struct End {
    int pid = -1;
    size_t tid = 0;
    double ts = 0;
  };
  std::map<MsgId, std::pair<End, End>> messages;
  for (const auto &[t0, p, i] : comm) {
    const Instr &in = s.programs[p].instrs[i];
    double t1 = r.end[p][i];
    if (events >= maxEvents || t1 <= t0)
      continue;
    auto &lanes = laneEnd[in.group];
    size_t lane = 0;
    while (lane < lanes.size() && lanes[lane] > t0)
      ++lane;
    if (lane == lanes.size())
      lanes.push_back(t1);
    else
      lanes[lane] = t1;
    ++events;
    sep();
    std::fprintf(
        f,
        "{\"name\":\"%s %s "
        "%s\",\"cat\":\"comm\",\"ph\":\"X\",\"pid\":%d,\"tid\":%zu,\"ts\":%.3f,\"dur\":%.3f,"
        "\"args\":{\"mb\":%d,\"layer\":%d,\"phase\":\"%s\",\"step\":1,\"bytes\":%.0f}}",
        sched::toString(in.kind), in.op.c_str(), sched::toString(in.phase), pidOf[in.group],
        2 + lane, t0 * 1e6, (t1 - t0) * 1e6, in.mb, in.layer, sched::toString(in.phase), in.bytes);
    if (in.kind == Kind::Send || in.kind == Kind::Recv) {
      const bool send = in.kind == Kind::Send;
      MsgId id{send ? in.group : in.peer,
               send ? in.peer : in.group,
               in.op,
               static_cast<int>(in.phase),
               in.mb,
               in.layer};
      // The arrow leaves the send where it starts and enters the receive just before it ends
      // (a receive is posted early, so its start may precede the send's).
      const double ts = send ? t0 * 1e6 : t1 * 1e6 - std::min(1e-3, (t1 - t0) * 5e5);
      (send ? messages[id].first : messages[id].second) = End{pidOf[in.group], 2 + lane, ts};
    }
  }
  int64_t flowId = 0;
  for (const auto &[id, ends] : messages) {
    if (ends.first.pid < 0 || ends.second.pid < 0)
      continue;
    ++flowId;
    sep();
    std::fprintf(f,
                 "{\"name\":\"message\",\"cat\":\"flow\",\"ph\":\"s\",\"id\":%lld,\"pid\":%d,"
                 "\"tid\":%zu,\"ts\":%.3f},\n"
                 "{\"name\":\"message\",\"cat\":\"flow\",\"ph\":\"f\",\"bp\":\"e\",\"id\":%lld,"
                 "\"pid\":%d,\"tid\":%zu,\"ts\":%.3f}",
                 static_cast<long long>(flowId), ends.first.pid, ends.first.tid, ends.first.ts,
                 static_cast<long long>(flowId), ends.second.pid, ends.second.tid, ends.second.ts);
  }
  for (size_t g = 0; g < s.groups.size(); ++g) {
    const char *names[] = {"forward", "backward"};
    for (int t = 0; t < 2; ++t) {
      sep();
      std::fprintf(f,
                   "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":%d,\"args\":{"
                   "\"name\":\"%s\"}}",
                   pidOf[g], t, names[t]);
    }
    for (size_t lane = 0; lane < std::max<size_t>(1, laneEnd[g].size()); ++lane) {
      sep();
      std::fprintf(f,
                   "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":%zu,\"args\":{"
                   "\"name\":\"comm %zu\"}}",
                   pidOf[g], 2 + lane, lane);
    }
  }
  std::fprintf(f, "\n]}\n");
  bool ok = std::fclose(f) == 0;
  if (const std::string why = outputRefusal(path); ok && !why.empty()) {
    std::remove(tmp.c_str());
    error = path + ": " + why;
    return false;
  }
  if (!ok || std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    error = path + ": write failed";
    return false;
  }
  return true;
}

} // namespace disagmoe::sim
