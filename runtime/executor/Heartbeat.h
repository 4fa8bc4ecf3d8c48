// Liveness of in-process ranks (issue 7, "Faults"): a rank that dies or stops answering must never
// leave the others hanging.
//
// - A rank that dies (throws) aborts the LocalWorld; every other rank's receive wakes with
//   CommAborted and the run fails with the dead rank's error (Executor.cpp, Trainer.cpp).
// - A rank that goes silent (stops sending and receiving while not waiting for anyone) is caught by
//   the heartbeat: MonitoredComm beats on every send and receive and marks the time a rank spends
//   blocked in a receive as "waiting on rank S" (alive: the receive's own deadline covers it); a
//   watchdog thread declares a rank silent when it is not waiting and has not beaten for
//   `deadline`, and calls onSilent with "rank R is silent: no heartbeat for D ms (its last message
//   operation was at T ms)", which aborts the world, so every rank exits naming R. The deadline
//   must exceed the longest computation between two messages of one rank.
//
// With one process per rank (--comm mpi) each process watches its own rank the same way during a
// step (RankWatch below: the rank is silent when it neither beats nor waits for `deadline`), and
// the mpi comm itself watches that the other processes are alive (MpiComm.h, heartbeat notes).
//
// Fault injection for tests only (never set in production): DISAGMOE_FAULT_INJECT="R:MODE:K" makes
// rank R, at its K-th message operation (send or receive, counted from 0), either die (MODE "die":
// throws ExecError "rank R: injected failure (DISAGMOE_FAULT_INJECT)") or go silent (MODE "silent":
// blocks without a heartbeat until the world is aborted). Two modes end or stop the whole process,
// for one process per rank only: "kill" (raise(SIGKILL): a rank that dies without a word) and
// "freeze" (raise(SIGSTOP): a process that stops answering entirely, comm thread included); where
// ranks share the process (the local comm) they throw ExecError "... stops the whole process"
// instead. A malformed value throws ExecError naming the variable.
#pragma once

#include "runtime/comm/Comm.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace disagmoe {

struct FaultInjection {
  int rank = -1; ///< -1: none
  bool silent = false;
  bool kill = false, freeze = false; ///< process-wide modes (one process per rank)
  int64_t at = 0;                    ///< the rank's message operation (from 0) at which it fails
  /// Parses DISAGMOE_FAULT_INJECT (unset or empty: none). Throws ExecError on a malformed value.
  static FaultInjection fromEnvironment();
};

class HeartbeatMonitor {
public:
  /// Watches `worldSize` ranks; `onSilent(message)` is called once, from the watchdog thread, for
  /// the first silent rank. deadline 0: no watchdog (beats are still recorded).
  HeartbeatMonitor(int worldSize, std::chrono::milliseconds deadline,
                   std::function<void(const std::string &)> onSilent);
  ~HeartbeatMonitor(); ///< stops the watchdog
  HeartbeatMonitor(const HeartbeatMonitor &) = delete;
  HeartbeatMonitor &operator=(const HeartbeatMonitor &) = delete;

  void beat(int rank);
  void setWaiting(int rank, bool waiting);
  void finished(int rank); ///< a rank that returned or failed is never silent

private:
  struct RankBeat {
    std::atomic<int64_t> lastMs{0};
    std::atomic<bool> waiting{false}, done{false};
  };
  int64_t nowMs() const;
  void watch();

  std::chrono::steady_clock::time_point origin_;
  std::chrono::milliseconds deadline_;
  std::function<void(const std::string &)> onSilent_;
  std::vector<RankBeat> ranks_;
  std::mutex mutex_;
  std::condition_variable stop_;
  bool stopping_ = false;
  std::thread watchdog_;
};

/// Marks a rank finished when its thread's scope ends (returned or failed).
struct FinishedGuard {
  HeartbeatMonitor &monitor;
  int rank;
  ~FinishedGuard() { monitor.finished(rank); }
};

/// A Comm that beats `monitor` on every operation, marks blocked receives as waiting, and applies
/// `fault` when it names this rank. Forwards everything else to `inner`.
class MonitoredComm : public Comm {
public:
  /// processPerRank: this process runs only this rank (mpi), so the process-wide fault modes kill
  /// and freeze may apply; otherwise they throw ExecError instead of stopping every rank here.
  MonitoredComm(std::unique_ptr<Comm> inner, HeartbeatMonitor &monitor, FaultInjection fault,
                bool processPerRank = false);
  int rank() const override { return inner_->rank(); }
  int worldSize() const override { return inner_->worldSize(); }
  void send(int dst, int tag, Bytes message) override;
  Bytes recv(int src, int tag, std::chrono::milliseconds timeout) override;
  /// One message operation (beat, waiting while it waits, the fault hook), like recv.
  int recvAny(const std::vector<std::pair<int, int>> &sources, Bytes &out,
              std::chrono::milliseconds timeout) override;
  void wake() override { inner_->wake(); }

private:
  void maybeFail();
  std::unique_ptr<Comm> inner_;
  HeartbeatMonitor &monitor_;
  FaultInjection fault_;
  bool processPerRank_;
  int64_t operations_ = 0;
};

/// One rank of a multi-process comm (mpi), watched for the scope of one step: a heartbeat monitor
/// of that rank alone (the others run in their own processes) and a MonitoredComm over `comm`
/// (borrowed) applying `fault`. onSilent is called from the watchdog thread as in HeartbeatMonitor.
class RankWatch {
public:
  RankWatch(Comm &comm, std::chrono::milliseconds deadline, const FaultInjection &fault,
            std::function<void(const std::string &)> onSilent);
  ~RankWatch();
  Comm &comm() { return *monitored_; }

private:
  HeartbeatMonitor monitor_;
  std::unique_ptr<MonitoredComm> monitored_;
  int rank_;
};

} // namespace disagmoe
