// The local comm backend: FIFO delivery per (src, dst, tag), deadlines naming the peer, abort.
#include "runtime/comm/local/LocalComm.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

using namespace disagmoe;
using namespace std::chrono_literals;

TEST(LocalComm, DeliversInOrderPerSourceAndTag) {
  LocalWorld world(3);
  auto a = world.endpoint(0), b = world.endpoint(1), c = world.endpoint(2);
  a->send(2, 7, {1});
  a->send(2, 7, {2});
  b->send(2, 7, {3});
  a->send(2, 8, {4});
  EXPECT_EQ(c->recv(0, 8, 100ms), Bytes{4});
  EXPECT_EQ(c->recv(1, 7, 100ms), Bytes{3});
  EXPECT_EQ(c->recv(0, 7, 100ms), Bytes{1});
  EXPECT_EQ(c->recv(0, 7, 100ms), Bytes{2});
  EXPECT_EQ(c->rank(), 2);
  EXPECT_EQ(c->worldSize(), 3);
}

TEST(LocalComm, RecvWaitsForALaterSendAndSendToSelfWorks) {
  LocalWorld world(2);
  auto a = world.endpoint(0), b = world.endpoint(1);
  std::thread sender([&] {
    std::this_thread::sleep_for(20ms);
    a->send(1, 0, {9, 9});
  });
  EXPECT_EQ(b->recv(0, 0, 5000ms), (Bytes{9, 9}));
  sender.join();
  b->send(1, 3, {5});
  EXPECT_EQ(b->recv(1, 3, 10ms), Bytes{5});
}

TEST(LocalComm, RecvDeadlineThrowsNamingThePeer) {
  LocalWorld world(4);
  auto r = world.endpoint(3);
  const auto start = std::chrono::steady_clock::now();
  try {
    r->recv(2, 5, 50ms);
    FAIL() << "recv returned without a message";
  } catch (const CommAborted &) {
    FAIL() << "timeout reported as abort";
  } catch (const CommError &e) {
    EXPECT_STREQ(e.what(), "rank 3: recv from rank 2 (tag 5) timed out after 50 ms");
  }
  EXPECT_GE(std::chrono::steady_clock::now() - start, 50ms);
}

TEST(LocalComm, AbortWakesWaitingReceivers) {
  LocalWorld world(2);
  auto r = world.endpoint(0);
  std::thread aborter([&] {
    std::this_thread::sleep_for(20ms);
    world.abort("rank 1 failed: boom");
  });
  EXPECT_THROW(r->recv(1, 0, 10000ms), CommAborted);
  aborter.join();
}

TEST(LocalComm, RejectsRanksOutsideTheWorld) {
  LocalWorld world(2);
  EXPECT_THROW(world.endpoint(2), CommError);
  auto r = world.endpoint(0);
  EXPECT_THROW(r->send(5, 0, {}), CommError);
  EXPECT_THROW(r->recv(-1, 0, 1ms), CommError);
}

// ---- Comm's default exchange and all-reduce (Comm.cpp), on the local backend ------------------

namespace {

// Runs fn(rank) on one thread per rank of `world`; rethrows nothing (tests assert inside).
template <typename Fn> void onEveryRank(LocalWorld &world, Fn fn) {
  std::vector<std::thread> threads;
  for (int r = 0; r < world.worldSize(); ++r)
    threads.emplace_back([&, r] { fn(r); });
  for (auto &t : threads)
    t.join();
}

// Rank r's messages of one exchange step: to every rank (itself too), two under tag 4 and one
// under tag 9, contents depending on (src, dst, index) so misdelivery shows.
std::vector<OutgoingMessage> stepMessages(int src, int world) {
  std::vector<OutgoingMessage> out;
  for (int d = 0; d < world; ++d)
    for (int k = 0; k < 3; ++k)
      out.push_back(
          {d, k == 2 ? 9 : 4,
           Bytes(static_cast<size_t>(1 + k + src), static_cast<uint8_t>(16 * src + 4 * d + k))});
  return out;
}

std::vector<IncomingMessage> stepReceives(int world) {
  std::vector<IncomingMessage> in;
  for (int s = world - 1; s >= 0; --s) { // a different order than the sends: tags and FIFO decide
    in.push_back({s, 9});
    in.push_back({s, 4});
    in.push_back({s, 4});
  }
  return in;
}

} // namespace

TEST(CommDefaults, ExchangeMatchesPlainSendRecvLoop) {
  constexpr int W = 3;
  std::vector<std::vector<Bytes>> viaExchange(W), viaLoop(W);
  LocalWorld a(W), b(W);
  onEveryRank(a, [&](int r) {
    auto c = a.endpoint(r);
    viaExchange[r] = c->exchange(stepMessages(r, W), stepReceives(W), 5000ms);
  });
  onEveryRank(b, [&](int r) {
    auto c = b.endpoint(r);
    for (OutgoingMessage &m : stepMessages(r, W))
      c->send(m.dst, m.tag, std::move(m.bytes));
    for (const IncomingMessage &m : stepReceives(W))
      viaLoop[r].push_back(c->recv(m.src, m.tag, 5000ms));
  });
  for (int r = 0; r < W; ++r) {
    EXPECT_EQ(viaExchange[r], viaLoop[r]) << "rank " << r;
    // Independent expectation: from src s, tag 9 is message k = 2, then tag 4's k = 0 and k = 1.
    ASSERT_EQ(viaExchange[r].size(), 3u * W);
    for (int i = 0; i < W; ++i) {
      const int s = W - 1 - i;
      const int ks[3] = {2, 0, 1};
      for (int j = 0; j < 3; ++j)
        EXPECT_EQ(viaExchange[r][3 * i + j], Bytes(static_cast<size_t>(1 + ks[j] + s),
                                                   static_cast<uint8_t>(16 * s + 4 * r + ks[j])));
    }
  }
}

TEST(CommDefaults, ExchangeReportsTheSilentPeer) {
  LocalWorld world(2);
  auto c = world.endpoint(0);
  try {
    c->exchange({}, {{1, 6}}, 20ms);
    FAIL() << "exchange returned without a message";
  } catch (const CommError &e) {
    EXPECT_STREQ(e.what(), "rank 0: recv from rank 1 (tag 6) timed out after 20 ms");
  }
}

TEST(CommDefaults, AllReduceSumsInAscendingRankOrderOverASubset) {
  constexpr int W = 4;
  constexpr size_t n = 257;
  const std::vector<int> group = {0, 2, 3}; // rank 1 does not take part
  std::vector<std::vector<float>> data(W, std::vector<float>(n));
  for (int r = 0; r < W; ++r)
    for (size_t j = 0; j < n; ++j) // magnitudes spread over 2^-10..2^10, signs mixed: order matters
      data[r][j] = std::ldexp(
          static_cast<float>((j * 7919 + static_cast<size_t>(r) * 104729) % 1000) / 1000.0f - 0.37f,
          static_cast<int>((j + static_cast<size_t>(r) * 5) % 21) - 10);
  std::vector<std::vector<float>> out = data;
  LocalWorld world(W);
  onEveryRank(world, [&](int r) {
    if (r == 1)
      return;
    auto c = world.endpoint(r);
    c->allReduceSum(group, 11, out[r].data(), n, 5000ms);
  });
  for (size_t j = 0; j < n; ++j) {
    const float expected = (data[0][j] + data[2][j]) + data[3][j]; // the documented fixed order
    const double exact = static_cast<double>(data[0][j]) + data[2][j] + data[3][j];
    const double bound = 2.0 * std::ldexp(1.0, -24) *
                         (std::fabs(data[0][j]) + std::fabs(data[2][j]) + std::fabs(data[3][j]));
    for (int r : group) {
      EXPECT_EQ(std::memcmp(&out[r][j], &expected, sizeof(float)), 0)
          << "rank " << r << " element " << j;
      EXPECT_LE(std::fabs(out[r][j] - exact), bound) << "rank " << r << " element " << j;
    }
    EXPECT_EQ(out[1][j], data[1][j]); // untouched
  }
}

TEST(CommDefaults, AllReduceOfOneRankIsTheIdentity) {
  LocalWorld world(2);
  auto c = world.endpoint(1);
  std::vector<float> v = {1.5f, -2.0f};
  c->allReduceSum({1}, 3, v.data(), v.size(), 10ms);
  EXPECT_EQ(v, (std::vector<float>{1.5f, -2.0f}));
}

TEST(CommDefaults, AllReduceRejectsBadRanksAndWrongSizes) {
  LocalWorld world(3);
  auto c0 = world.endpoint(0), c1 = world.endpoint(1);
  float x = 1;
  const auto message = [](auto fn) {
    try {
      fn();
    } catch (const CommError &e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(message([&] { c0->allReduceSum({1, 0}, 2, &x, 1, 10ms); }),
            "rank 0: all-reduce (tag 2): ranks must be strictly ascending ranks of the world of 3");
  EXPECT_EQ(message([&] { c0->allReduceSum({1, 2}, 2, &x, 1, 10ms); }),
            "rank 0: all-reduce (tag 2): this rank is not one of the reducing ranks");
  EXPECT_EQ(message([&] { c0->allReduceSum({0, 3}, 2, &x, 1, 10ms); }),
            "rank 0: all-reduce (tag 2): ranks must be strictly ascending ranks of the world of 3");
  c1->send(0, 5, Bytes(3)); // rank 1 sends 3 bytes where 4 are expected
  EXPECT_EQ(message([&] { c0->allReduceSum({0, 1}, 5, &x, 1, 1000ms); }),
            "rank 0: all-reduce (tag 5): message from rank 1 has 3 bytes, expected 4");
}
