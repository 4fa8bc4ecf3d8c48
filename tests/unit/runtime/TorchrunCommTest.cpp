// The torchrun-style launch (runtime/comm/tcp): which variables make a launch and which are
// refused (LaunchEnv.h), the rendezvous at MASTER_ADDR:MASTER_PORT and its deadlines
// (TcpRendezvous.h), and the TCP mesh comm between ranks run as threads (TcpComm.h).
#include "runtime/comm/tcp/LaunchEnv.h"
#include "runtime/comm/tcp/Sockets.h"
#include "runtime/comm/tcp/TcpComm.h"
#include "runtime/comm/tcp/TcpRendezvous.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

namespace disagmoe {
namespace {

using Env = std::map<std::string, std::string>;

Env torchrun(const std::string &rank, const std::string &world) {
  return {{"RANK", rank},
          {"WORLD_SIZE", world},
          {"LOCAL_RANK", rank},
          {"MASTER_ADDR", "127.0.0.1"},
          {"MASTER_PORT", "29511"}};
}

std::string refusal(const Env &env) {
  try {
    storeLaunchFrom(env);
  } catch (const LaunchEnvError &e) {
    return e.what();
  }
  return "(accepted)";
}

TEST(LaunchEnv, TorchrunVariablesMakeALaunch) {
  const auto l = storeLaunchFrom(torchrun("2", "4"));
  ASSERT_TRUE(l.has_value());
  EXPECT_EQ(l->rank, 2);
  EXPECT_EQ(l->worldSize, 4);
  EXPECT_EQ(l->localRank, 2);
  EXPECT_EQ(l->masterAddr, "127.0.0.1");
  EXPECT_EQ(l->masterPort, 29511);
  EXPECT_EQ(l->endpoint(), "MASTER_ADDR:MASTER_PORT = 127.0.0.1:29511");
  Env noPort = torchrun("0", "1");
  noPort.erase("MASTER_PORT");
  noPort.erase("LOCAL_RANK");
  EXPECT_EQ(storeLaunchFrom(noPort)->masterPort, 29500); // torch's default
  EXPECT_EQ(storeLaunchFrom(noPort)->localRank, -1);
}

// torchrun's static rendezvous keeps its agent's store on MASTER_PORT: the ranks take the next.
TEST(LaunchEnv, TorchrunAgentStoreMovesTheRendezvousPort) {
  Env agent = torchrun("1", "4");
  agent["TORCHELASTIC_USE_AGENT_STORE"] = "True";
  const auto l = storeLaunchFrom(agent);
  ASSERT_TRUE(l.has_value());
  EXPECT_EQ(l->rendezvousPort(), 29512);
  EXPECT_EQ(l->endpoint(), "MASTER_ADDR:MASTER_PORT+1 = 127.0.0.1:29512");
  agent["TORCHELASTIC_USE_AGENT_STORE"] = "False";
  EXPECT_EQ(storeLaunchFrom(agent)->rendezvousPort(), 29511);
  agent["TORCHELASTIC_USE_AGENT_STORE"] = "True";
  agent["MASTER_PORT"] = "65535";
  EXPECT_EQ(refusal(agent).rfind("MASTER_PORT=65535: with TORCHELASTIC_USE_AGENT_STORE=True", 0),
            0u);
}

TEST(LaunchEnv, MpirunAndPlainRunsAreNoStoreLaunch) {
  Env mpirun = torchrun("1", "4");
  mpirun["OMPI_COMM_WORLD_RANK"] = "1";
  EXPECT_FALSE(storeLaunchFrom(mpirun).has_value());
  EXPECT_FALSE(storeLaunchFrom({}).has_value());
  EXPECT_FALSE(storeLaunchFrom({{"RANK", ""}}).has_value()); // empty counts as unset
  // srun without MASTER_ADDR: OpenMPI's PMIx support connects the ranks.
  EXPECT_FALSE(storeLaunchFrom({{"SLURM_PROCID", "3"}, {"SLURM_NTASKS", "4"}}).has_value());
}

TEST(LaunchEnv, SlurmWithMasterAddr) {
  const auto l = storeLaunchFrom({{"SLURM_PROCID", "3"},
                                  {"SLURM_NTASKS", "4"},
                                  {"SLURM_LOCALID", "1"},
                                  {"MASTER_ADDR", "node01"}});
  ASSERT_TRUE(l.has_value());
  EXPECT_EQ(l->rank, 3);
  EXPECT_EQ(l->worldSize, 4);
  EXPECT_EQ(l->localRank, 1);
  EXPECT_EQ(l->rankVar, "SLURM_PROCID");
  EXPECT_EQ(refusal({{"SLURM_PROCID", "4"}, {"SLURM_NTASKS", "4"}, {"MASTER_ADDR", "n"}}),
            "SLURM_PROCID=4 is not below SLURM_NTASKS=4");
}

TEST(LaunchEnv, InconsistentVariablesAreRefusedNamingThem) {
  EXPECT_EQ(refusal(torchrun("4", "4")), "RANK=4 is not below WORLD_SIZE=4");
  EXPECT_EQ(refusal(torchrun("one", "4")), "RANK=\"one\" is not a rank (a decimal integer >= 0)");
  EXPECT_EQ(refusal(torchrun("-1", "4")), "RANK=\"-1\" is not a rank (a decimal integer >= 0)");
  EXPECT_EQ(refusal(torchrun("0", "4x")),
            "WORLD_SIZE=\"4x\" is not a world size (a decimal integer >= 1)");
  EXPECT_EQ(refusal(torchrun("0", "0")),
            "WORLD_SIZE=\"0\" is not a world size (a decimal integer >= 1)");
  Env port = torchrun("0", "2");
  port["MASTER_PORT"] = "70000";
  EXPECT_EQ(refusal(port), "MASTER_PORT=\"70000\" is not a TCP port (1 to 65535)");
  Env local = torchrun("1", "2");
  local["LOCAL_RANK"] = "2";
  EXPECT_EQ(refusal(local), "LOCAL_RANK=2 is not below WORLD_SIZE=2");
  Env noAddr = torchrun("1", "2");
  noAddr.erase("MASTER_ADDR");
  EXPECT_NE(refusal(noAddr).find("RANK is set but MASTER_ADDR is not"), std::string::npos);
  Env noWorld = torchrun("1", "2");
  noWorld.erase("WORLD_SIZE");
  EXPECT_NE(refusal(noWorld).find("RANK is set but WORLD_SIZE is not"), std::string::npos);
}

// A port free a moment ago (the kernel hands out another one next).
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

TEST(TcpRendezvous, EveryRankGetsEveryBlob) {
  const int port = freePort(), world = 4;
  std::vector<std::vector<tcp::Member>> got(world);
  std::vector<std::string> errors(world);
  std::vector<std::thread> ranks;
  const auto deadline = tcp::Clock::now() + std::chrono::seconds(20);
  for (int r = world - 1; r >= 0; --r) // the others start before rank 0 listens
    ranks.emplace_back([&, r] {
      try {
        got[r] =
            tcp::rendezvous(launchOf(r, world, port), Bytes(r + 1, std::uint8_t(10 + r)), deadline);
      } catch (const std::exception &e) {
        errors[r] = e.what();
      }
    });
  for (auto &t : ranks)
    t.join();
  for (int r = 0; r < world; ++r) {
    ASSERT_EQ(errors[r], "") << "rank " << r;
    ASSERT_EQ(got[r].size(), static_cast<size_t>(world));
    for (int q = 0; q < world; ++q) {
      EXPECT_EQ(got[r][q].blob, Bytes(q + 1, std::uint8_t(10 + q)));
      EXPECT_EQ(got[r][q].host, "127.0.0.1");
    }
  }
}

template <typename F> std::pair<std::string, double> failureAndSeconds(F f) {
  const auto start = tcp::Clock::now();
  std::string what = "(no error)";
  try {
    f();
  } catch (const CommError &e) {
    what = e.what();
  }
  return {what, std::chrono::duration<double>(tcp::Clock::now() - start).count()};
}

TEST(TcpRendezvous, UnreachableRankZeroTimesOutNamingTheEndpoint) {
  const int port = freePort(); // nothing listens there
  const auto [what, seconds] = failureAndSeconds([&] {
    tcp::rendezvous(launchOf(1, 2, port), {}, tcp::Clock::now() + std::chrono::seconds(1));
  });
  EXPECT_EQ(what.rfind("rendezvous with rank 0 at MASTER_ADDR:MASTER_PORT = 127.0.0.1:" +
                           std::to_string(port) + " timed out after ",
                       0),
            0u)
      << what;
  EXPECT_NE(what.find("Connection refused"), std::string::npos) << what;
  EXPECT_LT(seconds, 3.0);
}

TEST(TcpRendezvous, RankZeroAloneNamesTheMissingRanks) {
  const int port = freePort();
  const auto [what, seconds] = failureAndSeconds([&] {
    tcp::rendezvous(launchOf(0, 3, port), {}, tcp::Clock::now() + std::chrono::seconds(1));
  });
  EXPECT_EQ(what, "rendezvous at MASTER_ADDR:MASTER_PORT = 127.0.0.1:" + std::to_string(port) +
                      ": 1 of 3 ranks arrived within 1 s (missing ranks 1, 2)");
  EXPECT_LT(seconds, 3.0);
}

TEST(TcpRendezvous, DifferentWorldSizesFailEveryRank) {
  const int port = freePort();
  std::string error0, error1;
  const auto deadline = tcp::Clock::now() + std::chrono::seconds(10);
  std::thread one([&] {
    error1 = failureAndSeconds([&] { tcp::rendezvous(launchOf(1, 3, port), {}, deadline); }).first;
  });
  error0 = failureAndSeconds([&] { tcp::rendezvous(launchOf(0, 2, port), {}, deadline); }).first;
  one.join();
  const std::string expected =
      "rendezvous at MASTER_ADDR:MASTER_PORT = 127.0.0.1:" + std::to_string(port) +
      ": rank 1 has WORLD_SIZE=3, rank 0 has WORLD_SIZE=2";
  EXPECT_EQ(error0, expected);
  EXPECT_EQ(error1, expected);
}

// A rank that fails before the rendezvous reports it there: every other rank fails naming that
// rank and its reason (rank 1 here, then rank 0), within a second, instead of at the deadline.
TEST(TcpRendezvous, AFailedRankIsNamedOnEveryRank) {
  for (const int failing : {1, 0}) {
    const int port = freePort(), world = 3;
    const auto deadline = tcp::Clock::now() + std::chrono::seconds(20);
    std::vector<std::string> errors(world);
    std::vector<double> seconds(world);
    std::vector<std::thread> ranks;
    for (int r = 0; r < world; ++r)
      ranks.emplace_back([&, r] {
        if (r == failing) {
          tcp::reportFailure(launchOf(r, world, port), "plan.json: cannot open", deadline);
          return;
        }
        std::tie(errors[r], seconds[r]) = failureAndSeconds(
            [&] { tcp::rendezvous(launchOf(r, world, port), Bytes(8, 0), deadline); });
      });
    for (auto &t : ranks)
      t.join();
    const std::string expected =
        "rendezvous at MASTER_ADDR:MASTER_PORT = 127.0.0.1:" + std::to_string(port) + ": rank " +
        std::to_string(failing) + " failed: plan.json: cannot open";
    for (int r = 0; r < world; ++r)
      if (r != failing) {
        EXPECT_EQ(errors[r], expected) << "rank " << r;
        EXPECT_LT(seconds[r], 5.0) << "rank " << r;
      }
  }
}

// Another server on MASTER_PORT (one that speaks first, like sshd) is refused in one line that
// shows what it sent, at once; the deadline is not waited for.
TEST(TcpRendezvous, AStrangerOnTheRendezvousPortIsRefused) {
  const tcp::Socket listener = tcp::listenOn(0, "stranger");
  const int port = tcp::localPort(listener);
  std::thread stranger([&] {
    try {
      const tcp::Socket c =
          tcp::acceptBefore(listener, tcp::Clock::now() + std::chrono::seconds(10));
      const std::string banner = "SSH-2.0-OpenSSH_9.2p1\r\n";
      tcp::writeAll(c, banner.data(), banner.size(), tcp::Clock::now() + std::chrono::seconds(5),
                    "stranger");
      std::uint8_t b[256]; // it keeps the connection open while the joining rank reads
      tcp::readAll(c, b, sizeof b, tcp::Clock::now() + std::chrono::seconds(10), "stranger");
    } catch (const CommError &) {
      // the joining rank closed the connection
    }
  });
  const auto [what, seconds] = failureAndSeconds([&] {
    tcp::rendezvous(launchOf(1, 2, port), Bytes(8, 0),
                    tcp::Clock::now() + std::chrono::seconds(30));
  });
  stranger.join();
  EXPECT_EQ(what, "rendezvous with rank 0 at MASTER_ADDR:MASTER_PORT = 127.0.0.1:" +
                      std::to_string(port) +
                      ": the process listening there is not a disagmoe-run rank 0 (it sent "
                      "\"SSH-2.0-OpenSSH_\"; another server on that port?)");
  EXPECT_LT(seconds, 5.0);
}

// Every rank sends rank-dependent messages to every rank (itself too), then all-reduces a vector;
// the sums are those of the closed form, in the default fixed order (Comm.h).
TEST(TcpComm, MeshOfThreadsExchangesAndReduces) {
  const int port = freePort(), world = 3;
  constexpr std::size_t n = 1000;
  std::vector<std::string> errors(world);
  std::vector<std::thread> ranks;
  for (int r = 0; r < world; ++r)
    ranks.emplace_back([&, r] {
      try {
        auto comm = TcpComm::start(launchOf(r, world, port), std::chrono::seconds(20));
        EXPECT_EQ(comm->rank(), r);
        EXPECT_EQ(comm->worldSize(), world);
        for (int dst = 0; dst < world; ++dst)
          for (int k = 0; k < 3; ++k) // three messages per pair and tag keep their order
            comm->send(dst, 7, Bytes(100000 + k, std::uint8_t(16 * r + k)));
        for (int src = 0; src < world; ++src)
          for (int k = 0; k < 3; ++k)
            EXPECT_EQ(comm->recv(src, 7, std::chrono::seconds(10)),
                      Bytes(100000 + k, std::uint8_t(16 * src + k)));
        std::vector<float> v(n);
        for (std::size_t i = 0; i < n; ++i)
          v[i] = static_cast<float>(r + 1) * 0.25f * static_cast<float>(i);
        comm->allReduceSum({0, 1, 2}, 9, v.data(), n, std::chrono::seconds(10));
        for (std::size_t i = 0; i < n; ++i) // 0.25 i (1 + 2 + 3), exact in fp32 for these i
          ASSERT_EQ(v[i], 1.5f * static_cast<float>(i)) << i;
        Bytes out;
        EXPECT_EQ(comm->recvAny({{(r + 1) % world, 11}}, out, std::chrono::milliseconds(50)), -1);
        comm->send((r + 1) % world, 11, Bytes{std::uint8_t(r)});
        EXPECT_EQ(comm->recvAny({{(r + world - 1) % world, 11}}, out, std::chrono::seconds(10)), 0);
        EXPECT_EQ(out, Bytes{std::uint8_t((r + world - 1) % world)});
        EXPECT_THROW(comm->recv(0, 99, std::chrono::milliseconds(30)), CommTimeout);
        comm->finish(std::chrono::seconds(10));
      } catch (const std::exception &e) {
        errors[r] = e.what();
      }
    });
  for (auto &t : ranks)
    t.join();
  for (int r = 0; r < world; ++r)
    EXPECT_EQ(errors[r], "") << "rank " << r;
}

} // namespace
} // namespace disagmoe
