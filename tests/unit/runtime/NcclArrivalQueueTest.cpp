// The nccl backend's delivery order (runtime/comm/nccl/ArrivalQueue.h): per source in header
// order, whatever order payload copies complete in; zero-byte messages never overtake.
#include "runtime/comm/nccl/ArrivalQueue.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

using namespace disagmoe;
using namespace disagmoe::nccl;

TEST(NcclArrivalQueue, ZeroByteMessageWaitsBehindAnEarlierPayload) {
  ArrivalQueue q(3);
  const auto big = q.announce(1, 7, 3);
  q.announce(1, 7, 0); // complete with its header, but after `big`
  q.announce(2, 7, 0); // another source: not held back
  auto ready = q.takeDeliverable();
  ASSERT_EQ(ready.size(), 1u);
  EXPECT_EQ(ready[0].src, 2);
  q.complete(big, {1, 2, 3});
  ready = q.takeDeliverable();
  ASSERT_EQ(ready.size(), 2u);
  EXPECT_EQ(ready[0].bytes, (Bytes{1, 2, 3}));
  EXPECT_TRUE(ready[1].bytes.empty());
  EXPECT_EQ(q.pending(), 0u);
}

// Oracle: per source, the delivered sequence equals the announced sequence, for every order of
// payload completion (random permutations of 40 messages from 4 sources, 200 trials).
TEST(NcclArrivalQueue, DeliveryFollowsHeaderOrderForAnyCompletionOrder) {
  std::mt19937 rng(12345);
  for (int trial = 0; trial < 200; ++trial) {
    ArrivalQueue q(4);
    std::map<int, std::vector<std::pair<int, Bytes>>> sent; // src -> (tag, bytes) in header order
    std::vector<std::pair<std::uint64_t, Bytes>> payloads;
    for (int m = 0; m < 40; ++m) {
      const int src = static_cast<int>(rng() % 4), tag = static_cast<int>(rng() % 3);
      const size_t size = rng() % 3 == 0 ? 0 : 1 + rng() % 5;
      Bytes bytes(size, static_cast<uint8_t>(m));
      const auto slot = q.announce(src, tag, size);
      if (size)
        payloads.push_back({slot, bytes});
      sent[src].push_back({tag, bytes});
    }
    std::shuffle(payloads.begin(), payloads.end(), rng);
    std::map<int, std::vector<std::pair<int, Bytes>>> got;
    for (auto &[slot, bytes] : payloads) {
      q.complete(slot, bytes);
      if (rng() % 2)
        for (auto &d : q.takeDeliverable())
          got[d.src].push_back({d.tag, d.bytes});
    }
    for (auto &d : q.takeDeliverable())
      got[d.src].push_back({d.tag, d.bytes});
    EXPECT_EQ(got, sent) << "trial " << trial;
    EXPECT_EQ(q.pending(), 0u);
  }
}

TEST(NcclArrivalQueue, RejectsUnknownSlotsWrongSizesAndSources) {
  ArrivalQueue q(2);
  const auto slot = q.announce(0, 1, 4);
  const auto message = [](auto fn) {
    try {
      fn();
    } catch (const CommError &e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(message([&] { q.complete(slot, Bytes(3)); }),
            "nccl comm: message from rank 0 (tag 1) has 3 bytes, its header announced 4");
  EXPECT_EQ(message([&] { q.complete(slot + 1, Bytes(1)); }),
            "nccl comm: payload for unknown message slot 1");
  EXPECT_EQ(message([&] { q.announce(2, 0, 1); }),
            "nccl comm: a header from rank 2, outside the world of 2 ranks");
  q.complete(slot, Bytes(4));
  EXPECT_EQ(message([&] { q.complete(slot, Bytes(4)); }),
            "nccl comm: payload for unknown message slot 0");
}
