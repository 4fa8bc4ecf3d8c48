// The heartbeat watchdog and the fault-injection hook (runtime/executor/Heartbeat.h).
#include "runtime/executor/Heartbeat.h"
#include "runtime/comm/local/LocalComm.h"
#include "runtime/executor/RankWorker.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>

using namespace disagmoe;
using namespace std::chrono_literals;

namespace {

struct Reports {
  std::mutex mutex;
  std::vector<std::string> messages;
  std::function<void(const std::string &)> sink() {
    return [this](const std::string &m) {
      std::lock_guard<std::mutex> lock(mutex);
      messages.push_back(m);
    };
  }
  size_t count() {
    std::lock_guard<std::mutex> lock(mutex);
    return messages.size();
  }
};

} // namespace

TEST(Heartbeat, NamesTheRankThatStoppedBeatingAfterTheDeadline) {
  Reports reports;
  const auto t0 = std::chrono::steady_clock::now();
  {
    HeartbeatMonitor monitor(3, 100ms, reports.sink());
    // Ranks 0 and 2 keep beating for 400 ms; rank 1 never beats after the start.
    while (std::chrono::steady_clock::now() - t0 < 400ms) {
      monitor.beat(0);
      monitor.beat(2);
      std::this_thread::sleep_for(5ms);
    }
  }
  ASSERT_EQ(reports.count(), 1u); // one report, then the watchdog stops
  EXPECT_EQ(reports.messages[0].rfind("rank 1 is silent: no heartbeat for ", 0), 0u)
      << reports.messages[0];
}

TEST(Heartbeat, AWaitingOrFinishedRankIsNotSilent) {
  Reports reports;
  {
    HeartbeatMonitor monitor(2, 50ms, reports.sink());
    monitor.setWaiting(0, true); // blocked in a receive: its deadline covers it
    monitor.finished(1);         // returned
    std::this_thread::sleep_for(300ms);
  }
  EXPECT_EQ(reports.count(), 0u);
}

TEST(Heartbeat, ParsesTheFaultHookAndRefusesMalformedValues) {
  ::setenv("DISAGMOE_FAULT_INJECT", "3:silent:12", 1);
  FaultInjection f = FaultInjection::fromEnvironment();
  EXPECT_EQ(f.rank, 3);
  EXPECT_TRUE(f.silent);
  EXPECT_EQ(f.at, 12);
  for (const char *bad :
       {"3", "3:die", "x:die:1", "3:sleep:1", "3:die:-1", "-1:die:0", "3:die:1x"}) {
    ::setenv("DISAGMOE_FAULT_INJECT", bad, 1);
    EXPECT_THROW(FaultInjection::fromEnvironment(), ExecError) << bad;
  }
  ::unsetenv("DISAGMOE_FAULT_INJECT");
  EXPECT_EQ(FaultInjection::fromEnvironment().rank, -1);
}

TEST(Heartbeat, InjectedDeathThrowsAtTheKthOperationAndSilenceEndsOnAbort) {
  LocalWorld world(2);
  Reports reports;
  HeartbeatMonitor monitor(2, 0ms, reports.sink()); // no watchdog: the abort below ends the silence
  FaultInjection die;
  die.rank = 0, die.at = 1;
  MonitoredComm c0(world.endpoint(0), monitor, die);
  c0.send(1, 0, Bytes{1}); // operation 0 passes
  EXPECT_THROW(c0.send(1, 0, Bytes{2}), ExecError);

  FaultInjection silent;
  silent.rank = 1, silent.silent = true, silent.at = 0;
  MonitoredComm c1(world.endpoint(1), monitor, silent);
  std::atomic<bool> aborted{false};
  std::thread t([&] {
    try {
      c1.recv(0, 0, 10s);
    } catch (const CommAborted &) {
      aborted = true;
    }
  });
  std::this_thread::sleep_for(100ms);
  EXPECT_FALSE(aborted); // silent: neither the message nor the deadline ends it
  world.abort("test: rank 1 is silent");
  t.join();
  EXPECT_TRUE(aborted);
}

TEST(Heartbeat, ParsesTheProcessWideModes) {
  ::setenv("DISAGMOE_FAULT_INJECT", "5:kill:3", 1);
  FaultInjection k = FaultInjection::fromEnvironment();
  EXPECT_TRUE(k.kill && !k.freeze && !k.silent && k.rank == 5 && k.at == 3);
  ::setenv("DISAGMOE_FAULT_INJECT", "0:freeze:1", 1);
  FaultInjection f = FaultInjection::fromEnvironment();
  EXPECT_TRUE(f.freeze && !f.kill && !f.silent && f.rank == 0 && f.at == 1);
  ::unsetenv("DISAGMOE_FAULT_INJECT");
}

// One process per rank: RankWatch watches only its own rank (the others are their processes').
TEST(Heartbeat, RankWatchNamesItsOwnRankOnlyAndStaysQuietWhileItBeats) {
  LocalWorld world(3);
  std::unique_ptr<Comm> one = world.endpoint(1);
  Reports quiet, silent;
  {
    // Beats every 10 ms for 1.5 s against a 1 s deadline (generous on a loaded machine): never
    // silent, while ranks 0 and 2, which never beat and are past the deadline by the end, are not
    // this watch's to report.
    RankWatch watch(*one, 1000ms, FaultInjection{}, quiet.sink());
    for (int i = 0; i < 150; ++i) {
      watch.comm().send(1, 7, Bytes{1});
      std::this_thread::sleep_for(10ms);
    }
  }
  EXPECT_EQ(quiet.count(), 0u);
  {
    RankWatch watch(*one, 60ms, FaultInjection{}, silent.sink());
    // No beat at all: reported once, whenever the watchdog thread gets to run (up to 10 s here).
    for (int i = 0; i < 1000 && silent.count() == 0; ++i)
      std::this_thread::sleep_for(10ms);
  }
  ASSERT_EQ(silent.count(), 1u);
  EXPECT_EQ(silent.messages[0].rfind("rank 1 is silent: no heartbeat for ", 0), 0u)
      << silent.messages[0];
}

// On the local comm every rank shares the process: kill and freeze are refused, not applied.
TEST(Heartbeat, ProcessWideModesAreRefusedWhenRanksShareTheProcess) {
  LocalWorld world(1);
  HeartbeatMonitor monitor(1, 0ms, [](const std::string &) {});
  FaultInjection freeze;
  freeze.rank = 0, freeze.freeze = true, freeze.at = 0;
  MonitoredComm comm(world.endpoint(0), monitor, freeze);
  try {
    comm.send(0, 1, Bytes{1});
    FAIL() << "freeze was applied";
  } catch (const ExecError &e) {
    EXPECT_NE(std::string(e.what()).find("mode freeze stops the whole process"), std::string::npos)
        << e.what();
  }
}
