// The default exchange and all-reduce of Comm (Comm.h): plain send/recv loops, in the fixed order
// that makes the local and mpi backends bit-identical.
#include "runtime/comm/Comm.h"

#include <cstring>
#include <string>
#include <thread>

namespace disagmoe {

std::vector<Bytes> Comm::exchange(std::vector<OutgoingMessage> sends,
                                  const std::vector<IncomingMessage> &recvs,
                                  std::chrono::milliseconds timeout) {
  for (OutgoingMessage &m : sends)
    send(m.dst, m.tag, std::move(m.bytes));
  std::vector<Bytes> received;
  received.reserve(recvs.size());
  for (const IncomingMessage &m : recvs)
    received.push_back(recv(m.src, m.tag, timeout));
  return received;
}

void Comm::allReduceSum(const std::vector<int> &ranks, int tag, float *data, std::size_t n,
                        std::chrono::milliseconds timeout) {
  const std::string what =
      "rank " + std::to_string(rank()) + ": all-reduce (tag " + std::to_string(tag) + ")";
  bool member = false;
  for (size_t i = 0; i < ranks.size(); ++i) {
    if (ranks[i] < 0 || ranks[i] >= worldSize() || (i > 0 && ranks[i] <= ranks[i - 1]))
      throw CommError(what + ": ranks must be strictly ascending ranks of the world of " +
                      std::to_string(worldSize()));
    member = member || ranks[i] == rank();
  }
  if (!member)
    throw CommError(what + ": this rank is not one of the reducing ranks");
  const size_t bytes = n * sizeof(float);
  const auto check = [&](const Bytes &b, int peer) {
    if (b.size() != bytes)
      throw CommError(what + ": message from rank " + std::to_string(peer) + " has " +
                      std::to_string(b.size()) + " bytes, expected " + std::to_string(bytes));
  };
  const int leader = ranks.front();
  if (rank() == leader) {
    std::vector<float> part(n);
    for (size_t r = 1; r < ranks.size(); ++r) {
      const Bytes in = recv(ranks[r], tag, timeout);
      check(in, ranks[r]);
      if (bytes)
        std::memcpy(part.data(), in.data(), bytes);
      for (size_t j = 0; j < n; ++j)
        data[j] += part[j];
    }
    if (ranks.size() > 1) {
      Bytes sum(bytes);
      if (bytes)
        std::memcpy(sum.data(), data, bytes);
      for (size_t r = 1; r < ranks.size(); ++r)
        send(ranks[r], tag, sum);
    }
  } else {
    Bytes mine(bytes);
    if (bytes)
      std::memcpy(mine.data(), data, bytes);
    send(leader, tag, std::move(mine));
    const Bytes in = recv(leader, tag, timeout);
    check(in, leader);
    if (bytes)
      std::memcpy(data, in.data(), bytes);
  }
}

int Comm::recvAny(const std::vector<std::pair<int, int>> &sources, Bytes &out,
                  std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    for (size_t i = 0; i < sources.size(); ++i) {
      try {
        out = recv(sources[i].first, sources[i].second, std::chrono::milliseconds(0));
        return static_cast<int>(i);
      } catch (const CommTimeout &) {
      }
    }
    if (std::chrono::steady_clock::now() >= deadline)
      return -1;
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
}

} // namespace disagmoe
