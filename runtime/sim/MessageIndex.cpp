//===- MessageIndex.cpp - pairing sends and receives -------------------------------===//
#include "runtime/sim/MessageIndex.h"

#include <cstdint>
#include <string>

namespace disagmoe::sim {

using sched::Instr;
using sched::Kind;

namespace {

struct Key {
  int src, dst, op, phase, mb, layer;
  bool operator==(const Key &o) const {
    return src == o.src && dst == o.dst && op == o.op && phase == o.phase && mb == o.mb &&
           layer == o.layer;
  }
};

uint64_t hashOf(const Key &k) {
  uint64_t h = 1469598103934665603ull; // FNV-1a over the six fields, then a final mix
  for (int v : {k.src, k.dst, k.op, k.phase, k.mb, k.layer}) {
    h ^= static_cast<uint64_t>(static_cast<uint32_t>(v));
    h *= 1099511628211ull;
  }
  h ^= h >> 29;
  h *= 0xbf58476d1ce4e5b9ull;
  return h ^ (h >> 32);
}

} // namespace

MessageIndex indexMessages(const sched::Schedule &s) {
  MessageIndex out;
  out.message.resize(s.programs.size());
  size_t exchanges = 0;
  for (const sched::Program &P : s.programs)
    for (const Instr &in : P.instrs)
      exchanges += in.kind == Kind::Send || in.kind == Kind::Recv;
  // Op names are few (a dozen): a linear scan, the last hit first.
  std::vector<const std::string *> ops;
  int lastOp = -1;
  auto opId = [&](const std::string &op) {
    if (lastOp >= 0 && *ops[lastOp] == op)
      return lastOp;
    for (size_t k = 0; k < ops.size(); ++k)
      if (*ops[k] == op)
        return lastOp = static_cast<int>(k);
    ops.push_back(&op);
    return lastOp = static_cast<int>(ops.size()) - 1;
  };
  // Open addressing with linear probing, the keys in the slots (one cache line per lookup, which
  // is prefetched a few exchanges ahead). A message has a send and a receive, so the table is at
  // most half full; it grows should a schedule name more messages.
  struct Slot {
    Key key;
    int id = -1; // -1: empty
  };
  size_t cap = 16;
  while (cap < exchanges)
    cap *= 2;
  std::vector<Slot> slots(cap);
  auto insertAt = [&](const Key &k, uint64_t hash) -> Slot & {
    size_t h = hash & (cap - 1);
    while (slots[h].id >= 0 && !(slots[h].key == k))
      h = (h + 1) & (cap - 1);
    return slots[h];
  };
  constexpr size_t kAhead = 16;
  std::vector<Key> keys;
  std::vector<uint64_t> hashes;
  for (size_t p = 0; p < s.programs.size(); ++p) {
    const std::vector<Instr> &instrs = s.programs[p].instrs;
    std::vector<int> &ids = out.message[p];
    ids.assign(instrs.size(), -1);
    std::vector<int> at; // the exchanges of this program
    keys.clear();
    hashes.clear();
    for (size_t i = 0; i < instrs.size(); ++i) {
      const Instr &in = instrs[i];
      if (in.kind != Kind::Send && in.kind != Kind::Recv)
        continue;
      const bool send = in.kind == Kind::Send;
      keys.push_back({send ? in.group : in.peer, send ? in.peer : in.group, opId(in.op),
                      static_cast<int>(in.phase), in.mb, in.layer});
      hashes.push_back(hashOf(keys.back()));
      at.push_back(static_cast<int>(i));
    }
    for (size_t e = 0; e < keys.size(); ++e) {
      if (e + kAhead < keys.size())
        __builtin_prefetch(&slots[hashes[e + kAhead] & (cap - 1)]);
      Slot *slot = &insertAt(keys[e], hashes[e]);
      if (slot->id < 0) {
        if (2 * static_cast<size_t>(out.count + 1) > cap) { // grow: rehash every message
          std::vector<Slot> old(2 * cap);
          old.swap(slots);
          cap *= 2;
          for (const Slot &o : old)
            if (o.id >= 0)
              insertAt(o.key, hashOf(o.key)) = o;
          slot = &insertAt(keys[e], hashes[e]);
        }
        *slot = {keys[e], out.count++};
      }
      ids[at[e]] = slot->id;
    }
  }
  return out;
}

} // namespace disagmoe::sim
