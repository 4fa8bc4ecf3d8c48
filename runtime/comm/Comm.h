// Point-to-point byte messages between global ranks: the only communication the executor uses.
//
// A Comm is one rank's endpoint. Backends: `local` (in-process ranks, one thread each;
// LocalComm.h); `mpi` maps send to a buffered MPI_Isend and recv to MPI_Probe/MPI_Recv with a
// deadline (MpiComm.h); `nccl` announces each message over MPI and moves its bytes with
// ncclSend/ncclRecv (NcclComm.h). Messages between one (src, dst, tag) triple arrive in the order
// they were sent (MPI's non-overtaking rule), which is all the executor relies on.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <utility>
#include <vector>

namespace disagmoe {

using Bytes = std::vector<std::uint8_t>;

/// One message an exchange step sends (Comm::exchange).
struct OutgoingMessage {
  int dst = 0, tag = 0;
  Bytes bytes;
};

/// One message an exchange step receives (Comm::exchange).
struct IncomingMessage {
  int src = 0, tag = 0;
};

/// A communication failure; the message names the peer rank and the tag.
class CommError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

/// A recv whose deadline passed with no message ("... timed out after N ms"). Its own type so a
/// caller that polls with short deadlines (CommStream.h) can tell "not yet" from a failure.
class CommTimeout : public CommError {
public:
  using CommError::CommError;
};

/// A recv that was interrupted because the run was aborted (another rank failed first).
class CommAborted : public CommError {
public:
  using CommError::CommError;
};

class Comm {
public:
  virtual ~Comm() = default;

  /// This endpoint's global rank, in [0, worldSize()).
  virtual int rank() const = 0;
  virtual int worldSize() const = 0;

  /// Sends `message` to global rank `dst` (may be this rank) under `tag` (>= 0). Buffered: returns
  /// without waiting for the matching recv. Throws CommError for a rank outside the world.
  virtual void send(int dst, int tag, Bytes message) = 0;

  /// Returns the oldest message from `src` under `tag`, waiting at most `timeout`. Throws
  /// CommTimeout "rank R: recv from rank S (tag T) timed out after N ms" when the deadline passes,
  /// and CommAborted when the run is aborted while waiting.
  virtual Bytes recv(int src, int tag, std::chrono::milliseconds timeout) = 0;

  /// One exchange step (an M2N or N2M of a layer): sends every message of `sends`, then returns one
  /// message per entry of `recvs`, in the order of `recvs`, each recv waiting at most `timeout`.
  /// Errors: those of send and recv. The default is that loop of send() then recv() calls, so
  /// `local` and `mpi` behave exactly as a caller's own loop; `nccl` posts all of the step's
  /// ncclSend/ncclRecv in one ncclGroupStart/ncclGroupEnd (runtime/comm/nccl/NcclComm.h).
  virtual std::vector<Bytes> exchange(std::vector<OutgoingMessage> sends,
                                      const std::vector<IncomingMessage> &recvs,
                                      std::chrono::milliseconds timeout);

  /// In-place element-wise sum of fp32 `data[0, n)` over the ranks `ranks` (strictly ascending,
  /// holding rank()); every rank of `ranks` calls it with the same `ranks`, `tag` and `n`.
  /// The default is the fixed-order reduction (docs/architecture.md, "Determinism"): ranks.front()
  /// receives each other rank's vector in ascending rank order under `tag` and adds it to its own
  /// (((d_0 + d_1) + d_2) + ...), then sends the sum back, so `local` and `mpi` agree bit for bit.
  /// `nccl` uses ncclAllReduce (ncclSum), whose order depends on NCCL's ring/tree algorithm: its
  /// sums differ from the default's in the last bits, by at most 2 (k - 1) 2^-24 sum_i |d_i| per
  /// element for k = ranks.size() (two recursive summations of k terms, each within
  /// (k - 1) u sum_i |d_i| of the exact sum, u = 2^-24; Higham, Accuracy and Stability of Numerical
  /// Algorithms, 2nd ed., eq. 4.4). Throws CommError for bad `ranks`, or a message of the wrong
  /// size (naming the peer and the tag).
  virtual void allReduceSum(const std::vector<int> &ranks, int tag, float *data, std::size_t n,
                            std::chrono::milliseconds timeout);

  /// Waits at most `timeout` for a message under any of `sources` ((src, tag) pairs), takes the
  /// oldest message of the first pair (in `sources` order) that has one into `out` and returns the
  /// pair's index; returns -1, without an exception, when the deadline passes or wake() is called.
  /// Throws CommAborted when the run is aborted, CommError for a rank outside the world. Used by
  /// the comm stream (runtime/executor/CommStream.h) to wait for several posted receives at once.
  /// The default polls recv with zero deadlines every 100 us; `local` and `mpi` wake on arrival.
  virtual int recvAny(const std::vector<std::pair<int, int>> &sources, Bytes &out,
                      std::chrono::milliseconds timeout);

  /// Makes a recvAny running on this endpoint in another thread return -1 now (or the next one,
  /// if none runs). Thread-safe; sends and receives nothing. The default does nothing (its polling
  /// recvAny returns at its deadline).
  virtual void wake() {}
};

} // namespace disagmoe
