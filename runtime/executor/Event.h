// A one-shot event between the streams of one rank (docs/architecture.md, "The plan and the
// executor", Streams): a stream records it when the thing it guards is done (an activation
// computed, a buffer received), or fails it with the exception that stopped the work; another
// stream waits on it.
//
// Like a CUDA event recorded once: wait() returns at once after record(), blocks before. There is
// no deadline here: whoever owns the guarded work is responsible for ending it (the comm worker
// fails a receive at its deadline, CommStream.h; a compute stream fails its events when it throws),
// so a wait never outlives a failure.
#pragma once

#include <condition_variable>
#include <exception>
#include <mutex>

namespace disagmoe {

class Event {
public:
  Event() = default;
  Event(const Event &) = delete;
  Event &operator=(const Event &) = delete;

  /// Marks the guarded work done and wakes every waiter. Later record()/fail() calls are ignored.
  void record();
  /// Marks the guarded work failed with `error`; wait() rethrows it. Ignored after record()/fail().
  void fail(std::exception_ptr error);
  /// Blocks until record() or fail(); rethrows the failure.
  void wait() const;
  /// Whether record() or fail() happened.
  bool done() const;

private:
  mutable std::mutex mutex_;
  mutable std::condition_variable changed_;
  bool done_ = false;
  std::exception_ptr error_;
};

} // namespace disagmoe
