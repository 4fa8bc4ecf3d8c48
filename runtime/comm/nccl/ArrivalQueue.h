// The receive side's ordering rule of the nccl backend (NcclComm.h), kept apart from CUDA so that
// every build tests it: messages from one source are delivered in the order their headers
// arrived (the sender's order, by MPI's non-overtaking rule), whatever order their payload copies
// complete in, and a zero-byte message (complete with its header) never overtakes a payload
// announced before it.
#pragma once

#include "runtime/comm/Comm.h"

#include <cstdint>
#include <deque>
#include <map>
#include <vector>

namespace disagmoe::nccl {

class ArrivalQueue {
public:
  struct Delivered {
    int src = 0, tag = 0;
    Bytes bytes;
  };

  /// `worldSize` sources, ranks [0, worldSize).
  explicit ArrivalQueue(int worldSize);

  /// A header from `src` announced a message of `size` bytes under `tag`. Returns its slot (unique
  /// within this queue); a zero-byte message is complete at once. Throws CommError for a source
  /// outside the world.
  std::uint64_t announce(int src, int tag, std::uint64_t size);

  /// The payload of `slot` arrived. Throws CommError for an unknown or already completed slot, or
  /// a payload whose size differs from the announced one.
  void complete(std::uint64_t slot, Bytes payload);

  /// Removes and returns, per source in ascending rank order, every complete message at the head
  /// of that source's FIFO, oldest first.
  std::vector<Delivered> takeDeliverable();

  /// Messages announced and not yet taken.
  std::size_t pending() const;

private:
  struct Entry {
    std::uint64_t slot;
    int tag;
    std::uint64_t size;
    bool complete;
    Bytes bytes;
  };
  std::vector<std::deque<Entry>> fifo_;   // per source
  std::map<std::uint64_t, int> sourceOf_; // open slots
  std::uint64_t next_ = 0;
};

} // namespace disagmoe::nccl
