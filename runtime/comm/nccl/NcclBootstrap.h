// Host-side pieces of the `nccl` comm backend that need neither CUDA nor NCCL, so that every build
// (also one without CUDA) compiles and tests them: the launcher's local rank, the device choice,
// the serialised NCCL unique id that rank 0 broadcasts over MPI, the control header that announces
// each message, and the order in which ranks build their per-direction communicators.
#pragma once

#include "runtime/comm/Comm.h"

#include <array>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace disagmoe::nccl {

/// Bytes of an ncclUniqueId (NCCL_UNIQUE_ID_BYTES in nccl.h; NcclComm.cpp static_asserts it).
constexpr std::size_t kUniqueIdBytes = 128;
using UniqueId = std::array<std::uint8_t, kUniqueIdBytes>;

/// The node-local rank the launcher gave this process: the first of OMPI_COMM_WORLD_LOCAL_RANK,
/// SLURM_LOCALID and LOCAL_RANK that is set, or -1 when none is. Throws CommError naming the
/// variable when it is set to anything but an integer in [0, 2^30).
int localRankFromEnvironment();

/// The CUDA device of a rank: localRank mod deviceCount (ranks of a node spread over its GPUs in
/// order; more ranks than GPUs share them round-robin). localRank -1 (no launcher variable) uses
/// the global rank instead. Throws CommError "--comm nccl needs a CUDA device on every rank:
/// cudaGetDeviceCount returned N on rank R" when deviceCount <= 0.
int selectDevice(int localRank, int globalRank, int deviceCount);

/// The bootstrap id as rank 0 broadcasts it: "DMNCCLID", NCCL's version code (int32 little-endian,
/// NCCL_VERSION_CODE), the 128 id bytes, and their FNV-1a 64-bit hash. 148 bytes.
constexpr std::size_t kSerialisedIdBytes = 8 + 4 + kUniqueIdBytes + 8;
Bytes serialiseUniqueId(const UniqueId &id, int ncclVersion);

/// The inverse of serialiseUniqueId. Throws CommError "rank R: NCCL bootstrap id from rank 0: ..."
/// for a wrong length, magic or hash, or a version other than `ncclVersion` (a rank linked
/// against another NCCL would hang in ncclCommInitRank instead of failing).
UniqueId parseUniqueId(const Bytes &bytes, int ncclVersion, int rank);

/// The control message (over MPI) that announces one payload (over NCCL) from the sender to the
/// receiver: "size first, then payload". 16 bytes: magic 0x4E43484D ("MHCN"), the tag (int32),
/// the payload size in bytes (uint64). Little-endian host order (both ends run the same binary).
struct Header {
  int tag = 0;
  std::uint64_t size = 0;
};
constexpr std::size_t kHeaderBytes = 16;
Bytes encodeHeader(const Header &h);
/// Throws CommError "rank R: malformed message header from rank S (...)" for a wrong length,
/// magic or a negative tag.
Header decodeHeader(const Bytes &bytes, int rank, int src);

/// The peers with which `rank` builds its two per-direction communicators (rank -> peer,
/// peer -> rank), in the order it must do so: pairs (a, b), a < b, in lexicographic order. Every
/// rank walks the global pair order, so the first pair not yet built always has both of its ranks
/// waiting on it and the blocking ncclCommInitRank calls never wait in a cycle.
std::vector<int> pairInitOrder(int rank, int worldSize);

} // namespace disagmoe::nccl
