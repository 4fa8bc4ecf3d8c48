#include "runtime/comm/local/LocalComm.h"

#include <string>

namespace disagmoe {

class LocalComm : public Comm {
public:
  LocalComm(LocalWorld& world, int rank) : world_(world), rank_(rank) {}
  int rank() const override { return rank_; }
  int worldSize() const override { return world_.worldSize(); }
  void send(int dst, int tag, Bytes message) override { world_.deliver(rank_, dst, tag, std::move(message)); }
  Bytes recv(int src, int tag, std::chrono::milliseconds timeout) override {
    return world_.take(src, rank_, tag, timeout);
  }

private:
  LocalWorld& world_;
  const int rank_;
};

LocalWorld::LocalWorld(int worldSize) : worldSize_(worldSize), arrived_(static_cast<size_t>(worldSize)) {}

std::unique_ptr<Comm> LocalWorld::endpoint(int rank) {
  if (rank < 0 || rank >= worldSize_)
    throw CommError("local comm: rank " + std::to_string(rank) + " is outside the world of " +
                    std::to_string(worldSize_) + " ranks");
  return std::make_unique<LocalComm>(*this, rank);
}

void LocalWorld::abort(const std::string& reason) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (aborted_) return;
  aborted_ = true;
  abortReason_ = reason;
  for (auto& cv : arrived_)
    cv.notify_all();
}

void LocalWorld::deliver(int src, int dst, int tag, Bytes message) {
  if (dst < 0 || dst >= worldSize_ || tag < 0)
    throw CommError("rank " + std::to_string(src) + ": send to rank " + std::to_string(dst) + " (tag " +
                    std::to_string(tag) + ") is outside the world of " + std::to_string(worldSize_) + " ranks");
  std::lock_guard<std::mutex> lock(mutex_);
  mailboxes_[Key{src, dst, tag}].push_back(std::move(message));
  arrived_[static_cast<size_t>(dst)].notify_all();
}

Bytes LocalWorld::take(int src, int dst, int tag, std::chrono::milliseconds timeout) {
  const std::string what =
      "rank " + std::to_string(dst) + ": recv from rank " + std::to_string(src) + " (tag " + std::to_string(tag) + ")";
  if (src < 0 || src >= worldSize_)
    throw CommError(what + ": no such rank in a world of " + std::to_string(worldSize_));
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::unique_lock<std::mutex> lock(mutex_);
  auto& cv = arrived_[static_cast<size_t>(dst)];
  while (true) {
    if (aborted_) throw CommAborted(what + " aborted: " + abortReason_);
    auto box = mailboxes_.find(Key{src, dst, tag});
    if (box != mailboxes_.end() && !box->second.empty()) {
      Bytes message = std::move(box->second.front());
      box->second.pop_front();
      return message;
    }
    if (cv.wait_until(lock, deadline) == std::cv_status::timeout) {
      // One last look: the message may have arrived together with the timeout.
      box = mailboxes_.find(Key{src, dst, tag});
      if (box != mailboxes_.end() && !box->second.empty()) continue;
      throw CommTimeout(what + " timed out after " + std::to_string(timeout.count()) + " ms");
    }
  }
}

} // namespace disagmoe
