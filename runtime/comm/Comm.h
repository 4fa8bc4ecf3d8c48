// Point-to-point byte messages between global ranks: the only communication the executor uses.
//
// A Comm is one rank's endpoint. Backends: `local` (in-process ranks, one thread each; LocalComm.h);
// an MPI backend maps send to a buffered MPI_Isend and recv to MPI_Probe/MPI_Recv with a deadline.
// Messages between one (src, dst, tag) triple arrive in the order they were sent (MPI's
// non-overtaking rule), which is all the executor relies on.
#pragma once

#include <chrono>
#include <cstdint>
#include <stdexcept>
#include <vector>

namespace disagmoe {

using Bytes = std::vector<std::uint8_t>;

/// A communication failure; the message names the peer rank and the tag.
class CommError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
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

  /// Returns the oldest message from `src` under `tag`, waiting at most `timeout`. Throws CommError
  /// "rank R: recv from rank S (tag T) timed out after N ms" when the deadline passes, and
  /// CommAborted when the run is aborted while waiting.
  virtual Bytes recv(int src, int tag, std::chrono::milliseconds timeout) = 0;
};

} // namespace disagmoe
