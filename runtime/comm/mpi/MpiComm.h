// The `mpi` comm backend (OpenMPI): one process per global rank, launched as
//   mpirun -np N disagmoe-run PLAN --comm mpi
//
// Only the comm thread calls MPI. It initialises MPI (MPI_Init_thread with MPI_THREAD_FUNNELED: the
// thread that initialises is the only one that calls), then loops: posts the MPI_Isend of every
// message the workers queued (buffers live until the send completes), receives whatever arrived
// (MPI_Iprobe + MPI_Recv) into per-(src, tag) FIFO mailboxes, and completes sends. Worker threads
// only touch the queues: send() enqueues and returns (buffered, like the local backend); recv()
// waits on a condition variable for its mailbox, up to the deadline. MPI's non-overtaking rule
// keeps messages of one (src, dst, tag) in send order, which is all the executor relies on.
//
// Failures never hang the job: a rank that fails calls abortJob, which sends an abort note (the
// reason, naming the failed rank) to every other rank on a separate communicator (a dup of
// MPI_COMM_WORLD), waits a short grace period for the notes to go out, then MPI_Abort. A rank that
// receives the note fails every waiting and later recv with CommAborted carrying that reason; it
// reports it and ends too. A rank that dies without a word (killed, crashed) is handled by mpirun,
// which ends the job naming it ("mpirun noticed that process rank R ... exited on signal 9").
//
// Heartbeat (start's heartbeatDeadline > 0): a process that stops answering entirely (stopped,
// swapped out, its comm thread stuck) is caught by its peers. From MPI_Init on, every comm thread
// sends a heartbeat note (an empty message, control communicator, tag 1) every deadline / 10:
// rank 0 to every rank, every other rank to rank 0; rank 0 watches every rank, the others watch
// rank 0. A watched rank whose notes stop for longer than the deadline is declared silent: the
// watcher calls onSilentPeer("rank R is silent: no heartbeat note from its process for T ms
// (deadline D ms; noticed by rank W)") and aborts the job with that reason, as abortJob does. A
// rank that finishes sends a last note (tag 2) and is watched no more. A rank whose process is
// alive but whose worker stopped is caught by that process itself (Heartbeat.h, RankWatch).
#pragma once

#include "runtime/comm/Comm.h"

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace disagmoe {

/// The global rank the launcher gave this process: the first of OMPI_COMM_WORLD_RANK,
/// SLURM_PROCID and RANK that is set (and a non-negative integer), or -1. Known before MPI starts,
/// so a process can bind its weights while MPI initialises; MpiComm checks that MPI agrees.
int rankFromEnvironment();

class MpiComm : public Comm {
public:
  /// Starts the comm thread and waits until MPI is initialised. Throws CommError if MPI fails to
  /// start or disagrees with rankFromEnvironment().
  /// heartbeatDeadline > 0 turns on the heartbeat (above); onSilentPeer is called from the comm
  /// thread, once, before the abort (it must not call this comm).
  static std::unique_ptr<MpiComm>
  start(std::chrono::milliseconds heartbeatDeadline = std::chrono::milliseconds(0),
        std::function<void(const std::string &)> onSilentPeer = {});
  /// finish() if neither finish() nor abortJob() ran.
  ~MpiComm() override;

  int rank() const override { return rank_; }
  int worldSize() const override { return worldSize_; }
  void send(int dst, int tag, Bytes message) override;
  Bytes recv(int src, int tag, std::chrono::milliseconds timeout) override;
  int recvAny(const std::vector<std::pair<int, int>> &sources, Bytes &out,
              std::chrono::milliseconds timeout) override;
  void wake() override;

  /// Orderly end: every queued send completes, all ranks meet in a barrier (while still receiving),
  /// then MPI_Finalize. Throws CommError if the sends do not complete within `timeout`.
  void finish(std::chrono::milliseconds timeout = std::chrono::seconds(60));

  /// Ends the whole job because this rank failed: tells every other rank `reason` (their recvs
  /// throw CommAborted "... aborted: <reason>"), waits up to `grace` for the notes to leave, then
  /// MPI_Abort(exitCode). Does not return.
  [[noreturn]] void abortJob(const std::string &reason, int exitCode = 1,
                             std::chrono::milliseconds grace = std::chrono::milliseconds(1000));

  /// Set once an abort note from another rank arrived: its reason, else "".
  std::string abortReason() const;

private:
  struct State;
  MpiComm();
  std::unique_ptr<State> state_;
  int rank_ = -1, worldSize_ = 0;
};

} // namespace disagmoe
