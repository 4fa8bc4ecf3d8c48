// The rendezvous of a torchrun-style launch (LaunchEnv.h), the part of torch's TCPStore that a
// fixed world needs: rank 0 listens at MASTER_PORT, every other rank connects to
// MASTER_ADDR:MASTER_PORT and sends its rank, world size and a blob; once all WORLD_SIZE ranks
// arrived, rank 0 sends everyone every rank's blob and the address it saw the rank connect from.
// TcpComm exchanges its mesh's listening ports this way; NcclComm rank 0's ncclUniqueId.
//
// Never hangs: the whole rendezvous ends by `deadline`, else every rank fails with one line naming
// MASTER_ADDR:MASTER_PORT (rank 0: how many ranks arrived and which are missing; the others: that
// rank 0 could not be reached). A rank whose WORLD_SIZE differs from rank 0's, or a RANK that two
// processes share, fails the rendezvous on every rank, naming it.
//
// Handshake: rank 0 greets every connection at once with "DMGRV0" and the protocol version; a
// joining rank that reads anything else within 10 s (another server on MASTER_PORT, another
// build) fails in one line saying what it read, instead of waiting for the deadline. A rank that
// fails before the rendezvous (a bad plan, a refused option) reports its reason through it
// (reportFailure), and every other rank fails naming that rank and reason.
#pragma once

#include "runtime/comm/Comm.h"
#include "runtime/comm/tcp/LaunchEnv.h"
#include "runtime/comm/tcp/Sockets.h"

#include <string>
#include <vector>

namespace disagmoe::tcp {

struct Member {
  std::string host; // where rank 0 saw it connect from (rank 0 itself: MASTER_ADDR)
  Bytes blob;
};

/// The version of the handshake below; ranks of other versions refuse each other.
constexpr std::uint64_t kRendezvousVersion = 2;

/// Every rank's blob, indexed by rank (`mine` at launch.rank). Throws CommError (above); a peer's
/// reportFailure makes it "rendezvous at MASTER_ADDR:MASTER_PORT = h:p: rank R failed: REASON".
std::vector<Member> rendezvous(const StoreLaunch &launch, const Bytes &mine,
                               Clock::time_point deadline);

/// Takes part in the rendezvous only to tell the other ranks that this one failed with `reason`
/// (one line, without "disagmoe-run: "). Rank 0 answers every rank that arrives before `deadline`
/// with "rank 0 failed: REASON"; another rank's note makes rank 0 refuse the whole rendezvous
/// with "rank R failed: REASON". Never throws (when rank 0 cannot be reached the others meet their
/// own deadline).
void reportFailure(const StoreLaunch &launch, const std::string &reason,
                   Clock::time_point deadline);

} // namespace disagmoe::tcp
