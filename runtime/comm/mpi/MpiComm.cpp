// The `mpi` comm backend: one comm thread drives MPI_Isend/Iprobe/Recv for the workers (MpiComm.h).
#include "runtime/comm/mpi/MpiComm.h"

#include <mpi.h>

#include <condition_variable>
#include <cstdlib>
#include <deque>
#include <functional>
#include <list>
#include <map>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

namespace disagmoe {

int rankFromEnvironment() {
  for (const char *name : {"OMPI_COMM_WORLD_RANK", "SLURM_PROCID", "RANK"}) {
    const char *v = std::getenv(name);
    if (!v || !*v)
      continue;
    char *end = nullptr;
    const long r = std::strtol(v, &end, 10);
    if (*end == '\0' && r >= 0 && r < (1L << 30))
      return static_cast<int>(r);
  }
  return -1;
}

namespace {

enum class Phase { Starting, Running, Finishing, Aborting, Done };

// Control-communicator tags: 0 abort note, then the heartbeat's (MpiComm.h).
constexpr int kNoteTag = 1, kDoneTag = 2;

struct Outgoing {
  int dst, tag;
  bool control; // an abort note on the control communicator
  Bytes bytes;
};

struct InFlight {
  MPI_Request request;
  Bytes bytes; // kept alive until the send completes
};

std::string mpiError(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(code, text, &len);
  return std::string(text, static_cast<size_t>(len));
}

} // namespace

struct MpiComm::State {
  std::mutex mutex;
  std::condition_variable arrived;   // workers wait for messages / phase changes
  std::condition_variable commReady; // the comm thread's progress (start, finish)
  std::deque<Outgoing> queue;
  std::map<std::pair<int, int>, std::deque<Bytes>> mailboxes; // (src, tag)
  Phase phase = Phase::Starting;
  std::string startError, finishError, abortReason;
  bool finished = false;
  bool woken = false; // wake() since the last recvAny returned
  int rank = -1, world = 0;
  int abortExitCode = 1;
  std::chrono::steady_clock::time_point finishDeadline, abortDeadline;
  std::thread thread;
  // Heartbeat (MpiComm.h): deadline 0 = off. lastNote/peerDone: comm thread only.
  std::chrono::milliseconds heartbeatDeadline{0};
  std::function<void(const std::string &)> onSilentPeer;
  std::vector<std::chrono::steady_clock::time_point> lastNote;
  std::vector<bool> peerDone;
  std::chrono::steady_clock::time_point nextNote;
  bool sentDone = false;

  // Comm thread only.
  MPI_Comm data = MPI_COMM_NULL, control = MPI_COMM_NULL;
  std::list<InFlight> inFlight;

  void run();
  bool poll();                             // one round of progress; true if anything happened
  std::vector<int> heartbeatPeers() const; // whom this rank sends notes to and watches
  void heartbeat(Phase p);                 // sends due notes, declares a silent peer
};

bool MpiComm::State::poll() {
  bool busy = false;
  std::deque<Outgoing> batch;
  {
    std::lock_guard<std::mutex> lock(mutex);
    batch.swap(queue);
  }
  for (Outgoing &o : batch) {
    inFlight.push_back({MPI_REQUEST_NULL, std::move(o.bytes)});
    InFlight &f = inFlight.back();
    MPI_Isend(f.bytes.data(), static_cast<int>(f.bytes.size()), MPI_BYTE, o.dst, o.tag,
              o.control ? control : data, &f.request);
    busy = true;
  }
  for (MPI_Comm c : {control, data}) {
    while (true) {
      int flag = 0;
      MPI_Status status;
      MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, c, &flag, &status);
      if (!flag)
        break;
      int count = 0;
      MPI_Get_count(&status, MPI_BYTE, &count);
      Bytes bytes(static_cast<size_t>(count));
      MPI_Recv(bytes.data(), count, MPI_BYTE, status.MPI_SOURCE, status.MPI_TAG, c,
               MPI_STATUS_IGNORE);
      busy = true;
      std::lock_guard<std::mutex> lock(mutex);
      if (c == control && status.MPI_TAG == kNoteTag) {
        lastNote[status.MPI_SOURCE] = std::chrono::steady_clock::now();
      } else if (c == control && status.MPI_TAG == kDoneTag) {
        peerDone[status.MPI_SOURCE] = true;
      } else if (c == control) {
        if (abortReason.empty())
          abortReason = std::string(bytes.begin(), bytes.end());
      } else {
        mailboxes[{status.MPI_SOURCE, status.MPI_TAG}].push_back(std::move(bytes));
      }
      arrived.notify_all();
    }
  }
  for (auto it = inFlight.begin(); it != inFlight.end();) {
    int done = 0;
    MPI_Test(&it->request, &done, MPI_STATUS_IGNORE);
    if (done) {
      it = inFlight.erase(it);
      busy = true;
    } else {
      ++it;
    }
  }
  return busy;
}

std::vector<int> MpiComm::State::heartbeatPeers() const {
  std::vector<int> peers;
  for (int r = 0; r < world; ++r)
    if (r != rank && (rank == 0 || r == 0))
      peers.push_back(r);
  return peers;
}

void MpiComm::State::heartbeat(Phase p) {
  const auto now = std::chrono::steady_clock::now();
  const std::vector<int> peers = heartbeatPeers();
  // Notes: periodic while running; one "done" note when finishing (the barrier waits for it).
  if (p == Phase::Finishing && !sentDone) {
    std::lock_guard<std::mutex> lock(mutex);
    for (int r : peers)
      queue.push_back({r, kDoneTag, true, Bytes()});
    sentDone = true;
  } else if (p == Phase::Running && now >= nextNote) {
    std::lock_guard<std::mutex> lock(mutex);
    for (int r : peers)
      queue.push_back({r, kNoteTag, true, Bytes()});
    nextNote = now + std::max(heartbeatDeadline / 10, std::chrono::milliseconds(1));
  }
  for (int r : peers) {
    const auto quiet = std::chrono::duration_cast<std::chrono::milliseconds>(now - lastNote[r]);
    if (peerDone[r] || quiet <= heartbeatDeadline)
      continue;
    const std::string reason = "rank " + std::to_string(r) +
                               " is silent: no heartbeat note from its process for " +
                               std::to_string(quiet.count()) + " ms (deadline " +
                               std::to_string(heartbeatDeadline.count()) + " ms; noticed by rank " +
                               std::to_string(rank) + ")";
    if (onSilentPeer)
      onSilentPeer(reason);
    std::lock_guard<std::mutex> lock(mutex);
    if (phase != Phase::Running && phase != Phase::Finishing)
      return;
    const Bytes note(reason.begin(), reason.end());
    for (int other = 0; other < world; ++other)
      if (other != rank)
        queue.push_back({other, 0, true, note});
    abortReason = reason; // this rank's own waiting receives end too
    abortExitCode = 1;
    abortDeadline = now + std::chrono::milliseconds(1000);
    phase = Phase::Aborting;
    arrived.notify_all();
    commReady.notify_all();
    return;
  }
}

void MpiComm::State::run() {
  int provided = 0;
  int rc = MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
  if (rc == MPI_SUCCESS) {
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &world);
    MPI_Comm_dup(MPI_COMM_WORLD, &data);
    MPI_Comm_dup(MPI_COMM_WORLD, &control);
    lastNote.assign(static_cast<size_t>(world), std::chrono::steady_clock::now());
    peerDone.assign(static_cast<size_t>(world), false);
    nextNote = std::chrono::steady_clock::now();
  }
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (rc != MPI_SUCCESS) {
      startError = "mpi comm: MPI_Init_thread failed: " + mpiError(rc);
      phase = Phase::Done;
    } else {
      phase = Phase::Running;
    }
    commReady.notify_all();
  }
  if (rc != MPI_SUCCESS)
    return;

  MPI_Request barrier = MPI_REQUEST_NULL;
  bool barrierPosted = false;
  auto idle = std::chrono::microseconds(20);
  while (true) {
    const bool busy = poll();
    Phase p;
    {
      std::lock_guard<std::mutex> lock(mutex);
      p = phase;
    }
    if (heartbeatDeadline.count() > 0 && (p == Phase::Running || p == Phase::Finishing)) {
      heartbeat(p);
      std::lock_guard<std::mutex> lock(mutex);
      p = phase;
    }
    if (p == Phase::Aborting) {
      // The notes are queued before the phase changes, so they are in flight now.
      std::unique_lock<std::mutex> lock(mutex);
      const bool sent = inFlight.empty() && queue.empty();
      const bool late = std::chrono::steady_clock::now() >= abortDeadline;
      if (sent || late) {
        const int code = abortExitCode;
        lock.unlock();
        if (sent)
          std::this_thread::sleep_for(std::chrono::milliseconds(200)); // let peers report first
        MPI_Abort(MPI_COMM_WORLD, code);
        std::_Exit(code);
      }
    } else if (p == Phase::Finishing) {
      bool queued;
      {
        std::lock_guard<std::mutex> lock(mutex);
        queued = !queue.empty();
      }
      if (!barrierPosted && inFlight.empty() && !queued &&
          (heartbeatDeadline.count() == 0 || sentDone)) {
        MPI_Ibarrier(data, &barrier);
        barrierPosted = true;
      }
      if (barrierPosted) {
        int done = 0;
        MPI_Test(&barrier, &done, MPI_STATUS_IGNORE);
        if (done)
          break;
      } else if (std::chrono::steady_clock::now() >= finishDeadline) {
        std::lock_guard<std::mutex> lock(mutex);
        finishError = "rank " + std::to_string(rank) +
                      ": mpi comm: " + std::to_string(inFlight.size()) +
                      " sends did not complete before the deadline";
        phase = Phase::Aborting;
        abortDeadline = std::chrono::steady_clock::now();
        commReady.notify_all();
        continue;
      }
    }
    if (busy) {
      idle = std::chrono::microseconds(20);
    } else {
      std::this_thread::sleep_for(idle);
      idle = std::min(idle * 2, std::chrono::microseconds(1000));
    }
  }
  MPI_Comm_free(&control);
  MPI_Comm_free(&data);
  MPI_Finalize();
  std::lock_guard<std::mutex> lock(mutex);
  phase = Phase::Done;
  finished = true;
  commReady.notify_all();
  arrived.notify_all();
}

MpiComm::MpiComm() : state_(std::make_unique<State>()) {}

std::unique_ptr<MpiComm> MpiComm::start(std::chrono::milliseconds heartbeatDeadline,
                                        std::function<void(const std::string &)> onSilentPeer) {
  std::unique_ptr<MpiComm> comm(new MpiComm());
  State &s = *comm->state_;
  s.heartbeatDeadline = heartbeatDeadline;
  s.onSilentPeer = std::move(onSilentPeer);
  s.thread = std::thread([&s] { s.run(); });
  std::unique_lock<std::mutex> lock(s.mutex);
  s.commReady.wait(lock, [&] { return s.phase != Phase::Starting; });
  if (!s.startError.empty()) {
    const std::string error = s.startError;
    lock.unlock();
    s.thread.join();
    throw CommError(error);
  }
  comm->rank_ = s.rank;
  comm->worldSize_ = s.world;
  const int expected = rankFromEnvironment();
  if (expected >= 0 && expected != s.rank) {
    lock.unlock();
    comm->abortJob("rank " + std::to_string(s.rank) + ": the launcher's rank variable says " +
                   std::to_string(expected) + ", MPI says " + std::to_string(s.rank));
  }
  return comm;
}

MpiComm::~MpiComm() {
  bool running;
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    running = state_->phase == Phase::Running;
  }
  if (running) {
    try {
      finish();
    } catch (...) {
    }
  }
  if (state_->thread.joinable())
    state_->thread.join();
}

void MpiComm::send(int dst, int tag, Bytes message) {
  if (dst < 0 || dst >= worldSize_ || tag < 0)
    throw CommError("rank " + std::to_string(rank_) + ": send to rank " + std::to_string(dst) +
                    " (tag " + std::to_string(tag) + ") is outside the world of " +
                    std::to_string(worldSize_) + " ranks");
  std::lock_guard<std::mutex> lock(state_->mutex);
  if (state_->phase != Phase::Running)
    throw CommError("rank " + std::to_string(rank_) + ": send to rank " + std::to_string(dst) +
                    " after the comm ended");
  state_->queue.push_back({dst, tag, false, std::move(message)});
}

Bytes MpiComm::recv(int src, int tag, std::chrono::milliseconds timeout) {
  const std::string what = "rank " + std::to_string(rank_) + ": recv from rank " +
                           std::to_string(src) + " (tag " + std::to_string(tag) + ")";
  if (src < 0 || src >= worldSize_)
    throw CommError(what + ": no such rank in a world of " + std::to_string(worldSize_));
  State &s = *state_;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::unique_lock<std::mutex> lock(s.mutex);
  while (true) {
    if (!s.abortReason.empty())
      throw CommAborted(what + " aborted: " + s.abortReason);
    auto box = s.mailboxes.find({src, tag});
    if (box != s.mailboxes.end() && !box->second.empty()) {
      Bytes message = std::move(box->second.front());
      box->second.pop_front();
      return message;
    }
    if (s.phase != Phase::Running)
      throw CommError(what + ": the comm ended");
    if (s.arrived.wait_until(lock, deadline) == std::cv_status::timeout) {
      box = s.mailboxes.find({src, tag});
      if (box != s.mailboxes.end() && !box->second.empty())
        continue;
      if (!s.abortReason.empty())
        continue;
      throw CommTimeout(what + " timed out after " + std::to_string(timeout.count()) + " ms");
    }
  }
}

int MpiComm::recvAny(const std::vector<std::pair<int, int>> &sources, Bytes &out,
                     std::chrono::milliseconds timeout) {
  for (const auto &[src, tag] : sources)
    if (src < 0 || src >= worldSize_)
      throw CommError("rank " + std::to_string(rank_) + ": recv from rank " + std::to_string(src) +
                      " (tag " + std::to_string(tag) + "): no such rank in a world of " +
                      std::to_string(worldSize_));
  State &s = *state_;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::unique_lock<std::mutex> lock(s.mutex);
  while (true) {
    if (!s.abortReason.empty())
      throw CommAborted("rank " + std::to_string(rank_) + ": recv from rank " +
                        std::to_string(sources.front().first) + " (tag " +
                        std::to_string(sources.front().second) + ") aborted: " + s.abortReason);
    for (size_t i = 0; i < sources.size(); ++i) {
      auto box = s.mailboxes.find(sources[i]);
      if (box != s.mailboxes.end() && !box->second.empty()) {
        out = std::move(box->second.front());
        box->second.pop_front();
        return static_cast<int>(i);
      }
    }
    if (s.phase != Phase::Running)
      throw CommError("rank " + std::to_string(rank_) + ": recv: the comm ended");
    if (s.woken) {
      s.woken = false;
      return -1;
    }
    if (s.arrived.wait_until(lock, deadline) == std::cv_status::timeout) {
      bool any = !s.abortReason.empty();
      for (const auto &key : sources) {
        auto box = s.mailboxes.find(key);
        any = any || (box != s.mailboxes.end() && !box->second.empty());
      }
      if (!any)
        return -1;
    }
  }
}

void MpiComm::wake() {
  std::lock_guard<std::mutex> lock(state_->mutex);
  state_->woken = true;
  state_->arrived.notify_all();
}

void MpiComm::finish(std::chrono::milliseconds timeout) {
  State &s = *state_;
  std::unique_lock<std::mutex> lock(s.mutex);
  if (s.phase != Phase::Running)
    return;
  s.finishDeadline = std::chrono::steady_clock::now() + timeout;
  s.phase = Phase::Finishing;
  s.commReady.wait(lock, [&] { return s.finished || !s.finishError.empty(); });
  if (!s.finishError.empty()) {
    const std::string error = s.finishError;
    lock.unlock();
    // The comm thread aborts the job; wait for it.
    s.thread.join();
    throw CommError(error);
  }
  lock.unlock();
  s.thread.join();
}

void MpiComm::abortJob(const std::string &reason, int exitCode, std::chrono::milliseconds grace) {
  State &s = *state_;
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    if (s.phase == Phase::Running || s.phase == Phase::Finishing) {
      const Bytes note(reason.begin(), reason.end());
      for (int r = 0; r < s.world; ++r)
        if (r != s.rank)
          s.queue.push_back({r, 0, true, note});
      s.abortExitCode = exitCode;
      s.abortDeadline = std::chrono::steady_clock::now() + grace;
      s.phase = Phase::Aborting;
    }
  }
  if (s.thread.joinable())
    s.thread.join(); // MPI_Abort ends the process from the comm thread
  std::_Exit(exitCode);
}

std::string MpiComm::abortReason() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->abortReason;
}

} // namespace disagmoe
