// The nccl backend's control plane under a torchrun-style launch (TcpControlPlane.h), between
// ranks run as threads: rank 0's serialised ncclUniqueId reaches every rank intact (the bytes
// NCCL would get; NCCL itself is not called), each pair's ids go from the lower rank to the
// higher in the global pair order, headers keep their per-pair send order, and the barrier ends
// the run. A rank 0 that never sends the id is named with the deadline, not waited for forever.
#include "runtime/comm/nccl/NcclBootstrap.h"
#include "runtime/comm/nccl/TcpControlPlane.h"
#include "runtime/comm/tcp/Sockets.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <thread>
#include <vector>

namespace disagmoe {
namespace {

using Clock = nccl::ControlPlane::Clock;
constexpr int kVersion = 22703; // an NCCL_VERSION_CODE (2.27.3); any value both ends share

int freePort() {
  const tcp::Socket s = tcp::listenOn(0, "test");
  return tcp::localPort(s);
}

StoreLaunch launchOf(int rank, int world, int port) {
  StoreLaunch l;
  l.rank = rank;
  l.worldSize = world;
  l.masterAddr = "127.0.0.1";
  l.masterPort = port;
  l.rankVar = "RANK";
  l.worldVar = "WORLD_SIZE";
  return l;
}

nccl::UniqueId idOf(std::uint8_t seed) {
  nccl::UniqueId id;
  for (std::size_t i = 0; i < id.size(); ++i)
    id[i] = static_cast<std::uint8_t>(seed * 31 + i * 7);
  return id;
}

TEST(NcclTcpControlPlane, IdsHeadersAndBarrierBetweenThreads) {
  const int port = freePort(), world = 3;
  std::vector<std::string> errors(world);
  std::vector<std::thread> ranks;
  for (int r = 0; r < world; ++r)
    ranks.emplace_back([&, r] {
      try {
        const auto deadline = Clock::now() + std::chrono::seconds(20);
        nccl::TcpControlPlane control(launchOf(r, world, port), std::chrono::seconds(20));
        EXPECT_EQ(control.rank(), r);
        EXPECT_EQ(control.worldSize(), world);
        // Only rank 0's argument counts: the others pass another id, which must not win.
        const Bytes mine = nccl::serialiseUniqueId(idOf(r == 0 ? 5 : 99), kVersion);
        const Bytes got = control.broadcastId(mine, deadline);
        EXPECT_EQ(nccl::parseUniqueId(got, kVersion, r), idOf(5)) << "rank " << r;
        for (int peer : nccl::pairInitOrder(r, world)) {
          if (r < peer) {
            Bytes both = nccl::serialiseUniqueId(idOf(std::uint8_t(10 * r + peer)), kVersion);
            const Bytes second = nccl::serialiseUniqueId(idOf(std::uint8_t(peer)), kVersion);
            both.insert(both.end(), second.begin(), second.end());
            control.sendPairIds(peer, both, deadline);
          } else {
            const Bytes both = control.recvPairIds(peer, deadline);
            ASSERT_EQ(both.size(), 2 * nccl::kSerialisedIdBytes);
            const Bytes first(both.begin(), both.begin() + nccl::kSerialisedIdBytes);
            EXPECT_EQ(nccl::parseUniqueId(first, kVersion, r), idOf(std::uint8_t(10 * peer + r)));
          }
        }
        for (int dst = 0; dst < world; ++dst)
          if (dst != r)
            for (std::uint64_t k = 0; k < 4; ++k)
              control.postHeader(dst, nccl::encodeHeader({7, 1000 * std::uint64_t(r) + k}));
        std::map<int, std::vector<std::uint64_t>> sizes;
        std::size_t count = 0;
        while (count < 4 * (world - 1) && Clock::now() < deadline) {
          for (auto &[src, b] : control.takeHeaders()) {
            const nccl::Header h = nccl::decodeHeader(b, r, src);
            EXPECT_EQ(h.tag, 7);
            sizes[src].push_back(h.size);
            ++count;
          }
          std::this_thread::sleep_for(std::chrono::milliseconds(1));
        }
        for (int src = 0; src < world; ++src) {
          if (src == r)
            continue;
          const std::uint64_t base = 1000u * static_cast<std::uint64_t>(src);
          EXPECT_EQ(sizes[src], (std::vector<std::uint64_t>{base, base + 1, base + 2, base + 3}))
              << "rank " << r << ": headers from rank " << src << " in send order";
        }
        EXPECT_EQ(control.takeAbortNote(), "");
        EXPECT_TRUE(control.barrierDone(deadline));
        control.finalize();
      } catch (const std::exception &e) {
        errors[r] = e.what();
      }
    });
  for (auto &t : ranks)
    t.join();
  for (int r = 0; r < world; ++r)
    EXPECT_EQ(errors[r], "") << "rank " << r;
}

TEST(NcclTcpControlPlane, MissingIdFromRankZeroIsNamedAtTheDeadline) {
  const int port = freePort();
  std::string error1;
  std::thread one([&] {
    nccl::TcpControlPlane control(launchOf(1, 2, port), std::chrono::seconds(20));
    const auto start = Clock::now();
    try {
      control.broadcastId({}, Clock::now() + std::chrono::milliseconds(300));
    } catch (const CommError &e) {
      error1 = e.what();
    }
    EXPECT_LT(std::chrono::duration<double>(Clock::now() - start).count(), 5.0);
    control.barrierDone(Clock::now() + std::chrono::seconds(20));
  });
  nccl::TcpControlPlane control(launchOf(0, 2, port), std::chrono::seconds(20));
  control.barrierDone(Clock::now() + std::chrono::seconds(20)); // rank 0 never broadcasts
  one.join();
  // "within N ms": N is what was left of the deadline when the wait began (300 ms or just under).
  const std::string prefix =
      "rank 1: nccl comm: the NCCL bootstrap id from rank 0 did not arrive within ";
  EXPECT_EQ(error1.rfind(prefix, 0), 0u) << error1;
  EXPECT_EQ(error1.size() >= 3 ? error1.substr(error1.size() - 3) : "", " ms") << error1;
}

} // namespace
} // namespace disagmoe
