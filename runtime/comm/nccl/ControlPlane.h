// The host-side channel of the `nccl` comm backend (NcclComm.h): everything it sends besides the
// NCCL payloads. Rank and world size, rank 0's ncclUniqueId broadcast to every rank, each pair's
// two direction ids, the 16-byte header that announces every payload ("size first, then
// payload"), the abort note of a failing rank, the barrier of an orderly end, and how a failing
// process ends. Two implementations:
//   - MpiControlPlane (MpiControlPlane.h): mpirun or srun; MPI's runtime connects the ranks;
//   - TcpControlPlane (TcpControlPlane.h): a torchrun-style launch (RANK, WORLD_SIZE, MASTER_ADDR,
//     MASTER_PORT; runtime/comm/tcp/LaunchEnv.h): the ranks meet at the TCP rendezvous and talk
//     over TcpComm's mesh.
// Only NcclComm's comm thread calls a control plane (MPI_THREAD_FUNNELED), so implementations need
// not be thread-safe. Headers of one (src, dst) pair arrive in send order on both (MPI's
// non-overtaking rule; one TCP connection per pair), which is all ArrivalQueue.h relies on.
#pragma once

#include "runtime/comm/Comm.h"

#include <chrono>
#include <string>
#include <utility>
#include <vector>

namespace disagmoe::nccl {

class ControlPlane {
public:
  using Clock = std::chrono::steady_clock;
  virtual ~ControlPlane() = default;

  virtual int rank() const = 0;
  virtual int worldSize() const = 0;

  /// Rank 0's `rootId` on every rank (the argument is ignored on the others); blocks until it
  /// arrived or `deadline` passed. Throws CommError "rank R: ... the NCCL bootstrap id from rank 0
  /// ...", or CommAborted when rank 0 failed instead of sending it (naming its reason).
  virtual Bytes broadcastId(const Bytes &rootId, Clock::time_point deadline) = 0;
  /// The two ids of one pair's direction communicators: the lower rank sends, the higher receives
  /// (blocking, until `deadline`). Throws CommError naming the peer, CommAborted as above.
  virtual void sendPairIds(int peer, const Bytes &ids, Clock::time_point deadline) = 0;
  virtual Bytes recvPairIds(int peer, Clock::time_point deadline) = 0;

  /// Queues one message header (nccl::encodeHeader) to `dst`; returns without waiting.
  virtual void postHeader(int dst, Bytes header) = 0;
  /// The headers that arrived since the last call, as (source rank, header bytes).
  virtual std::vector<std::pair<int, Bytes>> takeHeaders() = 0;

  /// Queues `reason` to every other rank (a failing rank's last words).
  virtual void postAbortNotes(const std::string &reason) = 0;
  /// The first abort note that arrived from another rank, or why a peer is gone (empty: none).
  virtual std::string takeAbortNote() = 0;
  /// Moves queued bytes along; true while some queued send has not left this process.
  virtual bool sendsPending() = 0;

  /// A barrier of every rank, polled: starts on the first call, true once every rank reached it.
  /// Throws CommError when it cannot complete before `deadline` (a peer gone, a timeout).
  virtual bool barrierDone(Clock::time_point deadline) = 0;
  /// After barrierDone: releases the channel (MPI_Finalize; TCP's connections close).
  virtual void finalize() = 0;
  /// Ends the whole job from a failing rank once its notes left or `grace` passed (MPI_Abort; for
  /// TCP the peers learn it from the note or from the closed connection). Does not return.
  [[noreturn]] virtual void abortProcess(int exitCode, std::chrono::milliseconds grace) = 0;
};

} // namespace disagmoe::nccl
