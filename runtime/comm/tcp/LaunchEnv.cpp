// torchrun / Slurm launch variables (LaunchEnv.h).
#include "runtime/comm/tcp/LaunchEnv.h"

#include <cerrno>
#include <cstdlib>

namespace disagmoe {
namespace {

using Env = std::map<std::string, std::string>;

const std::string *lookup(const Env &env, const std::string &name) {
  auto it = env.find(name);
  return it == env.end() || it->second.empty() ? nullptr : &it->second;
}

// A decimal integer in [lo, hi]; anything else names the variable.
int integer(const Env &env, const std::string &name, long lo, long hi, const std::string &why) {
  const std::string &v = *lookup(env, name);
  errno = 0;
  char *end = nullptr;
  const long n = std::strtol(v.c_str(), &end, 10);
  const bool digits = v.find_first_not_of("0123456789") == std::string::npos;
  if (!digits || errno != 0 || *end != '\0' || n < lo || n > hi)
    throw LaunchEnvError(name + "=\"" + v + "\" is not " + why);
  return static_cast<int>(n);
}

constexpr long kMaxRanks = 1L << 30;

} // namespace

std::string StoreLaunch::endpoint() const {
  return std::string(agentStore ? "MASTER_ADDR:MASTER_PORT+1 = " : "MASTER_ADDR:MASTER_PORT = ") +
         masterAddr + ":" + std::to_string(rendezvousPort());
}

std::optional<StoreLaunch> storeLaunchFrom(const Env &env) {
  if (lookup(env, "OMPI_COMM_WORLD_RANK"))
    return std::nullopt;
  StoreLaunch l;
  std::string localVar;
  if (lookup(env, "RANK")) {
    l.rankVar = "RANK";
    l.worldVar = "WORLD_SIZE";
    localVar = "LOCAL_RANK";
  } else if (lookup(env, "SLURM_PROCID") && lookup(env, "MASTER_ADDR")) {
    l.rankVar = "SLURM_PROCID";
    l.worldVar = "SLURM_NTASKS";
    localVar = "SLURM_LOCALID";
  } else {
    return std::nullopt;
  }
  const std::string launch =
      " (a torchrun-style launch sets RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT)";
  l.rank = integer(env, l.rankVar, 0, kMaxRanks - 1, "a rank (a decimal integer >= 0)");
  if (!lookup(env, l.worldVar))
    throw LaunchEnvError(l.rankVar + " is set but " + l.worldVar + " is not" + launch);
  l.worldSize = integer(env, l.worldVar, 1, kMaxRanks, "a world size (a decimal integer >= 1)");
  if (l.rank >= l.worldSize)
    throw LaunchEnvError(l.rankVar + "=" + std::to_string(l.rank) + " is not below " + l.worldVar +
                         "=" + std::to_string(l.worldSize));
  if (!lookup(env, "MASTER_ADDR"))
    throw LaunchEnvError(l.rankVar +
                         " is set but MASTER_ADDR is not: the ranks meet at "
                         "MASTER_ADDR:MASTER_PORT" +
                         launch);
  l.masterAddr = *lookup(env, "MASTER_ADDR");
  if (lookup(env, "MASTER_PORT"))
    l.masterPort = integer(env, "MASTER_PORT", 1, 65535, "a TCP port (1 to 65535)");
  if (const std::string *agent = lookup(env, "TORCHELASTIC_USE_AGENT_STORE")) {
    l.agentStore = *agent == "True" || *agent == "true" || *agent == "1";
    if (l.agentStore && l.masterPort == 65535)
      throw LaunchEnvError("MASTER_PORT=65535: with TORCHELASTIC_USE_AGENT_STORE=" + *agent +
                           " (torchrun's store holds MASTER_PORT) the ranks meet on MASTER_PORT + "
                           "1, which is not a port");
  }
  if (lookup(env, localVar)) {
    l.localRank = integer(env, localVar, 0, kMaxRanks - 1, "a local rank (a decimal integer >= 0)");
    if (l.localRank >= l.worldSize)
      throw LaunchEnvError(localVar + "=" + std::to_string(l.localRank) + " is not below " +
                           l.worldVar + "=" + std::to_string(l.worldSize));
  }
  return l;
}

std::optional<StoreLaunch> storeLaunchFromEnvironment() {
  Env env;
  for (const char *name :
       {"OMPI_COMM_WORLD_RANK", "RANK", "WORLD_SIZE", "LOCAL_RANK", "SLURM_PROCID", "SLURM_NTASKS",
        "SLURM_LOCALID", "MASTER_ADDR", "MASTER_PORT", "TORCHELASTIC_USE_AGENT_STORE"})
    if (const char *v = std::getenv(name))
      env[name] = v;
  return storeLaunchFrom(env);
}

} // namespace disagmoe
