// The TCP mesh comm of torchrun-style launches: one comm thread polls every peer socket
// (TcpComm.h).
#include "runtime/comm/tcp/TcpComm.h"

#include "runtime/comm/tcp/Sockets.h"
#include "runtime/comm/tcp/TcpRendezvous.h"

#include <array>
#include <cerrno>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <fcntl.h>
#include <map>
#include <mutex>
#include <poll.h>
#include <sys/socket.h>
#include <thread>
#include <unistd.h>

namespace disagmoe {
namespace {

using tcp::Clock;

enum class Phase { Running, Finishing, Aborting, Done };

constexpr std::uint32_t kFrameMagic = 0x43544D44; // "DMTC"
constexpr std::uint64_t kHelloMagic = 0x4F4C4C45'48544D44ull;
constexpr int kAbortKind = -1, kDoneKind = -2; // control frames; data tags are >= 0
constexpr std::size_t kHeaderBytes = 16;

using Header = std::array<std::uint8_t, kHeaderBytes>;

Header encode(int tag, std::uint64_t size) {
  Header h{};
  const auto t = static_cast<std::uint32_t>(tag);
  for (int i = 0; i < 4; ++i) {
    h[i] = static_cast<std::uint8_t>(kFrameMagic >> (8 * i));
    h[4 + i] = static_cast<std::uint8_t>(t >> (8 * i));
  }
  for (int i = 0; i < 8; ++i)
    h[8 + i] = static_cast<std::uint8_t>(size >> (8 * i));
  return h;
}

struct Frame {
  Header header;
  Bytes payload;
  std::size_t sent = 0; // of header then payload
};

// One connection's state; the comm thread's only.
struct Peer {
  tcp::Socket socket;
  std::deque<Frame> out;
  Header header{};
  std::size_t headerGot = 0;
  bool inPayload = false;
  int tag = 0;
  Bytes payload;
  std::size_t payloadGot = 0;
  bool done = false;   // its done note arrived
  bool closed = false; // the connection ended
};

} // namespace

struct TcpComm::State {
  std::mutex mutex;
  std::condition_variable arrived;         // workers wait for messages / phase changes
  std::condition_variable commReady;       // finish() waits for the comm thread
  std::deque<std::pair<int, Frame>> queue; // (dst, frame) from the workers
  std::map<std::pair<int, int>, std::deque<Bytes>> mailboxes; // (src, tag)
  Phase phase = Phase::Running;
  std::string abortReason, finishError;
  bool finished = false, woken = false;
  int rank = -1, world = 0, exitCode = 1;
  Clock::time_point finishDeadline, abortDeadline;
  std::thread thread;
  int wakeRead = -1, wakeWrite = -1;
  std::vector<Peer> peers; // by rank; peers[rank] unused

  void poke() {
    const char c = 0;
    [[maybe_unused]] const ssize_t n = ::write(wakeWrite, &c, 1);
  }
  void run();
  void lose(int r, const std::string &why); // a connection that ended or failed
  void writeSome(int r);
  void readSome(int r);
  void deliver(int r, Peer &p);
  bool flushed() const;
};

void TcpComm::State::lose(int r, const std::string &why) {
  Peer &p = peers[r];
  if (p.closed)
    return;
  p.closed = true;
  p.out.clear();
  p.socket = tcp::Socket();
  if (p.done)
    return; // it finished: an orderly close
  std::lock_guard<std::mutex> lock(mutex);
  if (abortReason.empty())
    abortReason = "rank " + std::to_string(r) + "'s connection " + why +
                  " before it finished (its process ended)";
  arrived.notify_all();
  commReady.notify_all();
}

void TcpComm::State::writeSome(int r) {
  Peer &p = peers[r];
  while (!p.out.empty() && !p.closed) {
    Frame &f = p.out.front();
    const std::size_t total = kHeaderBytes + f.payload.size();
    const std::uint8_t *data = f.sent < kHeaderBytes ? f.header.data() + f.sent
                                                     : f.payload.data() + (f.sent - kHeaderBytes);
    const std::size_t n = f.sent < kHeaderBytes ? kHeaderBytes - f.sent : total - f.sent;
    const ssize_t w = ::send(p.socket.fd(), data, n, MSG_NOSIGNAL);
    if (w < 0 && (errno == EAGAIN || errno == EINTR))
      return;
    if (w <= 0) {
      lose(r, std::string("failed (") + std::strerror(errno) + ")");
      return;
    }
    f.sent += static_cast<std::size_t>(w);
    if (f.sent == total)
      p.out.pop_front();
  }
}

void TcpComm::State::deliver(int r, Peer &p) {
  std::lock_guard<std::mutex> lock(mutex);
  if (p.tag == kDoneKind)
    p.done = true;
  else if (p.tag == kAbortKind) {
    if (abortReason.empty())
      abortReason = std::string(p.payload.begin(), p.payload.end());
  } else {
    mailboxes[{r, p.tag}].push_back(std::move(p.payload));
  }
  p.payload = Bytes();
  arrived.notify_all();
  commReady.notify_all();
}

void TcpComm::State::readSome(int r) {
  Peer &p = peers[r];
  while (!p.closed) {
    std::uint8_t *into;
    std::size_t want;
    if (!p.inPayload) {
      into = p.header.data() + p.headerGot;
      want = kHeaderBytes - p.headerGot;
    } else {
      into = p.payload.data() + p.payloadGot;
      want = p.payload.size() - p.payloadGot;
    }
    ssize_t got = 0;
    if (want > 0) {
      got = ::recv(p.socket.fd(), into, want, 0);
      if (got < 0 && (errno == EAGAIN || errno == EINTR))
        return;
      if (got == 0) {
        lose(r, "closed");
        return;
      }
      if (got < 0) {
        lose(r, std::string("failed (") + std::strerror(errno) + ")");
        return;
      }
    }
    if (!p.inPayload) {
      p.headerGot += static_cast<std::size_t>(got);
      if (p.headerGot < kHeaderBytes)
        continue;
      std::uint32_t magic = 0, tag = 0;
      for (int i = 3; i >= 0; --i) {
        magic = (magic << 8) | p.header[i];
        tag = (tag << 8) | p.header[4 + i];
      }
      if (magic != kFrameMagic) {
        lose(r, "sent a malformed frame and was dropped");
        return;
      }
      p.tag = static_cast<int>(tag);
      p.payload.assign(static_cast<std::size_t>(tcp::getU64(p.header.data() + 8)), 0);
      p.payloadGot = 0;
      p.headerGot = 0;
      p.inPayload = true;
    } else {
      p.payloadGot += static_cast<std::size_t>(got);
    }
    if (p.inPayload && p.payloadGot == p.payload.size()) {
      p.inPayload = false;
      deliver(r, p);
    }
  }
}

bool TcpComm::State::flushed() const {
  for (const Peer &p : peers)
    if (!p.out.empty())
      return false;
  return true;
}

void TcpComm::State::run() {
  bool sentDone = false;
  while (true) {
    std::deque<std::pair<int, Frame>> batch;
    Phase p;
    {
      std::lock_guard<std::mutex> lock(mutex);
      batch.swap(queue);
      p = phase;
    }
    for (auto &[dst, frame] : batch)
      if (!peers[dst].closed)
        peers[dst].out.push_back(std::move(frame));
    if (p == Phase::Finishing && !sentDone) {
      for (int r = 0; r < world; ++r)
        if (r != rank && !peers[r].closed)
          peers[r].out.push_back({encode(kDoneKind, 0), Bytes()});
      sentDone = true;
    }
    std::vector<pollfd> fds{{wakeRead, POLLIN, 0}};
    std::vector<int> who{-1};
    for (int r = 0; r < world; ++r) {
      if (r == rank || peers[r].closed)
        continue;
      fds.push_back({peers[r].socket.fd(),
                     static_cast<short>(POLLIN | (peers[r].out.empty() ? 0 : POLLOUT)), 0});
      who.push_back(r);
    }
    ::poll(fds.data(), fds.size(), 20);
    if (fds[0].revents & POLLIN) {
      char drain[256];
      while (::read(wakeRead, drain, sizeof drain) > 0) {
      }
    }
    for (size_t i = 1; i < fds.size(); ++i) {
      const int r = who[i];
      if (fds[i].revents & (POLLIN | POLLHUP | POLLERR))
        readSome(r);
      if (!peers[r].closed && !peers[r].out.empty())
        writeSome(r);
    }
    const auto now = Clock::now();
    std::unique_lock<std::mutex> lock(mutex);
    if (phase == Phase::Aborting) {
      const bool sent = flushed();
      if (sent || now >= abortDeadline) {
        const int code = exitCode;
        lock.unlock();
        if (sent)
          std::this_thread::sleep_for(std::chrono::milliseconds(200)); // let peers report first
        std::_Exit(code);
      }
    } else if (phase == Phase::Finishing && sentDone) {
      bool allDone = flushed();
      for (int r = 0; r < world; ++r)
        allDone = allDone && (r == rank || peers[r].done);
      if (allDone)
        break;
      if (!abortReason.empty()) {
        finishError = "rank " + std::to_string(rank) + ": tcp comm: " + abortReason;
        break;
      }
      if (now >= finishDeadline) {
        std::string waiting;
        for (int r = 0; r < world; ++r)
          if (r != rank && !peers[r].done)
            waiting += (waiting.empty() ? "" : ", ") + std::to_string(r);
        finishError = "rank " + std::to_string(rank) +
                      ": tcp comm: the end of the run timed out (no done note from rank " +
                      (waiting.empty() ? std::string("-, sends pending") : waiting) + ")";
        break;
      }
    }
  }
  for (Peer &peer : peers)
    peer.socket = tcp::Socket();
  std::lock_guard<std::mutex> lock(mutex);
  phase = Phase::Done;
  finished = true;
  commReady.notify_all();
  arrived.notify_all();
}

TcpComm::TcpComm() : state_(std::make_unique<State>()) {}

std::unique_ptr<TcpComm> TcpComm::start(const StoreLaunch &launch,
                                        std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  const int me = launch.rank, world = launch.worldSize;
  const std::string self = "rank " + std::to_string(me);
  const tcp::Socket listener = tcp::listenOn(0, self + ": tcp comm");
  Bytes port;
  tcp::putU64(port, static_cast<std::uint64_t>(tcp::localPort(listener)));
  const std::vector<tcp::Member> members = tcp::rendezvous(launch, port, deadline);

  std::unique_ptr<TcpComm> comm(new TcpComm());
  State &s = *comm->state_;
  s.rank = me;
  s.world = world;
  s.peers.resize(static_cast<size_t>(world));
  // Lower ranks listen already (their listener precedes the rendezvous), so connecting to them
  // first and accepting the higher ranks after never waits in a cycle.
  for (int r = 0; r < me; ++r) {
    if (members[r].blob.size() != 8)
      throw CommError(self + ": rank " + std::to_string(r) + " sent a malformed rendezvous blob");
    const int peerPort = static_cast<int>(tcp::getU64(members[r].blob.data()));
    const std::string what = self + ": connecting to rank " + std::to_string(r) + " at " +
                             members[r].host + ":" + std::to_string(peerPort);
    tcp::Socket c = tcp::connectTo(members[r].host, peerPort, deadline, what);
    tcp::writeU64(c, kHelloMagic, deadline, what);
    tcp::writeU64(c, static_cast<std::uint64_t>(me), deadline, what);
    s.peers[r].socket = std::move(c);
  }
  for (int joined = 0; joined < world - 1 - me; ++joined) {
    tcp::Socket c = tcp::acceptBefore(listener, deadline);
    if (!c.valid()) {
      std::string missing;
      for (int r = me + 1; r < world; ++r)
        if (!s.peers[r].socket.valid())
          missing += (missing.empty() ? "" : ", ") + std::to_string(r);
      throw CommError(self + ": tcp comm: rank " + missing + " did not connect within " +
                      std::to_string(timeout.count() / 1000) + " s");
    }
    const std::string what = self + ": a connecting rank";
    const std::uint64_t magic = tcp::readU64(c, deadline, what);
    const std::uint64_t from = tcp::readU64(c, deadline, what);
    if (magic != kHelloMagic || from <= static_cast<std::uint64_t>(me) ||
        from >= static_cast<std::uint64_t>(world) || s.peers[from].socket.valid()) {
      --joined; // not a rank of this job: ignore it
      continue;
    }
    s.peers[from].socket = std::move(c);
  }
  for (int r = 0; r < world; ++r)
    if (r != me)
      tcp::setStreaming(s.peers[r].socket);
  int pipeFds[2];
  if (::pipe2(pipeFds, O_NONBLOCK | O_CLOEXEC) != 0)
    throw CommError(self + ": tcp comm: pipe: " + std::strerror(errno));
  s.wakeRead = pipeFds[0];
  s.wakeWrite = pipeFds[1];
  comm->rank_ = me;
  comm->worldSize_ = world;
  s.thread = std::thread([&s] { s.run(); });
  return comm;
}

TcpComm::~TcpComm() {
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
  ::close(state_->wakeRead);
  ::close(state_->wakeWrite);
}

void TcpComm::send(int dst, int tag, Bytes message) {
  if (dst < 0 || dst >= worldSize_ || tag < 0)
    throw CommError("rank " + std::to_string(rank_) + ": send to rank " + std::to_string(dst) +
                    " (tag " + std::to_string(tag) + ") is outside the world of " +
                    std::to_string(worldSize_) + " ranks");
  State &s = *state_;
  std::lock_guard<std::mutex> lock(s.mutex);
  if (s.phase != Phase::Running)
    throw CommError("rank " + std::to_string(rank_) + ": send to rank " + std::to_string(dst) +
                    " after the comm ended");
  if (dst == rank_) {
    s.mailboxes[{dst, tag}].push_back(std::move(message));
    s.arrived.notify_all();
    return;
  }
  const Header h = encode(tag, message.size());
  s.queue.push_back({dst, Frame{h, std::move(message), 0}});
  s.poke();
}

Bytes TcpComm::recv(int src, int tag, std::chrono::milliseconds timeout) {
  const std::string what = "rank " + std::to_string(rank_) + ": recv from rank " +
                           std::to_string(src) + " (tag " + std::to_string(tag) + ")";
  if (src < 0 || src >= worldSize_)
    throw CommError(what + ": no such rank in a world of " + std::to_string(worldSize_));
  State &s = *state_;
  const auto deadline = Clock::now() + timeout;
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
      if ((box != s.mailboxes.end() && !box->second.empty()) || !s.abortReason.empty())
        continue;
      throw CommTimeout(what + " timed out after " + std::to_string(timeout.count()) + " ms");
    }
  }
}

int TcpComm::recvAny(const std::vector<std::pair<int, int>> &sources, Bytes &out,
                     std::chrono::milliseconds timeout) {
  for (const auto &[src, tag] : sources)
    if (src < 0 || src >= worldSize_)
      throw CommError("rank " + std::to_string(rank_) + ": recv from rank " + std::to_string(src) +
                      " (tag " + std::to_string(tag) + "): no such rank in a world of " +
                      std::to_string(worldSize_));
  State &s = *state_;
  const auto deadline = Clock::now() + timeout;
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

std::string TcpComm::abortNote() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->abortReason;
}

void TcpComm::wake() {
  std::lock_guard<std::mutex> lock(state_->mutex);
  state_->woken = true;
  state_->arrived.notify_all();
}

void TcpComm::finish(std::chrono::milliseconds timeout) {
  State &s = *state_;
  std::unique_lock<std::mutex> lock(s.mutex);
  if (s.phase != Phase::Running)
    return;
  s.finishDeadline = Clock::now() + timeout;
  s.phase = Phase::Finishing;
  s.poke();
  s.commReady.wait(lock, [&] { return s.finished; });
  const std::string error = s.finishError;
  lock.unlock();
  s.thread.join();
  if (!error.empty())
    throw CommError(error);
}

void TcpComm::abortJob(const std::string &reason, int exitCode, std::chrono::milliseconds grace) {
  State &s = *state_;
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    if (s.phase == Phase::Running || s.phase == Phase::Finishing) {
      const Bytes note(reason.begin(), reason.end());
      for (int r = 0; r < s.world; ++r)
        if (r != s.rank)
          s.queue.push_back({r, Frame{encode(kAbortKind, note.size()), note, 0}});
      s.exitCode = exitCode;
      s.abortDeadline = Clock::now() + grace;
      s.phase = Phase::Aborting;
      s.poke();
    }
  }
  if (s.thread.joinable())
    s.thread.join(); // the comm thread ends the process once the notes left
  std::_Exit(exitCode);
}

} // namespace disagmoe
