// A rank's comm stream: a worker thread that alone calls the rank's Comm (CommStream.h).
#include "runtime/executor/CommStream.h"

#include "runtime/executor/OpProfile.h"

#include <algorithm>
#include <string>
#include <vector>

namespace disagmoe {
namespace {
// The longest single wait of the worker for its pending receives (it is woken at once by a newly
// queued send or receive, and a receive's deadline ends it earlier).
constexpr std::chrono::milliseconds kLongestWait{100};
} // namespace

Bytes CommStream::Receive::take() {
  arrived.wait();
  return std::move(bytes);
}

CommStream::CommStream(Comm &inner)
    : inner_(inner), rank_(inner.rank()), world_(inner.worldSize()),
      recorder_(RankRecorder::current()) {
  worker_ = std::thread([this] { run(); });
}

CommStream::~CommStream() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  inner_.wake();
  worker_.join();
}

void CommStream::throwIfFailedLocked() const {
  if (error_)
    std::rethrow_exception(error_);
}

void CommStream::send(int dst, int tag, Bytes message) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    throwIfFailedLocked();
    sends_.push_back({dst, tag, std::move(message), recorder_ ? recorder_->now() : 0, {}});
  }
  wake_.notify_all();
  inner_.wake(); // out of a recvAny: the send must not wait for a receive
}

std::shared_ptr<CommStream::Receive> CommStream::postRecv(int src, int tag,
                                                          std::chrono::milliseconds timeout) {
  auto r = std::make_shared<Receive>();
  r->src = src;
  r->tag = tag;
  r->timeout = timeout;
  r->deadline = std::chrono::steady_clock::now() + timeout;
  r->posted = recorder_ ? recorder_->now() : 0;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    throwIfFailedLocked();
    receives_.push_back(r);
  }
  wake_.notify_all();
  inner_.wake(); // the worker waits for this receive too from now on
  return r;
}

Bytes CommStream::recv(int src, int tag, std::chrono::milliseconds timeout) {
  return postRecv(src, tag, timeout)->take();
}

void CommStream::allReduceSum(const std::vector<int> &ranks, int tag, float *data, std::size_t n,
                              std::chrono::milliseconds timeout) {
  // Shared with the task: a stream that fails while the task runs returns before it ends (the
  // destructor's join waits for it; `data` belongs to the caller, which outlives the stream).
  auto done = std::make_shared<Event>();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    throwIfFailedLocked();
    Outgoing o{-1, tag, {}, 0, {}};
    o.task = [this, done, ranks, tag, data, n, timeout] {
      try {
        inner_.allReduceSum(ranks, tag, data, n, timeout);
        done->record();
      } catch (...) {
        done->fail(std::current_exception());
        throw; // the stream fails too
      }
    };
    sends_.push_back(std::move(o));
  }
  wake_.notify_all();
  inner_.wake();
  {
    std::unique_lock<std::mutex> lock(mutex_);
    flushed_.wait(lock, [&] { return done->done() || error_; });
    if (!done->done())
      throwIfFailedLocked();
  }
  done->wait();
}

void CommStream::flush() {
  std::unique_lock<std::mutex> lock(mutex_);
  flushed_.wait(lock, [this] { return (sends_.empty() && !sending_) || error_; });
  throwIfFailedLocked();
}

void CommStream::abort(std::exception_ptr error) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    failLocked(error);
  }
  wake_.notify_all();
  inner_.wake();
}

void CommStream::failLocked(std::exception_ptr error) {
  if (!error_)
    error_ = error;
  for (auto &r : receives_)
    r->arrived.fail(error_);
  receives_.clear();
  sends_.clear();
  flushed_.notify_all();
}

void CommStream::run() {
  const ScopedRecorder scope(recorder_); // the comm stream's events go to the rank's recorder
  const std::string me = "rank " + std::to_string(rank_);
  std::unique_lock<std::mutex> lock(mutex_);
  while (true) {
    // Every queued send first, in posting order.
    while (!sends_.empty() && !error_) {
      Outgoing o = std::move(sends_.front());
      sends_.pop_front();
      sending_ = true;
      lock.unlock();
      std::exception_ptr failed;
      const double started = recorder_ ? recorder_->now() : 0;
      const int64_t size = static_cast<int64_t>(o.bytes.size());
      try {
        if (o.task)
          o.task();
        else
          inner_.send(o.dst, o.tag, std::move(o.bytes));
      } catch (...) {
        failed = std::current_exception();
      }
      if (recorder_ && !failed && !o.task)
        recorder_->recordComm("send to " + std::to_string(o.dst) + " tag " + std::to_string(o.tag),
                              started, o.dst, o.tag, size, /*sent=*/true);
      lock.lock();
      sending_ = false;
      if (failed)
        failLocked(failed);
    }
    flushed_.notify_all();
    if (stopping_) {
      if (!error_) {
        try {
          throw CommAborted(me + ": the comm stream stopped with receives pending");
        } catch (...) {
          failLocked(std::current_exception());
        }
      }
      return;
    }
    if (receives_.empty() || error_) {
      wake_.wait(lock, [this] {
        return stopping_ || (!error_ && (!sends_.empty() || !receives_.empty()));
      });
      continue;
    }
    // The oldest pending receive of each (src, tag), in posting order (a later one of the same pair
    // must not take an earlier message).
    std::vector<std::shared_ptr<Receive>> heads;
    std::vector<std::pair<int, int>> keys;
    auto until = std::chrono::steady_clock::time_point::max();
    for (const auto &r : receives_) {
      const std::pair<int, int> key{r->src, r->tag};
      if (std::find(keys.begin(), keys.end(), key) != keys.end())
        continue;
      heads.push_back(r);
      keys.push_back(key);
      until = std::min(until, r->deadline);
    }
    lock.unlock();
    // Wait for any of them until the nearest deadline (at most kLongestWait); a send or receive
    // queued meanwhile ends the wait at once (Comm::wake).
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        until - std::chrono::steady_clock::now());
    const auto wait = std::max(std::chrono::milliseconds(0),
                               std::min(left + std::chrono::milliseconds(1), kLongestWait));
    std::vector<std::shared_ptr<Receive>> finished;
    std::exception_ptr failed;
    Bytes bytes;
    int got = -1;
    try {
      got = inner_.recvAny(keys, bytes, wait);
    } catch (...) {
      failed = std::current_exception();
    }
    if (got >= 0) {
      Receive &r = *heads[static_cast<size_t>(got)];
      if (recorder_)
        recorder_->recordComm("recv from " + std::to_string(r.src) + " tag " +
                                  std::to_string(r.tag),
                              std::max(r.posted, recorder_->lastCommEnd()), r.src, r.tag,
                              static_cast<int64_t>(bytes.size()), /*sent=*/false);
      r.bytes = std::move(bytes);
      r.arrived.record();
      finished.push_back(heads[static_cast<size_t>(got)]);
    } else if (!failed) {
      const auto now = std::chrono::steady_clock::now();
      for (const auto &h : heads) {
        if (now < h->deadline)
          continue;
        h->arrived.fail(std::make_exception_ptr(CommTimeout(
            me + ": recv from rank " + std::to_string(h->src) + " (tag " + std::to_string(h->tag) +
            ") timed out after " + std::to_string(h->timeout.count()) + " ms")));
        finished.push_back(h);
      }
    }
    lock.lock();
    for (const auto &f : finished)
      for (auto it = receives_.begin(); it != receives_.end(); ++it)
        if (*it == f) {
          receives_.erase(it);
          break;
        }
    if (failed)
      failLocked(failed);
  }
}

} // namespace disagmoe
