// The version line (Version.h); productVersion and buildCommit are generated at build time
// (VersionStamp.cmake writes VersionInfo.cpp into the build tree).
#include "runtime/version/Version.h"

namespace disagmoe {

std::string versionLine(const std::string &tool) {
  return tool + " " + productVersion() + " (commit " + buildCommit() + ")";
}

} // namespace disagmoe
