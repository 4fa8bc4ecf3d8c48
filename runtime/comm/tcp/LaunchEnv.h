// The launch variables of a process started without mpirun, one process per rank: what
// `torchrun --nproc-per-node N` sets (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT), or
// Slurm's srun (SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID) together with MASTER_ADDR. Such
// processes find each other through a TCP rendezvous at MASTER_ADDR:MASTER_PORT
// (TcpRendezvous.h) instead of MPI's runtime.
#pragma once

#include "runtime/comm/Comm.h"

#include <map>
#include <optional>
#include <string>

namespace disagmoe {

/// Bad launch variables (a non-number, RANK >= WORLD_SIZE, RANK without MASTER_ADDR, ...): the
/// message is one line naming the variable and its value.
class LaunchEnvError : public CommError {
public:
  using CommError::CommError;
};

struct StoreLaunch {
  int rank = 0;       // global rank, [0, worldSize)
  int worldSize = 1;  // processes in the job
  int localRank = -1; // rank within the node (picks the CUDA device); -1 when not given
  std::string masterAddr;
  int masterPort = 29500; // torch's default, [1, 65535]
  // torchrun's static rendezvous (TORCHELASTIC_USE_AGENT_STORE=True) keeps its agent's TCPStore
  // on MASTER_PORT, so the ranks meet on the port after it; else on MASTER_PORT itself.
  bool agentStore = false;
  int rendezvousPort() const { return agentStore ? masterPort + 1 : masterPort; }
  // Variable names, for messages: "RANK"/"WORLD_SIZE" or "SLURM_PROCID"/"SLURM_NTASKS".
  std::string rankVar, worldVar;
  /// "MASTER_ADDR:MASTER_PORT = host:port" (with the agent store "MASTER_ADDR:MASTER_PORT+1 =
  /// host:port+1"), as every rendezvous message names the endpoint.
  std::string endpoint() const;
};

/// The variables of `env` (name -> value; an empty value counts as unset) as a store launch:
///   - none when OMPI_COMM_WORLD_RANK is set (mpirun: MPI's own runtime connects the ranks), and
///     when neither RANK nor SLURM_PROCID is set, and for SLURM_PROCID without MASTER_ADDR (srun
///     with OpenMPI's PMIx support: MPI's runtime again);
///   - RANK set: RANK, WORLD_SIZE and MASTER_ADDR required, MASTER_PORT (default 29500) and
///     LOCAL_RANK optional;
///   - else SLURM_PROCID with MASTER_ADDR: SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID (optional),
///     MASTER_PORT as above;
///   - TORCHELASTIC_USE_AGENT_STORE=True (torchrun's static rendezvous) sets agentStore.
/// Throws LaunchEnvError naming the variable for a value that is not a decimal integer in range,
/// RANK >= WORLD_SIZE, LOCAL_RANK >= WORLD_SIZE, WORLD_SIZE < 1, a port outside [1, 65535], a
/// required variable missing.
std::optional<StoreLaunch> storeLaunchFrom(const std::map<std::string, std::string> &env);

/// storeLaunchFrom over this process's environment.
std::optional<StoreLaunch> storeLaunchFromEnvironment();

} // namespace disagmoe
