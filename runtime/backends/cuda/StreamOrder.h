// Host logic of the cuda backend's three streams per rank (issue 14): for the instructions a rank
// runs from the plan's schedule (runtime/plan/Schedule.h: one program per role, each instruction
// on the forward, backward or comm stream, `after` naming instructions of the same group it waits
// for), the order the host enqueues them in, the CUDA stream each goes to, and the CUDA events
// that carry the cross-stream dependencies. Pure C++ (no CUDA headers): unit-tested everywhere.
//
// CUDA semantics relied on (CUDA Runtime API, "cudaEventRecord", "cudaStreamWaitEvent"): work on
// one stream runs in enqueue order; cudaStreamWaitEvent(s, e) makes later work on s wait for the
// work captured by the most recent cudaEventRecord(e) *enqueued before the wait* (waiting on an
// event never recorded is a no-op, so a wait must be enqueued after its record).
//
// The plan, StreamPlan:
//  - stream: CUDA stream index = sched::Stream's value (0 forward, 1 backward, 2 comm); each
//    stream runs its instructions in program order (the schedule's stream order).
//  - steps: the host's enqueue order, a topological order of (program order within a stream) and
//    the `after` edges, program order wherever the dependencies allow (lowest index first).
//  - before a step, cudaStreamWaitEvent(stream, event) for each of `waits`; after it,
//    cudaEventRecord(`records`, stream) when records >= 0. A dependency on the same stream needs
//    no event (stream order). A cross-stream dependency already implied by an earlier wait is
//    dropped: each stream keeps a vector clock (per stream, the last position known complete),
//    merged from the clock the waited-on step had when it recorded; the wait is needed only when
//    the dependency's position is beyond the waiting stream's clock (dependencies taken latest
//    enqueued first).
// Not covered: whether the comm stream's NCCL calls, serialised in program order on one CUDA
// stream, can deadlock against a peer (the schedule verifier's untimed execution issues
// communication without waiting for completion).
#pragma once

#include "runtime/plan/Schedule.h"

#include <stdexcept>
#include <vector>

namespace disagmoe::cuda {

/// Raised for a program whose dependencies no stream order can satisfy; one line naming the
/// instruction (by index in its program) and the dependency.
class StreamOrderError : public std::invalid_argument {
public:
  using std::invalid_argument::invalid_argument;
};

/// One instruction as the host enqueues it.
struct StreamStep {
  int instr = 0;          ///< index in the program
  int stream = 0;         ///< 0 forward, 1 backward, 2 comm (sched::Stream)
  std::vector<int> waits; ///< events to wait for on `stream` before the instruction
  int records = -1;       ///< event recorded on `stream` after it (-1: none)
};

/// A rank's instructions in enqueue order, and the number of CUDA events they use (0 .. events-1).
struct StreamPlan {
  std::vector<StreamStep> steps;
  int events = 0;
};

/// Plans the instructions of `program` whose group is `group` (the instructions every rank of that
/// group runs). Throws StreamOrderError when an `after` index is out of range, names the
/// instruction itself or an instruction of another group, names a later instruction of the same
/// stream (against stream order), or the dependencies form a cycle.
StreamPlan planStreams(const sched::Program &program, int group);

} // namespace disagmoe::cuda
