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

/// Every rank's blob, indexed by rank (`mine` at launch.rank). Throws CommError (above).
std::vector<Member> rendezvous(const StoreLaunch &launch, const Bytes &mine,
                               Clock::time_point deadline);

} // namespace disagmoe::tcp
