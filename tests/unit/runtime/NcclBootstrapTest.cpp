// Host logic of the nccl comm backend (runtime/comm/nccl/NcclBootstrap.h): runs in every build,
// with or without CUDA and NCCL.
#include "runtime/comm/nccl/NcclBootstrap.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

using namespace disagmoe;
using namespace disagmoe::nccl;

namespace {

// Sets the launcher variables for one test and restores them after.
class ScopedEnv {
public:
  using Vars = std::vector<std::pair<std::string, std::string>>;
  explicit ScopedEnv(const Vars &values) {
    for (const char *name : {"OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID", "LOCAL_RANK"}) {
      const char *v = std::getenv(name);
      saved_[name] = v ? std::optional<std::string>(v) : std::nullopt;
      unsetenv(name);
    }
    for (const auto &[name, v] : values)
      setenv(name.c_str(), v.c_str(), 1);
  }
  ~ScopedEnv() {
    for (const auto &[name, v] : saved_)
      if (v)
        setenv(name.c_str(), v->c_str(), 1);
      else
        unsetenv(name.c_str());
  }

private:
  std::map<std::string, std::optional<std::string>> saved_;
};

std::string errorOf(const std::function<void()> &fn) {
  try {
    fn();
  } catch (const CommError &e) {
    return e.what();
  }
  return "no error";
}

UniqueId sampleId() {
  UniqueId id;
  for (size_t i = 0; i < id.size(); ++i)
    id[i] = static_cast<uint8_t>(i * 37 + 11);
  return id;
}

} // namespace

TEST(NcclBootstrap, LocalRankFromTheLaunchersVariablesInOrder) {
  {
    ScopedEnv env(ScopedEnv::Vars{});
    EXPECT_EQ(localRankFromEnvironment(), -1);
  }
  {
    ScopedEnv env(ScopedEnv::Vars{{"LOCAL_RANK", "5"}});
    EXPECT_EQ(localRankFromEnvironment(), 5);
  }
  {
    ScopedEnv env(ScopedEnv::Vars{{"SLURM_LOCALID", "2"}, {"LOCAL_RANK", "5"}});
    EXPECT_EQ(localRankFromEnvironment(), 2);
  }
  {
    ScopedEnv env(ScopedEnv::Vars{
        {"OMPI_COMM_WORLD_LOCAL_RANK", "3"}, {"SLURM_LOCALID", "2"}, {"LOCAL_RANK", "5"}});
    EXPECT_EQ(localRankFromEnvironment(), 3);
  }
  {
    ScopedEnv env(ScopedEnv::Vars{{"OMPI_COMM_WORLD_LOCAL_RANK", ""}, {"SLURM_LOCALID", "7"}});
    EXPECT_EQ(localRankFromEnvironment(), 7); // an empty variable counts as unset
  }
  {
    ScopedEnv env(ScopedEnv::Vars{{"SLURM_LOCALID", "1x"}});
    EXPECT_EQ(errorOf([] { localRankFromEnvironment(); }),
              "nccl comm: SLURM_LOCALID=\"1x\" is not a local rank (an integer >= 0)");
  }
  {
    ScopedEnv env(ScopedEnv::Vars{{"LOCAL_RANK", "-1"}});
    EXPECT_EQ(errorOf([] { localRankFromEnvironment(); }),
              "nccl comm: LOCAL_RANK=\"-1\" is not a local rank (an integer >= 0)");
  }
}

TEST(NcclBootstrap, DeviceIsLocalRankModuloDeviceCount) {
  // 8 ranks per node on 8 GPUs: one each; 16 on 8: two per GPU, round-robin.
  for (int local = 0; local < 16; ++local)
    EXPECT_EQ(selectDevice(local, 100 + local, 8), local % 8);
  EXPECT_EQ(selectDevice(-1, 13, 4), 1); // no launcher variable: the global rank
  EXPECT_EQ(
      errorOf([] { selectDevice(0, 3, 0); }),
      "--comm nccl needs a CUDA device on every rank: cudaGetDeviceCount returned 0 on rank 3");
}

TEST(NcclBootstrap, UniqueIdRoundTripsAndRejectsDamage) {
  const UniqueId id = sampleId();
  const int version = 22809;
  const Bytes b = serialiseUniqueId(id, version);
  ASSERT_EQ(b.size(), kSerialisedIdBytes);
  EXPECT_EQ(std::string(b.begin(), b.begin() + 8), "DMNCCLID");
  EXPECT_EQ(parseUniqueId(b, version, 1), id);

  Bytes flipped = b;
  flipped[12 + 40] ^= 0x01; // one id bit
  EXPECT_EQ(errorOf([&] { parseUniqueId(flipped, version, 2); }),
            "rank 2: NCCL bootstrap id from rank 0: hash mismatch (corrupted in transit)");
  EXPECT_EQ(errorOf([&] { parseUniqueId(b, 22703, 4); }),
            "rank 4: NCCL bootstrap id from rank 0: made by NCCL version code 22809, this rank "
            "runs 22703 "
            "(every rank must use the same NCCL)");
  EXPECT_EQ(errorOf([&] { parseUniqueId(Bytes(b.begin(), b.end() - 1), version, 1); }),
            "rank 1: NCCL bootstrap id from rank 0: 147 bytes, expected 148");
  Bytes magic = b;
  magic[0] = 'X';
  EXPECT_EQ(errorOf([&] { parseUniqueId(magic, version, 1); }),
            "rank 1: NCCL bootstrap id from rank 0: not an id (bad magic)");
}

TEST(NcclBootstrap, HeaderCarriesTagAndSize) {
  const Header h{123456, (1ull << 40) + 7};
  const Bytes b = encodeHeader(h);
  ASSERT_EQ(b.size(), kHeaderBytes);
  const Header back = decodeHeader(b, 0, 1);
  EXPECT_EQ(back.tag, 123456);
  EXPECT_EQ(back.size, (1ull << 40) + 7);
  EXPECT_EQ(errorOf([&] { decodeHeader(Bytes(b.begin(), b.end() - 2), 3, 5); }),
            "rank 3: malformed message header from rank 5 (14 bytes, expected 16)");
  Bytes bad = b;
  bad[0] ^= 0xFF;
  EXPECT_EQ(errorOf([&] { decodeHeader(bad, 3, 5); }),
            "rank 3: malformed message header from rank 5 (bad magic)");
  Bytes negative = encodeHeader({-2, 0});
  EXPECT_EQ(errorOf([&] { decodeHeader(negative, 0, 2); }),
            "rank 0: malformed message header from rank 2 (negative tag -2)");
}

// Oracle: simulate blocking pairwise initialisation. Every rank works through its pairInitOrder;
// a pair completes only when it is at the head of both ranks' lists. The order is deadlock-free
// iff the simulation finishes; it must also build each unordered pair exactly once on each side.
TEST(NcclBootstrap, PairInitOrderNeverWaitsInACycle) {
  for (int world = 1; world <= 12; ++world) {
    std::vector<std::deque<int>> todo(static_cast<size_t>(world));
    for (int r = 0; r < world; ++r) {
      const std::vector<int> peers = pairInitOrder(r, world);
      ASSERT_EQ(static_cast<int>(peers.size()), world - 1) << "world " << world << " rank " << r;
      todo[r].assign(peers.begin(), peers.end());
    }
    int built = 0;
    bool progress = true;
    while (progress) {
      progress = false;
      for (int r = 0; r < world; ++r) {
        if (todo[r].empty())
          continue;
        const int p = todo[r].front();
        ASSERT_NE(p, r);
        if (!todo[p].empty() && todo[p].front() == r) {
          todo[r].pop_front();
          todo[p].pop_front();
          ++built;
          progress = true;
        }
      }
    }
    for (int r = 0; r < world; ++r)
      EXPECT_TRUE(todo[r].empty())
          << "world " << world << ": rank " << r << " waits on rank " << todo[r].front();
    EXPECT_EQ(built, world * (world - 1) / 2) << "world " << world;
  }
}
