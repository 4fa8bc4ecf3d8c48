// All-gather of one blob per rank through rank 0 at MASTER_ADDR:MASTER_PORT (TcpRendezvous.h).
#include "runtime/comm/tcp/TcpRendezvous.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <sys/socket.h>

namespace disagmoe::tcp {
namespace {

constexpr std::uint64_t kMagic = 0x31564452'4D44ull;    // "DMDRV1": a joining rank's hello
constexpr std::uint64_t kGreeting = 0x30565247'4D44ull; // "DMGRV0": rank 0's answer on accept
constexpr std::uint64_t kOk = 0, kRefused = 1, kFailed = 2;
constexpr std::uint64_t kMaxBlob = 1 << 20;
// How long a joining rank waits for rank 0's greeting once connected, and rank 0 for a hello:
// both are written at once by the other side, so only a stranger on the port takes longer.
constexpr auto kGreetingWait = std::chrono::seconds(10);

Clock::time_point soonest(Clock::time_point deadline, Clock::duration wait) {
  return std::min(deadline, Clock::now() + wait);
}

// What a stranger sent, for the message: printable bytes as text, the rest as \xNN.
std::string shown(const std::uint8_t *p, std::size_t n) {
  std::string out;
  for (std::size_t i = 0; i < n; ++i) {
    if (std::isprint(p[i]) && p[i] != '"' && p[i] != '\\') {
      out += static_cast<char>(p[i]);
    } else {
      static const char *hex = "0123456789abcdef";
      out += std::string("\\x") + hex[p[i] >> 4] + hex[p[i] & 15];
    }
  }
  return out;
}

// The joining side's check that rank 0 answers at all, and in this protocol and version: anything
// else on MASTER_ADDR:MASTER_PORT (another server, another build) is refused in one line instead
// of being waited on until the deadline.
void expectGreeting(const Socket &s, Clock::time_point deadline, const std::string &where) {
  std::uint8_t got[16];
  std::size_t n = 0;
  const auto by = soonest(deadline, kGreetingWait);
  std::string ended;
  try {
    while (n < sizeof got) {
      readAll(s, got + n, 1, by, where);
      ++n;
    }
  } catch (const CommError &e) {
    ended = e.what();
  }
  const std::string stranger = where + ": the process listening there is not a disagmoe-run rank 0";
  if (n < 8 || getU64(got) != kGreeting) {
    if (n == 0 && ended.find("closed") != std::string::npos)
      throw CommError(stranger + " (it closed the connection without a word)");
    if (n == 0)
      throw CommError(
          stranger + " (it sent nothing within " +
          std::to_string(std::chrono::duration_cast<std::chrono::seconds>(kGreetingWait).count()) +
          " s; another server on that port?)");
    throw CommError(stranger + " (it sent \"" + shown(got, n) +
                    "\"; another server on that port?)");
  }
  if (n < 16)
    throw CommError(where + ": rank 0's greeting ended after " + std::to_string(n) + " bytes");
  const std::uint64_t version = getU64(got + 8);
  if (version != kRendezvousVersion)
    throw CommError(where + ": rank 0 speaks rendezvous version " + std::to_string(version) +
                    ", this rank " + std::to_string(kRendezvousVersion) +
                    " (another disagmoe-run build: run the same build on every rank)");
}

void writeBlob(const Socket &s, const Bytes &b, Clock::time_point deadline,
               const std::string &what) {
  writeU64(s, b.size(), deadline, what);
  writeAll(s, b.data(), b.size(), deadline, what);
}

Bytes readBlob(const Socket &s, Clock::time_point deadline, const std::string &what) {
  const std::uint64_t n = readU64(s, deadline, what);
  if (n > kMaxBlob)
    throw CommError(what + ": a rendezvous message of " + std::to_string(n) +
                    " bytes (not a disagmoe-run rank?)");
  Bytes b(static_cast<size_t>(n));
  readAll(s, b.data(), b.size(), deadline, what);
  return b;
}

std::string text(const Bytes &b) { return std::string(b.begin(), b.end()); }
Bytes bytes(const std::string &s) { return Bytes(s.begin(), s.end()); }

// Rank 0's side: gathers world - 1 ranks, then answers each. Once the rendezvous is refused (a
// rank failed, two ranks disagree, or `failure`: rank 0 itself failed before it), the ranks
// waiting are told at once and so is every rank that arrives later, until all came or `deadline`.
std::vector<Member> gather(const StoreLaunch &l, const Bytes &mine, Clock::time_point deadline,
                           const std::string &failure = "") {
  const std::string where = "rendezvous at " + l.endpoint();
  std::vector<Member> all(static_cast<size_t>(l.worldSize));
  all[0] = {l.masterAddr, mine};
  if (l.worldSize == 1 && failure.empty())
    return all;
  const Socket listener = listenOn(l.rendezvousPort(), where + " (rank 0)");
  std::vector<Socket> peers(static_cast<size_t>(l.worldSize)); // waiting for the answer
  std::vector<bool> seen(static_cast<size_t>(l.worldSize), false);
  seen[0] = true;
  int arrived = 1;
  std::string refusal = failure.empty() ? "" : "rank 0 failed: " + failure;
  const auto refuse = [&](const Socket &s) {
    const auto by = std::max(deadline, Clock::now()) + std::chrono::seconds(2);
    try {
      writeU64(s, kRefused, by, where);
      writeBlob(s, bytes(refusal), by, where);
    } catch (const CommError &) {
      // That rank fails on its own (its read of the answer ends).
    }
  };
  const auto start = Clock::now();
  while (arrived < l.worldSize) {
    Socket s = acceptBefore(listener, deadline);
    if (!s.valid())
      break;
    try {
      const std::string what = where + ": a joining rank";
      const auto helloBy = soonest(deadline, kGreetingWait);
      writeU64(s, kGreeting, helloBy, what);
      writeU64(s, kRendezvousVersion, helloBy, what);
      if (readU64(s, helloBy, what) != kMagic)
        continue; // not one of ours (a port scan): ignore it
      if (readU64(s, helloBy, what) != kRendezvousVersion)
        continue; // that rank refuses our greeting and names both versions itself
      const std::uint64_t rank = readU64(s, helloBy, what);
      const std::uint64_t world = readU64(s, helloBy, what);
      const std::uint64_t status = readU64(s, helloBy, what);
      Bytes blob = readBlob(s, helloBy, what);
      const bool known = rank > 0 && rank < static_cast<std::uint64_t>(l.worldSize);
      const bool twice = known && seen[rank];
      if (known && !twice) {
        seen[rank] = true;
        ++arrived;
      }
      if (refusal.empty()) {
        if (status == kFailed)
          refusal = "rank " + std::to_string(rank) + " failed: " + text(blob);
        else if (world != static_cast<std::uint64_t>(l.worldSize))
          refusal = "rank " + std::to_string(rank) + " has " + l.worldVar + "=" +
                    std::to_string(world) + ", rank 0 has " + l.worldVar + "=" +
                    std::to_string(l.worldSize);
        else if (!known || twice)
          refusal = "two processes have " + l.rankVar + "=" + std::to_string(rank);
        if (!refusal.empty()) // the ranks already waiting learn it now
          for (Socket &p : peers)
            if (p.valid()) {
              refuse(p);
              p = Socket();
            }
      }
      if (!refusal.empty()) {
        if (status != kFailed)
          refuse(s);
        continue;
      }
      all[rank] = {peerHost(s), std::move(blob)};
      peers[rank] = std::move(s);
    } catch (const CommError &) {
      // A peer that died mid-hello: it will not be counted, and the deadline names it missing.
    }
  }
  if (refusal.empty() && arrived < l.worldSize) {
    std::string missing;
    int shown = 0;
    for (int r = 1; r < l.worldSize && shown < 8; ++r)
      if (!seen[r]) {
        missing += (missing.empty() ? "" : ", ") + std::to_string(r);
        ++shown;
      }
    if (l.worldSize - arrived > shown)
      missing += ", ...";
    const double took = std::chrono::duration<double>(Clock::now() - start).count();
    refusal = std::to_string(arrived) + " of " + std::to_string(l.worldSize) +
              " ranks arrived within " + std::to_string(static_cast<long>(took + 0.5)) +
              " s (missing rank" + (l.worldSize - arrived > 1 ? "s " : " ") + missing + ")";
  }
  const auto replyBy = std::max(deadline, Clock::now()) + std::chrono::seconds(2);
  for (const Socket &s : peers) {
    if (!s.valid())
      continue;
    if (!refusal.empty()) {
      refuse(s);
      continue;
    }
    try {
      writeU64(s, kOk, replyBy, where);
      for (const Member &m : all) {
        writeBlob(s, bytes(m.host), replyBy, where);
        writeBlob(s, m.blob, replyBy, where);
      }
    } catch (const CommError &) {
      // That rank fails on its own (its read of the answer ends).
    }
  }
  if (!refusal.empty())
    throw CommError(where + ": " + refusal);
  return all;
}

Socket hello(const StoreLaunch &l, std::uint64_t status, const Bytes &blob,
             Clock::time_point deadline, const std::string &where) {
  Socket s = connectTo(l.masterAddr, l.rendezvousPort(), deadline, where);
  // The hello first: a stranger that waits for a request (an HTTP server) answers it at once.
  writeU64(s, kMagic, deadline, where);
  writeU64(s, kRendezvousVersion, deadline, where);
  writeU64(s, static_cast<std::uint64_t>(l.rank), deadline, where);
  writeU64(s, static_cast<std::uint64_t>(l.worldSize), deadline, where);
  writeU64(s, status, deadline, where);
  writeBlob(s, blob, deadline, where);
  expectGreeting(s, deadline, where);
  return s;
}

std::vector<Member> join(const StoreLaunch &l, const Bytes &mine, Clock::time_point deadline) {
  const std::string where = "rendezvous with rank 0 at " + l.endpoint();
  const Socket s = hello(l, kOk, mine, deadline, where);
  // Rank 0 answers when the last rank arrived, or at its deadline (plus its grace for answering).
  const auto answerBy = deadline + std::chrono::seconds(5);
  const std::uint64_t status = readU64(s, answerBy, where);
  if (status != kOk)
    throw CommError("rendezvous at " + l.endpoint() + ": " + text(readBlob(s, answerBy, where)));
  std::vector<Member> all(static_cast<size_t>(l.worldSize));
  for (Member &m : all) {
    m.host = text(readBlob(s, answerBy, where));
    m.blob = readBlob(s, answerBy, where);
  }
  return all;
}

} // namespace

std::vector<Member> rendezvous(const StoreLaunch &launch, const Bytes &mine,
                               Clock::time_point deadline) {
  return launch.rank == 0 ? gather(launch, mine, deadline) : join(launch, mine, deadline);
}

void reportFailure(const StoreLaunch &launch, const std::string &reason,
                   Clock::time_point deadline) {
  try {
    if (launch.rank == 0) {
      gather(launch, {}, deadline, reason);
      return;
    }
    const std::string where = "rendezvous with rank 0 at " + launch.endpoint();
    const Socket s = hello(launch, kFailed, bytes(reason), deadline, where);
    // Rank 0 reads the hello before it answers anyone: wait for its answer (or for it to close)
    // so that the note is read before this process ends.
    std::uint8_t byte;
    ::recv(s.fd(), &byte, 1, 0);
  } catch (const CommError &) {
    // Nobody to tell (rank 0 is gone, or failed itself): the peers' own deadlines end them.
  }
}

} // namespace disagmoe::tcp
