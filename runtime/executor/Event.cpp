// One-shot record/fail/wait event between a rank's streams (Event.h).
#include "runtime/executor/Event.h"

namespace disagmoe {

void Event::record() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (done_)
      return;
    done_ = true;
  }
  changed_.notify_all();
}

void Event::fail(std::exception_ptr error) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (done_)
      return;
    done_ = true;
    error_ = std::move(error);
  }
  changed_.notify_all();
}

void Event::wait() const {
  std::unique_lock<std::mutex> lock(mutex_);
  changed_.wait(lock, [this] { return done_; });
  if (error_)
    std::rethrow_exception(error_);
}

bool Event::done() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return done_;
}

} // namespace disagmoe
