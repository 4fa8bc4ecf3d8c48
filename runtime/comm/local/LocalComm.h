// The `local` comm backend: all ranks live in one process, one thread each. Each (src, dst, tag)
// triple has a FIFO mailbox; recv waits on the receiver's condition variable until a message
// arrives, the deadline passes, or the world is aborted.
#pragma once

#include "runtime/comm/Comm.h"

#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace disagmoe {

/// Shared state of the in-process ranks. Must outlive every endpoint it hands out.
class LocalWorld {
public:
  explicit LocalWorld(int worldSize);

  int worldSize() const { return worldSize_; }

  /// The endpoint of `rank` (0 <= rank < worldSize). Throws CommError otherwise.
  std::unique_ptr<Comm> endpoint(int rank);

  /// Wakes every waiting recv and makes it (and every later recv) throw CommAborted with `reason`.
  /// Used when one rank fails, so the others stop instead of waiting for their deadline.
  void abort(const std::string &reason);

private:
  friend class LocalComm;
  using Key = std::tuple<int, int, int>; // (src, dst, tag)

  void deliver(int src, int dst, int tag, Bytes message);
  Bytes take(int src, int dst, int tag, std::chrono::milliseconds timeout);
  int takeAny(int dst, const std::vector<std::pair<int, int>> &sources, Bytes &out,
              std::chrono::milliseconds timeout);
  void wake(int dst);

  const int worldSize_;
  std::mutex mutex_;
  std::deque<std::condition_variable> arrived_; // one per destination rank
  std::vector<char> woken_; // per destination rank: wake() since its last takeAny
  std::map<Key, std::deque<Bytes>> mailboxes_;
  bool aborted_ = false;
  std::string abortReason_;
};

} // namespace disagmoe
