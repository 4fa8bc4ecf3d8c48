// The comm stream (runtime/executor/CommStream.h) and its events (Event.h): order, receives posted
// by several threads completing as their messages arrive, deadlines, aborts, and a destructor that
// never leaves its worker behind. Expectations are independent of the stream: the LocalComm's
// FIFO per (src, dst, tag), the backends' timeout wording, exact sums of small integers.
#include "runtime/executor/CommStream.h"
#include "runtime/comm/local/LocalComm.h"
#include "runtime/executor/Event.h"

#include <gtest/gtest.h>

#include <chrono>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

using namespace disagmoe;
using namespace std::chrono_literals;

TEST(Event, WaitReturnsAfterRecordAndRethrowsAFailure) {
  Event a;
  EXPECT_FALSE(a.done());
  std::thread recorder([&] {
    std::this_thread::sleep_for(10ms);
    a.record();
  });
  a.wait();
  recorder.join();
  EXPECT_TRUE(a.done());
  a.fail(std::make_exception_ptr(std::runtime_error("late"))); // ignored after record
  EXPECT_NO_THROW(a.wait());

  Event b;
  b.fail(std::make_exception_ptr(std::runtime_error("stream failed")));
  b.record(); // ignored after fail
  try {
    b.wait();
    FAIL();
  } catch (const std::runtime_error &e) {
    EXPECT_STREQ(e.what(), "stream failed");
  }
}

TEST(CommStream, SendsKeepTheirPostingOrderPerSourceAndTag) {
  LocalWorld world(2);
  auto a = world.endpoint(0), b = world.endpoint(1);
  {
    CommStream stream(*a);
    EXPECT_EQ(stream.rank(), 0);
    EXPECT_EQ(stream.worldSize(), 2);
    for (uint8_t i = 0; i < 50; ++i)
      stream.send(1, 4, {i});
    stream.flush();
  }
  for (uint8_t i = 0; i < 50; ++i)
    EXPECT_EQ(b->recv(0, 4, 1000ms), Bytes{i});
}

// Rank 0 posts a receive whose message rank 1 sends only after it got rank 0's later send: a
// worker that blocked in the receive before sending would wait for its deadline.
TEST(CommStream, AQueuedSendIsNotHeldUpByAnEarlierReceive) {
  LocalWorld world(2);
  auto a = world.endpoint(0), b = world.endpoint(1);
  std::thread peer([&] {
    const Bytes got = b->recv(0, 2, 20000ms);
    b->send(0, 1, {static_cast<uint8_t>(got[0] + 1)});
  });
  CommStream stream(*a);
  auto early = stream.postRecv(1, 1, 20000ms);
  const auto start = std::chrono::steady_clock::now();
  stream.send(1, 2, {41});
  EXPECT_EQ(early->take(), Bytes{42});
  EXPECT_LT(std::chrono::steady_clock::now() - start, 10000ms); // far below the 20 s deadline
  peer.join();
}

// Two compute threads post receives of different tags; the messages arrive in the opposite order
// of the posts, and each thread gets its own.
TEST(CommStream, ReceivesOfTwoThreadsCompleteInArrivalOrder) {
  LocalWorld world(2);
  auto a = world.endpoint(0), b = world.endpoint(1);
  CommStream stream(*a);
  auto first = stream.postRecv(1, 10, 20000ms);
  Bytes second;
  std::thread other([&] { second = stream.recv(1, 11, 20000ms); });
  b->send(0, 11, {2});
  other.join(); // completes while `first` is still pending
  EXPECT_EQ(second, Bytes{2});
  EXPECT_FALSE(first->arrived.done());
  b->send(0, 10, {1});
  EXPECT_EQ(first->take(), Bytes{1});
}

TEST(CommStream, TwoReceivesOfOnePairTakeTheMessagesInOrder) {
  LocalWorld world(2);
  auto a = world.endpoint(0), b = world.endpoint(1);
  CommStream stream(*a);
  auto x = stream.postRecv(1, 3, 20000ms), y = stream.postRecv(1, 3, 20000ms);
  b->send(0, 3, {7});
  b->send(0, 3, {8});
  EXPECT_EQ(y->take(), Bytes{8});
  EXPECT_EQ(x->take(), Bytes{7});
}

TEST(CommStream, AReceiveFailsAtItsDeadlineNamingThePeerAndTag) {
  LocalWorld world(2);
  auto a = world.endpoint(0);
  CommStream stream(*a);
  const auto start = std::chrono::steady_clock::now();
  try {
    stream.recv(1, 5, 50ms);
    FAIL();
  } catch (const CommTimeout &e) {
    EXPECT_STREQ(e.what(), "rank 0: recv from rank 1 (tag 5) timed out after 50 ms");
  }
  EXPECT_GE(std::chrono::steady_clock::now() - start, 50ms);
  // A timed-out receive fails only itself: the stream still works.
  stream.send(0, 6, {1});
  EXPECT_EQ(stream.recv(0, 6, 1000ms), Bytes{1});
}

TEST(CommStream, AnAbortedWorldFailsPendingAndLaterCalls) {
  LocalWorld world(2);
  auto a = world.endpoint(0);
  CommStream stream(*a);
  auto pending = stream.postRecv(1, 1, 20000ms);
  world.abort("rank 1 failed: boom");
  EXPECT_THROW(pending->take(), CommAborted);
  EXPECT_THROW(stream.send(1, 1, {1}), CommAborted);
  EXPECT_THROW(stream.flush(), CommAborted);
}

TEST(CommStream, AbortFromAComputeStreamFailsThePendingReceives) {
  LocalWorld world(2);
  auto a = world.endpoint(0);
  CommStream stream(*a);
  auto pending = stream.postRecv(1, 1, 20000ms);
  stream.abort(std::make_exception_ptr(std::runtime_error("forward stream failed")));
  const auto start = std::chrono::steady_clock::now();
  try {
    pending->take();
    FAIL();
  } catch (const std::runtime_error &e) {
    EXPECT_STREQ(e.what(), "forward stream failed");
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, 10000ms);
}

TEST(CommStream, DestructorFailsPendingReceivesAndJoins) {
  LocalWorld world(2);
  auto a = world.endpoint(0);
  std::shared_ptr<CommStream::Receive> pending;
  const auto start = std::chrono::steady_clock::now();
  {
    CommStream stream(*a);
    pending = stream.postRecv(1, 1, 20000ms);
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, 10000ms);
  try {
    pending->take();
    FAIL();
  } catch (const CommAborted &e) {
    EXPECT_STREQ(e.what(), "rank 0: the comm stream stopped with receives pending");
  }
}

// allReduceSum runs the inner Comm's (here the default fixed-order one) on the worker: 3 ranks of
// small integers, whose sums are exact.
TEST(CommStream, AllReduceSumThroughTheStreamsOfThreeRanks) {
  LocalWorld world(3);
  std::vector<std::vector<float>> data = {{1, 2, 3}, {10, 20, 30}, {100, 200, 300}};
  std::vector<std::thread> ranks;
  for (int r = 0; r < 3; ++r)
    ranks.emplace_back([&, r] {
      auto endpoint = world.endpoint(r);
      CommStream stream(*endpoint);
      stream.allReduceSum({0, 1, 2}, 9, data[r].data(), 3, 20000ms);
    });
  for (auto &t : ranks)
    t.join();
  for (int r = 0; r < 3; ++r)
    EXPECT_EQ(data[r], (std::vector<float>{111, 222, 333})) << r;
}

// Comm::recvAny / wake on the local backend, the comm stream's wait: the first pair (in the given
// order) holding a message wins; nothing -> -1 at the deadline; wake() from another thread -> -1.
TEST(LocalComm, RecvAnyTakesTheFirstPairWithAMessageAndWakeEndsTheWait) {
  LocalWorld world(3);
  auto a = world.endpoint(0), b = world.endpoint(1), c = world.endpoint(2);
  b->send(0, 7, {1});
  c->send(0, 8, {2});
  Bytes out;
  EXPECT_EQ(a->recvAny({{2, 8}, {1, 7}}, out, 1000ms), 0);
  EXPECT_EQ(out, Bytes{2});
  EXPECT_EQ(a->recvAny({{2, 8}, {1, 7}}, out, 1000ms), 1);
  EXPECT_EQ(out, Bytes{1});
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(a->recvAny({{2, 8}, {1, 7}}, out, 30ms), -1);
  EXPECT_GE(std::chrono::steady_clock::now() - start, 30ms);
  std::thread waker([&] {
    std::this_thread::sleep_for(20ms);
    a->wake();
  });
  const auto woken = std::chrono::steady_clock::now();
  EXPECT_EQ(a->recvAny({{1, 7}}, out, 20000ms), -1);
  EXPECT_LT(std::chrono::steady_clock::now() - woken, 10000ms);
  waker.join();
  world.abort("rank 2 failed");
  EXPECT_THROW(a->recvAny({{1, 7}}, out, 1000ms), CommAborted);
}
