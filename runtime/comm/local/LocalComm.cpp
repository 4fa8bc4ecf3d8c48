// The in-process `local` comm: per-(src, dst, tag) FIFO mailboxes, one thread a rank (LocalComm.h).
#include "runtime/comm/local/LocalComm.h"

#include <string>

namespace disagmoe {

class LocalComm : public Comm {
public:
  LocalComm(LocalWorld &world, int rank) : world_(world), rank_(rank) {}
  int rank() const override { return rank_; }
  int worldSize() const override { return world_.worldSize(); }
  void send(int dst, int tag, Bytes message) override {
    world_.deliver(rank_, dst, tag, std::move(message));
  }
  Bytes recv(int src, int tag, std::chrono::milliseconds timeout) override {
    return world_.take(src, rank_, tag, timeout);
  }
  int recvAny(const std::vector<std::pair<int, int>> &sources, Bytes &out,
              std::chrono::milliseconds timeout) override {
    return world_.takeAny(rank_, sources, out, timeout);
  }
  void wake() override { world_.wake(rank_); }

private:
  LocalWorld &world_;
  const int rank_;
};

LocalWorld::LocalWorld(int worldSize)
    : worldSize_(worldSize), arrived_(static_cast<size_t>(worldSize)),
      woken_(static_cast<size_t>(worldSize), 0) {}

std::unique_ptr<Comm> LocalWorld::endpoint(int rank) {
  if (rank < 0 || rank >= worldSize_)
    throw CommError("local comm: rank " + std::to_string(rank) + " is outside the world of " +
                    std::to_string(worldSize_) + " ranks");
  return std::make_unique<LocalComm>(*this, rank);
}

void LocalWorld::abort(const std::string &reason) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (aborted_)
    return;
  aborted_ = true;
  abortReason_ = reason;
  for (auto &cv : arrived_)
    cv.notify_all();
}

void LocalWorld::deliver(int src, int dst, int tag, Bytes message) {
  if (dst < 0 || dst >= worldSize_ || tag < 0)
    throw CommError("rank " + std::to_string(src) + ": send to rank " + std::to_string(dst) +
                    " (tag " + std::to_string(tag) + ") is outside the world of " +
                    std::to_string(worldSize_) + " ranks");
  std::lock_guard<std::mutex> lock(mutex_);
  mailboxes_[Key{src, dst, tag}].push_back(std::move(message));
  arrived_[static_cast<size_t>(dst)].notify_all();
}

Bytes LocalWorld::take(int src, int dst, int tag, std::chrono::milliseconds timeout) {
  const std::string what = "rank " + std::to_string(dst) + ": recv from rank " +
                           std::to_string(src) + " (tag " + std::to_string(tag) + ")";
  if (src < 0 || src >= worldSize_)
    throw CommError(what + ": no such rank in a world of " + std::to_string(worldSize_));
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::unique_lock<std::mutex> lock(mutex_);
  auto &cv = arrived_[static_cast<size_t>(dst)];
  while (true) {
    if (aborted_)
      throw CommAborted(what + " aborted: " + abortReason_);
    auto box = mailboxes_.find(Key{src, dst, tag});
    if (box != mailboxes_.end() && !box->second.empty()) {
      Bytes message = std::move(box->second.front());
      box->second.pop_front();
      return message;
    }
    if (cv.wait_until(lock, deadline) == std::cv_status::timeout) {
      // One last look: the message may have arrived together with the timeout.
      box = mailboxes_.find(Key{src, dst, tag});
      if (box != mailboxes_.end() && !box->second.empty())
        continue;
      throw CommTimeout(what + " timed out after " + std::to_string(timeout.count()) + " ms");
    }
  }
}

int LocalWorld::takeAny(int dst, const std::vector<std::pair<int, int>> &sources, Bytes &out,
                        std::chrono::milliseconds timeout) {
  for (const auto &[src, tag] : sources)
    if (src < 0 || src >= worldSize_)
      throw CommError("rank " + std::to_string(dst) + ": recv from rank " + std::to_string(src) +
                      " (tag " + std::to_string(tag) + "): no such rank in a world of " +
                      std::to_string(worldSize_));
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::unique_lock<std::mutex> lock(mutex_);
  auto &cv = arrived_[static_cast<size_t>(dst)];
  char &woken = woken_[static_cast<size_t>(dst)];
  while (true) {
    if (aborted_)
      throw CommAborted("rank " + std::to_string(dst) + ": recv from rank " +
                        std::to_string(sources.front().first) + " (tag " +
                        std::to_string(sources.front().second) + ") aborted: " + abortReason_);
    for (size_t i = 0; i < sources.size(); ++i) {
      auto box = mailboxes_.find(Key{sources[i].first, dst, sources[i].second});
      if (box != mailboxes_.end() && !box->second.empty()) {
        out = std::move(box->second.front());
        box->second.pop_front();
        return static_cast<int>(i);
      }
    }
    if (woken) {
      woken = 0;
      return -1;
    }
    if (cv.wait_until(lock, deadline) == std::cv_status::timeout) {
      bool any = aborted_;
      for (const auto &[src, tag] : sources) {
        auto box = mailboxes_.find(Key{src, dst, tag});
        any = any || (box != mailboxes_.end() && !box->second.empty());
      }
      if (!any)
        return -1;
    }
  }
}

void LocalWorld::wake(int dst) {
  std::lock_guard<std::mutex> lock(mutex_);
  woken_[static_cast<size_t>(dst)] = 1;
  arrived_[static_cast<size_t>(dst)].notify_all();
}

} // namespace disagmoe
