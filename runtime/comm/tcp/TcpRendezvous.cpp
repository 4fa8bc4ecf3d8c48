// All-gather of one blob per rank through rank 0 at MASTER_ADDR:MASTER_PORT (TcpRendezvous.h).
#include "runtime/comm/tcp/TcpRendezvous.h"

namespace disagmoe::tcp {
namespace {

constexpr std::uint64_t kMagic = 0x31564452'4D44ull; // "DMDRV1"
constexpr std::uint64_t kOk = 0, kRefused = 1;
constexpr std::uint64_t kMaxBlob = 1 << 20;

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

// Rank 0's side: gathers world - 1 ranks, then answers each.
std::vector<Member> gather(const StoreLaunch &l, const Bytes &mine, Clock::time_point deadline) {
  const std::string where = "rendezvous at " + l.endpoint();
  std::vector<Member> all(static_cast<size_t>(l.worldSize));
  all[0] = {l.masterAddr, mine};
  if (l.worldSize == 1)
    return all;
  const Socket listener = listenOn(l.rendezvousPort(), where + " (rank 0)");
  std::vector<Socket> peers(static_cast<size_t>(l.worldSize));
  int arrived = 1;
  std::string refusal;
  const auto start = Clock::now();
  while (arrived < l.worldSize && refusal.empty()) {
    Socket s = acceptBefore(listener, deadline);
    if (!s.valid())
      break;
    try {
      const std::string what = where + ": a joining rank";
      if (readU64(s, deadline, what) != kMagic)
        continue; // not one of ours (a port scan): ignore it
      const std::uint64_t rank = readU64(s, deadline, what);
      const std::uint64_t world = readU64(s, deadline, what);
      Bytes blob = readBlob(s, deadline, what);
      if (world != static_cast<std::uint64_t>(l.worldSize))
        refusal = "rank " + std::to_string(rank) + " has " + l.worldVar + "=" +
                  std::to_string(world) + ", rank 0 has " + l.worldVar + "=" +
                  std::to_string(l.worldSize);
      else if (rank == 0 || rank >= world || peers[rank].valid())
        refusal = "two processes have " + l.rankVar + "=" + std::to_string(rank);
      if (!refusal.empty()) {
        peers.push_back(std::move(s)); // told below, with the others
        break;
      }
      all[rank] = {peerHost(s), std::move(blob)};
      peers[rank] = std::move(s);
      ++arrived;
    } catch (const CommError &) {
      // A peer that died mid-hello: it will not be counted, and the deadline names it missing.
    }
  }
  if (refusal.empty() && arrived < l.worldSize) {
    std::string missing;
    int shown = 0;
    for (int r = 1; r < l.worldSize && shown < 8; ++r)
      if (!peers[r].valid()) {
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
    try {
      if (!refusal.empty()) {
        writeU64(s, kRefused, replyBy, where);
        writeBlob(s, bytes(refusal), replyBy, where);
        continue;
      }
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

std::vector<Member> join(const StoreLaunch &l, const Bytes &mine, Clock::time_point deadline) {
  const std::string where = "rendezvous with rank 0 at " + l.endpoint();
  const Socket s = connectTo(l.masterAddr, l.rendezvousPort(), deadline, where);
  writeU64(s, kMagic, deadline, where);
  writeU64(s, static_cast<std::uint64_t>(l.rank), deadline, where);
  writeU64(s, static_cast<std::uint64_t>(l.worldSize), deadline, where);
  writeBlob(s, mine, deadline, where);
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

} // namespace disagmoe::tcp
