//===- ScheduleBuilder.h - building schedules: instructions, priorities, frozen orders -*- C++
//-*-===//
//
// Schedule generators (the AF-Pipe pass in passes/schedule and the baselines in runtime/sim/
// Baselines.h) create instructions with dependencies and a priority per stream; build() lays the
// programs out per role and fixes each stream's order: compute streams either strictly by priority
// or by list scheduling on the roofline times (the ready instruction of smallest priority runs
// first), and the comm stream in the order its exchanges become ready, so that the plan replays
// exactly the run that ordered it (Simulator.h, freezeOrder).
//
//===----------------------------------------------------------------------===//
#ifndef DISAGMOE_RUNTIME_SIM_SCHEDULEBUILDER_H
#define DISAGMOE_RUNTIME_SIM_SCHEDULEBUILDER_H

#include "runtime/plan/Schedule.h"

#include <string>
#include <vector>

namespace disagmoe::sim {

class ScheduleBuilder {
public:
  /// `base` holds the header (kind, replicas, hardware, ...) and the groups; programs are built
  /// here.
  explicit ScheduleBuilder(sched::Schedule base) : s_(std::move(base)) {}

  sched::Schedule &schedule() { return s_; }
  int addGroup(const std::string &role, int index, std::vector<std::vector<int>> ranks,
               double staticBytes, double nicBandwidth = 0);

  /// Each returns the instruction's handle. `priority` orders a compute stream (smaller first).
  int compute(int group, sched::Stream stream, sched::Phase phase, const std::string &op, int mb,
              int layer, double flops, double memBytes, double activationBytes, double priority,
              std::vector<int> after = {});
  int send(int group, int peer, sched::Peers peers, const std::string &op, sched::Phase phase,
           int mb, int layer, double bytes, sched::Stream stream, double priority,
           std::vector<int> after = {});
  int recv(int group, int peer, sched::Peers peers, const std::string &op, sched::Phase phase,
           int mb, int layer, double bytes, sched::Stream stream, double priority,
           std::vector<int> after = {});
  int allToAll(int group, const std::string &op, sched::Phase phase, int mb, int layer,
               double bytes, sched::Stream stream, double priority, std::vector<int> after = {});
  int allReduce(int group, sched::Peers peers, const std::string &op, int layer, double bytes,
                sched::Stream stream, double priority, std::vector<int> after = {});
  /// An update-phase collective (AllReduce, ReduceScatter or AllGather; Schedule.h).
  int collective(sched::Kind kind, int group, sched::Peers peers, const std::string &op, int layer,
                 double bytes, sched::Stream stream, double priority, std::vector<int> after = {});
  void after(int handle, int dependency);
  /// Room for this many instructions (a hint: schedules of millions of instructions would
  /// otherwise be copied on each growth of the buffer).
  void reserve(size_t instructions) {
    instrs_.reserve(instructions);
    priority_.reserve(instructions);
  }
  const sched::Instr &instr(int handle) const { return instrs_[handle]; }

  /// Lays out the programs (per role; per group, streams in priority order) and, with
  /// `listScheduleCompute` / `orderCommByReadiness`, runs the simulator once with dynamic streams
  /// and freezes the resulting orders. Returns false with `error` when that run does not complete.
  /// The instructions move into `out`: call it once, after the last instruction is added.
  bool build(bool listScheduleCompute, bool orderCommByReadiness, sched::Schedule &out,
             std::string &error);

private:
  int add(sched::Instr in, double priority);
  static sched::Instr instr(sched::Kind kind, int group, sched::Stream stream, sched::Phase phase,
                            const std::string &op, int mb, int layer, std::vector<int> after);
  sched::Schedule s_;
  std::vector<sched::Instr> instrs_;
  std::vector<double> priority_;
};

} // namespace disagmoe::sim

#endif
