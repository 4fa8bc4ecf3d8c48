// The pairing of sends and receives (runtime/sim/MessageIndex.h): by name, in order of first
// appearance, and beyond the table's first size when a schedule names more messages than pairs.
#include "runtime/sim/MessageIndex.h"

#include <gtest/gtest.h>

using namespace disagmoe;
using sched::Instr;
using sched::Kind;

namespace {
Instr exchange(Kind kind, int group, int peer, const std::string &op, int mb, int layer) {
  Instr in;
  in.kind = kind;
  in.stream = sched::Stream::Comm;
  in.group = group;
  in.peer = peer;
  in.op = op;
  in.mb = mb;
  in.layer = layer;
  return in;
}
} // namespace

TEST(MessageIndex, PairsASendWithTheReceiveOfTheSameName) {
  sched::Schedule s;
  s.programs.resize(2);
  s.programs[0].instrs = {exchange(Kind::Send, 0, 1, "m2n", 0, 0), Instr(),
                          exchange(Kind::Send, 0, 1, "m2n", 1, 0),
                          exchange(Kind::Send, 0, 1, "n2m", 0, 0)};
  s.programs[1].instrs = {exchange(Kind::Recv, 1, 0, "m2n", 1, 0),
                          exchange(Kind::Recv, 1, 0, "m2n", 0, 0),
                          exchange(Kind::Recv, 0, 1, "m2n", 0, 0)}; // 1 -> 0: another message
  const sim::MessageIndex m = sim::indexMessages(s);
  EXPECT_EQ(m.count, 4);
  EXPECT_EQ(m.message[0], (std::vector<int>{0, -1, 1, 2}));
  EXPECT_EQ(m.message[1], (std::vector<int>{1, 0, 3}));
}

TEST(MessageIndex, GrowsPastHalfOfItsExchanges) {
  // Sends without receives: as many messages as exchanges, twice what the first table expects.
  sched::Schedule s;
  s.programs.resize(1);
  for (int k = 0; k < 5000; ++k)
    s.programs[0].instrs.push_back(exchange(Kind::Send, 0, 1, "p2p", k, k % 7));
  s.programs[0].instrs.push_back(exchange(Kind::Send, 0, 1, "p2p", 17, 17 % 7)); // a duplicate
  const sim::MessageIndex m = sim::indexMessages(s);
  EXPECT_EQ(m.count, 5000);
  for (int k = 0; k < 5000; ++k)
    ASSERT_EQ(m.message[0][k], k);
  EXPECT_EQ(m.message[0][5000], 17);
}
