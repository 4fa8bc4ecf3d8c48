// The product version and the git commit a binary was built from: `--version` of disagmoe,
// disagmoe-run and disagmoe-opt, and the `producer` every training checkpoint records
// (runtime/train/Checkpoint.h). The version is CMake's project(disagmoe VERSION ...); the commit is
// read at build time (runtime/version/VersionStamp.cmake, rerun by every build, which recompiles
// only when the commit changed). Plain C++ without exceptions: the compiler's tools call it too.
#pragma once

#include <string>

namespace disagmoe {

/// The product version, "0.6.0" (the top-level CMakeLists.txt's project(... VERSION ...)).
const char *productVersion();

/// `git rev-parse --short=7 HEAD` of the source tree at build time (7 or more hex digits), or
/// "unknown" when it was built outside a git checkout or without git.
const char *buildCommit();

/// "<tool> 0.6.0 (commit abc1234)": what `--version` prints.
std::string versionLine(const std::string &tool);

} // namespace disagmoe
