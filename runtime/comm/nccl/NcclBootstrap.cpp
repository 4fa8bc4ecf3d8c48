// CUDA-free nccl pieces: local rank, device, unique-id bytes, control header (NcclBootstrap.h).
#include "runtime/comm/nccl/NcclBootstrap.h"

#include <cstdlib>
#include <cstring>

namespace disagmoe::nccl {
namespace {

constexpr char kIdMagic[8] = {'D', 'M', 'N', 'C', 'C', 'L', 'I', 'D'};
constexpr std::uint32_t kHeaderMagic = 0x4E43484D;

std::uint64_t fnv1a(const std::uint8_t *p, std::size_t n) {
  std::uint64_t h = 14695981039346656037ull;
  for (std::size_t i = 0; i < n; ++i) {
    h ^= p[i];
    h *= 1099511628211ull;
  }
  return h;
}

} // namespace

int localRankFromEnvironment() {
  for (const char *name : {"OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID", "LOCAL_RANK"}) {
    const char *v = std::getenv(name);
    if (!v || !*v)
      continue;
    char *end = nullptr;
    const long r = std::strtol(v, &end, 10);
    if (*end != '\0' || r < 0 || r >= (1L << 30))
      throw CommError(std::string("nccl comm: ") + name + "=\"" + v +
                      "\" is not a local rank (an integer >= 0)");
    return static_cast<int>(r);
  }
  return -1;
}

int selectDevice(int localRank, int globalRank, int deviceCount) {
  if (deviceCount <= 0)
    throw CommError("--comm nccl needs a CUDA device on every rank: cudaGetDeviceCount returned " +
                    std::to_string(deviceCount) + " on rank " + std::to_string(globalRank));
  const int r = localRank >= 0 ? localRank : globalRank;
  return r % deviceCount;
}

Bytes serialiseUniqueId(const UniqueId &id, int ncclVersion) {
  Bytes b(kSerialisedIdBytes);
  std::memcpy(b.data(), kIdMagic, 8);
  const std::int32_t v = ncclVersion;
  std::memcpy(b.data() + 8, &v, 4);
  std::memcpy(b.data() + 12, id.data(), kUniqueIdBytes);
  const std::uint64_t h = fnv1a(id.data(), kUniqueIdBytes);
  std::memcpy(b.data() + 12 + kUniqueIdBytes, &h, 8);
  return b;
}

UniqueId parseUniqueId(const Bytes &b, int ncclVersion, int rank) {
  const std::string what = "rank " + std::to_string(rank) + ": NCCL bootstrap id from rank 0: ";
  if (b.size() != kSerialisedIdBytes)
    throw CommError(what + std::to_string(b.size()) + " bytes, expected " +
                    std::to_string(kSerialisedIdBytes));
  if (std::memcmp(b.data(), kIdMagic, 8) != 0)
    throw CommError(what + "not an id (bad magic)");
  std::int32_t v = 0;
  std::memcpy(&v, b.data() + 8, 4);
  if (v != ncclVersion)
    throw CommError(what + "made by NCCL version code " + std::to_string(v) + ", this rank runs " +
                    std::to_string(ncclVersion) + " (every rank must use the same NCCL)");
  UniqueId id;
  std::memcpy(id.data(), b.data() + 12, kUniqueIdBytes);
  std::uint64_t h = 0;
  std::memcpy(&h, b.data() + 12 + kUniqueIdBytes, 8);
  if (h != fnv1a(id.data(), kUniqueIdBytes))
    throw CommError(what + "hash mismatch (corrupted in transit)");
  return id;
}

Bytes encodeHeader(const Header &h) {
  Bytes b(kHeaderBytes);
  const std::int32_t tag = h.tag;
  std::memcpy(b.data(), &kHeaderMagic, 4);
  std::memcpy(b.data() + 4, &tag, 4);
  std::memcpy(b.data() + 8, &h.size, 8);
  return b;
}

Header decodeHeader(const Bytes &b, int rank, int src) {
  const std::string what = "rank " + std::to_string(rank) +
                           ": malformed message header from rank " + std::to_string(src) + " (";
  if (b.size() != kHeaderBytes)
    throw CommError(what + std::to_string(b.size()) + " bytes, expected 16)");
  std::uint32_t magic = 0;
  std::memcpy(&magic, b.data(), 4);
  if (magic != kHeaderMagic)
    throw CommError(what + "bad magic)");
  Header h;
  std::int32_t tag = 0;
  std::memcpy(&tag, b.data() + 4, 4);
  std::memcpy(&h.size, b.data() + 8, 8);
  if (tag < 0)
    throw CommError(what + "negative tag " + std::to_string(tag) + ")");
  h.tag = tag;
  return h;
}

std::vector<int> pairInitOrder(int rank, int worldSize) {
  std::vector<int> peers;
  for (int a = 0; a < worldSize; ++a)
    for (int b = a + 1; b < worldSize; ++b)
      if (a == rank)
        peers.push_back(b);
      else if (b == rank)
        peers.push_back(a);
  return peers;
}

} // namespace disagmoe::nccl
