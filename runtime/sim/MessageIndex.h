//===- MessageIndex.h - which send and receive carry the same message -*- C++ -*-===//
//
// A send and its receive name the same message: (sending group, receiving group, op, phase,
// micro-batch, layer). The simulator pairs them to deliver messages, and freezeOrder to post each
// receive at its send's issue time. Schedules reach millions of exchanges, so the pairing is an
// open-addressing table over interned op names instead of a node-based map keyed by strings.
//
//===----------------------------------------------------------------------===//
#ifndef DISAGMOE_RUNTIME_SIM_MESSAGEINDEX_H
#define DISAGMOE_RUNTIME_SIM_MESSAGEINDEX_H

#include "runtime/plan/Schedule.h"

#include <vector>

namespace disagmoe::sim {

struct MessageIndex {
  /// Per program and instruction: its message (0 .. count - 1, numbered in order of first
  /// appearance, programs in order) for a Send or Recv, -1 for anything else. Instructions with
  /// the same name share one message.
  std::vector<std::vector<int>> message;
  int count = 0;
};

MessageIndex indexMessages(const sched::Schedule &s);

} // namespace disagmoe::sim

#endif
