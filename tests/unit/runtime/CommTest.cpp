// The local comm backend: FIFO delivery per (src, dst, tag), deadlines naming the peer, abort.
#include "runtime/comm/local/LocalComm.h"

#include <gtest/gtest.h>

#include <thread>

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
  } catch (const CommAborted&) {
    FAIL() << "timeout reported as abort";
  } catch (const CommError& e) {
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
