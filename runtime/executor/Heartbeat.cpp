// Heartbeat and MonitoredComm: catch silent or dead in-process ranks (Heartbeat.h).
#include "runtime/executor/Heartbeat.h"

#include "runtime/executor/RankWorker.h"

#include <csignal>
#include <cstdlib>
#include <limits>

namespace disagmoe {

FaultInjection FaultInjection::fromEnvironment() {
  FaultInjection f;
  const char *v = std::getenv("DISAGMOE_FAULT_INJECT");
  if (!v || !*v)
    return f;
  const std::string text = v;
  const size_t a = text.find(':'), b = a == std::string::npos ? a : text.find(':', a + 1);
  const auto bad = [&] {
    return ExecError("DISAGMOE_FAULT_INJECT=\"" + text +
                     "\": expected RANK:die|silent|kill|freeze:OPERATION (a test hook)");
  };
  if (b == std::string::npos)
    throw bad();
  const std::string mode = text.substr(a + 1, b - a - 1);
  try {
    size_t used = 0;
    f.rank = std::stoi(text.substr(0, a), &used);
    if (used != a || f.rank < 0)
      throw bad();
    f.at = std::stoll(text.substr(b + 1), &used);
    if (used != text.size() - b - 1 || f.at < 0)
      throw bad();
  } catch (const std::logic_error &) {
    throw bad();
  }
  if (mode != "die" && mode != "silent" && mode != "kill" && mode != "freeze")
    throw bad();
  f.silent = mode == "silent";
  f.kill = mode == "kill";
  f.freeze = mode == "freeze";
  return f;
}

HeartbeatMonitor::HeartbeatMonitor(int worldSize, std::chrono::milliseconds deadline,
                                   std::function<void(const std::string &)> onSilent)
    : origin_(std::chrono::steady_clock::now()), deadline_(deadline),
      onSilent_(std::move(onSilent)), ranks_(static_cast<size_t>(worldSize)) {
  if (deadline_.count() > 0)
    watchdog_ = std::thread([this] { watch(); });
}

HeartbeatMonitor::~HeartbeatMonitor() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  stop_.notify_all();
  if (watchdog_.joinable())
    watchdog_.join();
}

int64_t HeartbeatMonitor::nowMs() const {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() -
                                                               origin_)
      .count();
}

void HeartbeatMonitor::beat(int rank) { ranks_[static_cast<size_t>(rank)].lastMs = nowMs(); }

void HeartbeatMonitor::setWaiting(int rank, bool waiting) {
  RankBeat &r = ranks_[static_cast<size_t>(rank)];
  r.lastMs = nowMs();
  r.waiting = waiting;
}

void HeartbeatMonitor::finished(int rank) { ranks_[static_cast<size_t>(rank)].done = true; }

void HeartbeatMonitor::watch() {
  // Checks ten times per deadline, so a silent rank is named within 1.1 deadlines.
  const auto period = std::max(deadline_ / 10, std::chrono::milliseconds(1));
  std::unique_lock<std::mutex> lock(mutex_);
  while (!stop_.wait_for(lock, period, [this] { return stopping_; })) {
    const int64_t now = nowMs();
    for (size_t r = 0; r < ranks_.size(); ++r) {
      const RankBeat &b = ranks_[r];
      if (b.done || b.waiting || now - b.lastMs <= deadline_.count())
        continue;
      const std::string message =
          "rank " + std::to_string(r) + " is silent: no heartbeat for " +
          std::to_string(now - b.lastMs) + " ms (deadline " + std::to_string(deadline_.count()) +
          " ms; its last message operation was at " + std::to_string(b.lastMs) + " ms)";
      lock.unlock();
      onSilent_(message);
      return; // one report: the abort ends every rank
    }
  }
}

MonitoredComm::MonitoredComm(std::unique_ptr<Comm> inner, HeartbeatMonitor &monitor,
                             FaultInjection fault, bool processPerRank)
    : inner_(std::move(inner)), monitor_(monitor), fault_(fault), processPerRank_(processPerRank) {
  monitor_.beat(inner_->rank());
}

void MonitoredComm::maybeFail() {
  if (fault_.rank != inner_->rank() || operations_++ != fault_.at)
    return;
  if ((fault_.kill || fault_.freeze) && !processPerRank_)
    throw ExecError("DISAGMOE_FAULT_INJECT mode " + std::string(fault_.kill ? "kill" : "freeze") +
                    " stops the whole process: it needs one process per rank (--comm mpi)");
  if (fault_.kill)
    std::raise(SIGKILL);
  if (fault_.freeze)
    std::raise(SIGSTOP); // stays stopped until the launcher ends it
  if (!fault_.silent)
    throw ExecError("rank " + std::to_string(fault_.rank) +
                    ": injected failure (DISAGMOE_FAULT_INJECT)");
  // Silent: no beat, not waiting; a receive from itself under an unused tag returns only when the
  // world is aborted (CommAborted).
  inner_->recv(inner_->rank(), std::numeric_limits<int>::max(), std::chrono::hours(24 * 365));
}

void MonitoredComm::send(int dst, int tag, Bytes message) {
  maybeFail();
  inner_->send(dst, tag, std::move(message));
  monitor_.beat(inner_->rank());
}

Bytes MonitoredComm::recv(int src, int tag, std::chrono::milliseconds timeout) {
  maybeFail();
  monitor_.setWaiting(inner_->rank(), true);
  try {
    Bytes b = inner_->recv(src, tag, timeout);
    monitor_.setWaiting(inner_->rank(), false);
    return b;
  } catch (...) {
    monitor_.setWaiting(inner_->rank(), false);
    throw;
  }
}

int MonitoredComm::recvAny(const std::vector<std::pair<int, int>> &sources, Bytes &out,
                           std::chrono::milliseconds timeout) {
  maybeFail();
  monitor_.setWaiting(inner_->rank(), true);
  try {
    const int got = inner_->recvAny(sources, out, timeout);
    monitor_.setWaiting(inner_->rank(), false);
    return got;
  } catch (...) {
    monitor_.setWaiting(inner_->rank(), false);
    throw;
  }
}

namespace {
// Forwards to a comm owned elsewhere (RankWatch borrows the process's mpi comm).
class BorrowedComm : public Comm {
public:
  explicit BorrowedComm(Comm &inner) : inner_(inner) {}
  int rank() const override { return inner_.rank(); }
  int worldSize() const override { return inner_.worldSize(); }
  void send(int dst, int tag, Bytes message) override { inner_.send(dst, tag, std::move(message)); }
  Bytes recv(int src, int tag, std::chrono::milliseconds timeout) override {
    return inner_.recv(src, tag, timeout);
  }
  int recvAny(const std::vector<std::pair<int, int>> &sources, Bytes &out,
              std::chrono::milliseconds timeout) override {
    return inner_.recvAny(sources, out, timeout);
  }
  void wake() override { inner_.wake(); }

private:
  Comm &inner_;
};
} // namespace

RankWatch::RankWatch(Comm &comm, std::chrono::milliseconds deadline, const FaultInjection &fault,
                     std::function<void(const std::string &)> onSilent)
    : monitor_(comm.worldSize(), deadline, std::move(onSilent)), rank_(comm.rank()) {
  for (int r = 0; r < comm.worldSize(); ++r)
    if (r != rank_)
      monitor_.finished(r); // watched by their own processes
  monitored_ =
      std::make_unique<MonitoredComm>(std::make_unique<BorrowedComm>(comm), monitor_, fault, true);
}

RankWatch::~RankWatch() { monitor_.finished(rank_); }

} // namespace disagmoe
