//===- ScheduleVerify.cpp - the plan verifier for schedules ----------------------===//
//
// Checks (Schedule.h, verifySchedule): structure, one exchange stream per group, send/receive
// matching per ordered pair of groups, an untimed execution that completes, compute work on every
// rank, and peak memory. Every rank of a group runs its group's instructions and every replica runs
// the same groups, so matching per pair of groups in program order is matching per pair of ranks.
//
//===----------------------------------------------------------------------===//
#include "runtime/plan/Schedule.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <map>
#include <set>
#include <sstream>

namespace disagmoe::sched {
namespace {

// Bytes in the largest unit that keeps them readable (a tiny test plan's activations are not "0.00
// GB").
std::string gb(double bytes) {
  char buf[64];
  if (bytes >= 1e9)
    std::snprintf(buf, sizeof buf, "%.2f GB", bytes / 1e9);
  else if (bytes >= 1e6)
    std::snprintf(buf, sizeof buf, "%.2f MB", bytes / 1e6);
  else
    std::snprintf(buf, sizeof buf, "%.0f bytes", bytes);
  return buf;
}

std::string groupName(const Schedule &s, int g) {
  return s.groups[g].role + " " + std::to_string(s.groups[g].index);
}

/// A reference to one instruction.
struct Ref {
  int prog = -1, idx = -1;
};

bool isExchange(Kind k) { return k != Kind::Compute; }

/// "rank 0 -> rank 4" for the first pair of ranks of an exchange between two groups.
std::string rankPair(const Schedule &s, int src, int dst) {
  return "rank " + std::to_string(s.groups[src].ranks[0][0]) + " (" + groupName(s, src) +
         ") -> rank " + std::to_string(s.groups[dst].ranks[0][0]) + " (" + groupName(s, dst) + ")";
}

std::string checkStructure(const Schedule &s, const VerifyOptions &o,
                           std::vector<int> &roleOfGroup) {
  if (s.groups.empty())
    return "schedule.groups: empty";
  if (s.replicas < 1)
    return "schedule.replicas: must be at least 1";
  std::map<int, std::string> owner;
  for (size_t g = 0; g < s.groups.size(); ++g) {
    const Group &G = s.groups[g];
    std::string name =
        "schedule.groups[" + std::to_string(g) + "] (" + groupName(s, static_cast<int>(g)) + ")";
    if (static_cast<int>(G.ranks.size()) != s.replicas)
      return name + ": ranks has " + std::to_string(G.ranks.size()) +
             " replica lists, expected replicas = " + std::to_string(s.replicas);
    for (size_t k = 0; k < G.ranks.size(); ++k) {
      if (G.ranks[k].size() != G.ranks[0].size() || G.ranks[k].empty())
        return name + ": replica " + std::to_string(k) + " has " +
               std::to_string(G.ranks[k].size()) + " ranks, replica 0 has " +
               std::to_string(G.ranks[0].size());
      for (int r : G.ranks[k]) {
        if (o.worldSize > 0 && (r < 0 || r >= o.worldSize))
          return name + ": rank " + std::to_string(r) + " is outside the world of " +
                 std::to_string(o.worldSize) + " ranks";
        auto [it, fresh] = owner.emplace(r, name);
        if (!fresh)
          return name + ": rank " + std::to_string(r) + " is also in " + it->second;
      }
    }
    for (size_t h = 0; h < g; ++h)
      if (s.groups[h].role == G.role && s.groups[h].index == G.index)
        return name + ": duplicates schedule.groups[" + std::to_string(h) + "]";
  }
  if (o.worldSize > 0)
    for (int r = 0; r < o.worldSize; ++r)
      if (!owner.count(r))
        return "rank " + std::to_string(r) +
               " is in no schedule group: it would be left without work";
  roleOfGroup.assign(s.groups.size(), -1);
  for (size_t p = 0; p < s.programs.size(); ++p) {
    const Program &P = s.programs[p];
    for (size_t q = 0; q < p; ++q)
      if (s.programs[q].role == P.role)
        return "schedule.programs." + P.role + ": listed twice";
    for (size_t g = 0; g < s.groups.size(); ++g)
      if (s.groups[g].role == P.role)
        roleOfGroup[g] = static_cast<int>(p);
  }
  for (size_t g = 0; g < s.groups.size(); ++g)
    if (roleOfGroup[g] < 0)
      return "schedule.groups[" + std::to_string(g) + "] (" + groupName(s, static_cast<int>(g)) +
             "): no program for role \"" + s.groups[g].role + "\"";
  for (size_t p = 0; p < s.programs.size(); ++p) {
    const Program &P = s.programs[p];
    const int n = static_cast<int>(P.instrs.size());
    for (int i = 0; i < n; ++i) {
      const Instr &I = P.instrs[i];
      auto where = [&] { return describe(s, static_cast<int>(p), i); };
      if (I.group < 0 || I.group >= static_cast<int>(s.groups.size()))
        return P.role + "[" + std::to_string(i) + "]: group " + std::to_string(I.group) +
               " does not exist";
      if (s.groups[I.group].role != P.role)
        return where() + ": its group has role \"" + s.groups[I.group].role + "\", not \"" +
               P.role + "\"";
      if (I.kind == Kind::Send || I.kind == Kind::Recv) {
        if (I.peer < 0 || I.peer >= static_cast<int>(s.groups.size()))
          return where() + ": peer group " + std::to_string(I.peer) + " does not exist";
        if (I.peers == Peers::Same && s.groups[I.peer].size() != s.groups[I.group].size())
          return where() + ": pairs rank i with rank i but the groups have " +
                 std::to_string(s.groups[I.group].size()) + " and " +
                 std::to_string(s.groups[I.peer].size()) + " ranks";
      }
      if (!(I.flops >= 0) || !(I.bytes >= 0) || !(I.memBytes >= 0) || !(I.activationBytes >= 0))
        return where() + ": negative or invalid size";
      for (int d : I.after) {
        if (d < 0 || d >= n)
          return where() + ": waits on instruction " + std::to_string(d) + ", which does not exist";
        if (d == i)
          return where() + ": waits on itself";
        if (P.instrs[d].group != I.group)
          return where() + ": waits on " + describe(s, static_cast<int>(p), d) +
                 ", an instruction of another group (a rank can only wait on its own instructions)";
      }
    }
  }
  return "";
}

/// All exchanges of a group must be on one stream, so that their program order is their issue
/// order.
std::string checkExchangeStreams(const Schedule &s) {
  std::vector<Ref> first(s.groups.size());
  for (size_t p = 0; p < s.programs.size(); ++p)
    for (size_t i = 0; i < s.programs[p].instrs.size(); ++i) {
      const Instr &I = s.programs[p].instrs[i];
      if (!isExchange(I.kind))
        continue;
      Ref &f = first[I.group];
      if (f.prog < 0) {
        f = {static_cast<int>(p), static_cast<int>(i)};
        continue;
      }
      const Instr &F = s.programs[f.prog].instrs[f.idx];
      if (F.stream != I.stream)
        return describe(s, static_cast<int>(p), static_cast<int>(i)) + ": on the " +
               toString(I.stream) + " stream, but " + describe(s, f.prog, f.idx) + " is on the " +
               toString(F.stream) +
               " stream: a group's exchanges must share one stream so that their order is defined";
    }
  return "";
}

bool sameMessage(const Instr &a, const Instr &b) {
  return a.op == b.op && a.phase == b.phase && a.mb == b.mb && a.layer == b.layer;
}

std::string message(const Instr &i) {
  std::ostringstream os;
  os << i.op << " " << toString(i.phase);
  if (i.mb >= 0)
    os << " mb " << i.mb;
  if (i.layer >= 0)
    os << " layer " << i.layer;
  return os.str();
}

/// sends[src][dst] and recvs[dst][src]: references in program order.
struct Pairs {
  std::map<std::pair<int, int>, std::vector<Ref>> sends, recvs; // key (src, dst)
};

Pairs collectPairs(const Schedule &s) {
  Pairs out;
  for (size_t p = 0; p < s.programs.size(); ++p)
    for (size_t i = 0; i < s.programs[p].instrs.size(); ++i) {
      const Instr &I = s.programs[p].instrs[i];
      Ref ref{static_cast<int>(p), static_cast<int>(i)};
      if (I.kind == Kind::Send)
        out.sends[{I.group, I.peer}].push_back(ref);
      else if (I.kind == Kind::Recv)
        out.recvs[{I.peer, I.group}].push_back(ref);
    }
  return out;
}

std::string checkMatching(const Schedule &s, const Pairs &pairs) {
  std::set<std::pair<int, int>> keys;
  for (const auto &kv : pairs.sends)
    keys.insert(kv.first);
  for (const auto &kv : pairs.recvs)
    keys.insert(kv.first);
  static const std::vector<Ref> none;
  for (const auto &key : keys) {
    auto si = pairs.sends.find(key), ri = pairs.recvs.find(key);
    const std::vector<Ref> &S = si == pairs.sends.end() ? none : si->second;
    const std::vector<Ref> &R = ri == pairs.recvs.end() ? none : ri->second;
    const int src = key.first, dst = key.second;
    const std::string pair = rankPair(s, src, dst);
    const size_t n = std::min(S.size(), R.size());
    for (size_t k = 0; k < n; ++k) {
      const Instr &a = s.programs[S[k].prog].instrs[S[k].idx];
      const Instr &b = s.programs[R[k].prog].instrs[R[k].idx];
      if (!sameMessage(a, b)) {
        // Out of order (the message is received elsewhere) or unmatched.
        bool elsewhere = false;
        for (const Ref &r : R)
          elsewhere |= sameMessage(a, s.programs[r.prog].instrs[r.idx]);
        return pair + ": message #" + std::to_string(k) + ": " + describe(s, S[k].prog, S[k].idx) +
               " is matched by " + describe(s, R[k].prog, R[k].idx) +
               (elsewhere ? " (the receive of " + message(a) +
                                " is posted at another position: receives must be "
                                "posted in the order of the sends)"
                          : " (" + groupName(s, dst) + " posts no receive for " + message(a) + ")");
      }
      if (a.peers != b.peers)
        return pair + ": " + describe(s, S[k].prog, S[k].idx) + " pairs ranks '" +
               toString(a.peers) + "' but its receive " + describe(s, R[k].prog, R[k].idx) +
               " pairs them '" + toString(b.peers) + "'";
      if (a.bytes != b.bytes) {
        char buf[160];
        std::snprintf(buf, sizeof buf, " sends %.0f bytes per rank pair but ", a.bytes);
        char buf2[96];
        std::snprintf(buf2, sizeof buf2, " expects %.0f bytes", b.bytes);
        return pair + ": " + describe(s, S[k].prog, S[k].idx) + buf +
               describe(s, R[k].prog, R[k].idx) + buf2;
      }
    }
    if (S.size() > n) {
      const Instr &a = s.programs[S[n].prog].instrs[S[n].idx];
      return pair + ": " + describe(s, S[n].prog, S[n].idx) + " has no matching receive (" +
             groupName(s, dst) + " posts " + std::to_string(R.size()) + " receives from " +
             groupName(s, src) + ", which sends " + std::to_string(S.size()) + "; the receive of " +
             message(a) + " is missing)";
    }
    if (R.size() > n) {
      const Instr &b = s.programs[R[n].prog].instrs[R[n].idx];
      return pair + ": " + describe(s, R[n].prog, R[n].idx) + " has no matching send (" +
             groupName(s, src) + " sends " + std::to_string(S.size()) + " messages to " +
             groupName(s, dst) + ", which posts " + std::to_string(R.size()) +
             " receives; the send of " + message(b) + " is missing)";
    }
  }
  return "";
}

/// Untimed execution with the simulator's semantics (docs/plan-format.md, "schedule"): a compute
/// stream runs its instructions one after another; the comm stream issues in order without waiting
/// for completion; a send completes when issued (buffered), a receive when its matching send has
/// completed; all-to-all and all-reduce complete when issued (every rank of the group and every
/// replica reach them together).
std::string checkCompletes(const Schedule &s, const Pairs &pairs) {
  const int G = static_cast<int>(s.groups.size());
  struct Stream_ {
    std::vector<int> list; // program indices
    size_t head = 0;       // next to start (compute) or issue (comm)
  };
  std::vector<int> progOf(G, -1);
  std::vector<std::array<Stream_, 3>> streams(G);
  for (size_t p = 0; p < s.programs.size(); ++p)
    for (size_t i = 0; i < s.programs[p].instrs.size(); ++i) {
      const Instr &I = s.programs[p].instrs[i];
      progOf[I.group] = static_cast<int>(p);
      streams[I.group][static_cast<int>(I.stream)].list.push_back(static_cast<int>(i));
    }
  std::vector<std::vector<char>> done(s.programs.size());
  for (size_t p = 0; p < s.programs.size(); ++p)
    done[p].assign(s.programs[p].instrs.size(), 0);
  // Position of each send/recv in its pair's sequence, and completion of sends per pair.
  std::map<std::pair<int, int>, std::vector<char>> sendDone;
  std::vector<std::vector<std::pair<std::pair<int, int>, int>>> pairPos(s.programs.size());
  for (size_t p = 0; p < s.programs.size(); ++p)
    pairPos[p].assign(s.programs[p].instrs.size(), {{-1, -1}, -1});
  for (const auto &kv : pairs.sends) {
    sendDone[kv.first].assign(kv.second.size(), 0);
    for (size_t k = 0; k < kv.second.size(); ++k)
      pairPos[kv.second[k].prog][kv.second[k].idx] = {kv.first, static_cast<int>(k)};
  }
  for (const auto &kv : pairs.recvs)
    for (size_t k = 0; k < kv.second.size(); ++k)
      pairPos[kv.second[k].prog][kv.second[k].idx] = {kv.first, static_cast<int>(k)};
  // Receives issued but waiting for their send.
  std::map<std::pair<int, int>, std::map<int, Ref>> waiting;
  std::vector<int> queue;
  std::vector<char> queued(G, 0);
  auto enqueue = [&](int g) {
    if (!queued[g]) {
      queued[g] = 1;
      queue.push_back(g);
    }
  };
  for (int g = 0; g < G; ++g)
    enqueue(g);
  auto depsDone = [&](int p, int i) {
    for (int d : s.programs[p].instrs[i].after)
      if (!done[p][d])
        return false;
    return true;
  };
  auto complete = [&](int p, int i) {
    done[p][i] = 1;
    const Instr &I = s.programs[p].instrs[i];
    enqueue(I.group);
    if (I.kind == Kind::Send) {
      auto pos = pairPos[p][i];
      sendDone[pos.first][pos.second] = 1;
      auto w = waiting.find(pos.first);
      if (w != waiting.end()) {
        auto it = w->second.find(pos.second);
        if (it != w->second.end()) {
          done[it->second.prog][it->second.idx] = 1;
          enqueue(s.programs[it->second.prog].instrs[it->second.idx].group);
          w->second.erase(it);
        }
      }
    }
  };
  while (!queue.empty()) {
    int g = queue.back();
    queue.pop_back();
    queued[g] = 0;
    int p = progOf[g];
    if (p < 0)
      continue;
    bool progress = true;
    while (progress) {
      progress = false;
      for (int st = 0; st < 3; ++st) {
        Stream_ &S = streams[g][st];
        while (S.head < S.list.size()) {
          int i = S.list[S.head];
          const Instr &I = s.programs[p].instrs[i];
          bool comm = st == static_cast<int>(Stream::Comm);
          if (!comm && S.head > 0 && !done[p][S.list[S.head - 1]])
            break;
          if (!depsDone(p, i))
            break;
          ++S.head;
          progress = true;
          if (I.kind == Kind::Recv) {
            auto pos = pairPos[p][i];
            auto sd = sendDone.find(pos.first);
            if (sd != sendDone.end() && pos.second < static_cast<int>(sd->second.size()) &&
                sd->second[pos.second])
              complete(p, i);
            else
              waiting[pos.first][pos.second] = {p, i};
          } else {
            complete(p, i);
          }
          if (!comm && !done[p][i])
            break;
        }
      }
    }
  }
  for (int g = 0; g < G; ++g) {
    int p = progOf[g];
    if (p < 0)
      continue;
    for (int st = 0; st < 3; ++st) {
      const Stream_ &S = streams[g][st];
      // The first instruction of this stream that did not complete.
      for (size_t k = 0; k < S.list.size(); ++k) {
        int i = S.list[k];
        if (done[p][i])
          continue;
        const Instr &I = s.programs[p].instrs[i];
        std::string why;
        if (k >= S.head) {
          for (int d : I.after)
            if (!done[p][d]) {
              why = "it waits on " + describe(s, p, d) + ", which never completes";
              break;
            }
          if (why.empty())
            why = "the instruction before it on the " + std::string(toString(I.stream)) +
                  " stream never completes";
        } else if (I.kind == Kind::Recv) {
          auto pos = pairPos[p][i];
          why = "its matching send (message #" + std::to_string(pos.second) + " from " +
                groupName(s, I.peer) + ") is never reached";
        } else {
          why = "it never completes";
        }
        return "the schedule does not complete (rank " + std::to_string(s.groups[g].ranks[0][0]) +
               " would wait forever): " + describe(s, p, i) + ": " + why;
      }
    }
  }
  return "";
}

std::string checkWork(const Schedule &s) {
  std::vector<char> work(s.groups.size(), 0);
  for (const Program &P : s.programs)
    for (const Instr &I : P.instrs)
      if (I.kind == Kind::Compute)
        work[I.group] = 1;
  for (size_t g = 0; g < s.groups.size(); ++g)
    if (!work[g])
      return "rank " + std::to_string(s.groups[g].ranks[0][0]) + " (" +
             groupName(s, static_cast<int>(g)) +
             ") has no compute instruction: it would be left without work";
  return "";
}

} // namespace

double peakMemory(const Schedule &s, int group, int *inflightOut) {
  const Group &G = s.groups[group];
  const Program *P = s.program(G.role);
  if (inflightOut)
    *inflightOut = 0;
  if (!P)
    return G.staticBytes + G.headLogitsBytes;
  const std::vector<Instr> &ins = P->instrs;
  const int M = s.microBatches;
  std::vector<int> firstFwd(M, -1), lastBwd(M, -1);
  std::vector<double> act(M, 0.0);
  for (int i = 0; i < static_cast<int>(ins.size()); ++i) {
    const Instr &I = ins[i];
    if (I.group != group || I.kind != Kind::Compute || I.mb < 0 || I.mb >= M)
      continue;
    if (I.phase == Phase::Forward) {
      if (firstFwd[I.mb] < 0)
        firstFwd[I.mb] = i;
      act[I.mb] += I.activationBytes;
    } else if (I.phase == Phase::Backward) {
      lastBwd[I.mb] = i;
    }
  }
  // Stream positions of the last backward instructions; the backward stream must be one stream.
  std::vector<int> startOrder; // micro-batches by program index of firstFwd (= their stream order)
  for (int j = 0; j < M; ++j)
    if (firstFwd[j] >= 0)
      startOrder.push_back(j);
  std::sort(startOrder.begin(), startOrder.end(),
            [&](int a, int b) { return firstFwd[a] < firstFwd[b]; });
  std::vector<int> endOrder;
  for (int j = 0; j < M; ++j)
    if (lastBwd[j] >= 0)
      endOrder.push_back(j);
  std::sort(endOrder.begin(), endOrder.end(),
            [&](int a, int b) { return lastBwd[a] < lastBwd[b]; });
  bool oneBwdStream = true, sameStream = true;
  for (int j : endOrder)
    oneBwdStream &= ins[lastBwd[j]].stream == ins[lastBwd[endOrder[0]]].stream;
  std::map<int, int> endPos; // program index of a last-backward -> its position in endOrder
  for (size_t k = 0; k < endOrder.size(); ++k)
    endPos[lastBwd[endOrder[k]]] = static_cast<int>(k);
  int guaranteed = -1; // endOrder[0..guaranteed] have finished before the current start
  int live = 0, peak = 0;
  double maxAct = 0;
  for (int j = 0; j < M; ++j)
    maxAct = std::max(maxAct, act[j]);
  for (size_t k = 0; k < startOrder.size(); ++k) {
    const Instr &F = ins[firstFwd[startOrder[k]]];
    if (oneBwdStream && !endOrder.empty()) {
      sameStream = F.stream == ins[lastBwd[endOrder[0]]].stream;
      for (int d : F.after) {
        auto it = endPos.find(d);
        if (it != endPos.end())
          guaranteed = std::max(guaranteed, it->second);
      }
      if (sameStream) // every earlier instruction of the stream has finished
        for (size_t e = guaranteed + 1;
             e < endOrder.size() && lastBwd[endOrder[e]] < firstFwd[startOrder[k]]; ++e)
          guaranteed = static_cast<int>(e);
    }
    live = static_cast<int>(k) + 1 - (guaranteed + 1);
    peak = std::max(peak, live);
  }
  if (inflightOut)
    *inflightOut = peak;
  return G.staticBytes + G.headLogitsBytes + peak * maxAct;
}

std::string verifySchedule(const Schedule &s, const VerifyOptions &o) {
  std::vector<int> roleOfGroup;
  std::string e = checkStructure(s, o, roleOfGroup);
  if (e.empty())
    e = checkExchangeStreams(s);
  Pairs pairs;
  if (e.empty()) {
    pairs = collectPairs(s);
    e = checkMatching(s, pairs);
  }
  if (e.empty())
    e = checkCompletes(s, pairs);
  if (e.empty())
    e = checkWork(s);
  if (e.empty() && s.capacityBytes > 0)
    for (size_t g = 0; g < s.groups.size(); ++g) {
      int inflight = 0;
      double peak = peakMemory(s, static_cast<int>(g), &inflight);
      if (peak > s.capacityBytes) {
        const Group &G = s.groups[g];
        double act = inflight ? (peak - G.staticBytes - G.headLogitsBytes) / inflight : 0;
        const std::string logits =
            G.headLogitsBytes > 0 ? " + " + gb(G.headLogitsBytes) + " of head logits" : "";
        return "rank " + std::to_string(G.ranks[0][0]) + " (" + groupName(s, static_cast<int>(g)) +
               "): peak memory " + gb(peak) + " (" + gb(G.staticBytes) +
               " weights, gradients and "
               "optimizer state" +
               logits + " + " + std::to_string(inflight) + " micro-batches in flight x " + gb(act) +
               " of activations) exceeds the usable " + gb(s.capacityBytes);
      }
    }
  return e;
}

} // namespace disagmoe::sched
