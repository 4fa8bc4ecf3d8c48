# Writes OUT, the definitions of productVersion() and buildCommit() (runtime/version/Version.h):
# VERSION (CMake's PROJECT_VERSION) and `git rev-parse --short=7 HEAD` of SOURCE_DIR ("unknown"
# outside a git checkout or without git). Run by every build (a custom target); OUT is rewritten
# only when its text changes, so an unchanged commit recompiles nothing.
#   cmake -DVERSION=0.6.0 -DSOURCE_DIR=... -DGIT=/usr/bin/git -DOUT=.../VersionInfo.cpp -P VersionStamp.cmake
set(commit "unknown")
if(GIT)
  execute_process(COMMAND "${GIT}" -C "${SOURCE_DIR}" rev-parse --short=7 HEAD
                  OUTPUT_VARIABLE head OUTPUT_STRIP_TRAILING_WHITESPACE
                  RESULT_VARIABLE rc ERROR_QUIET)
  if(rc EQUAL 0 AND head MATCHES "^[0-9a-f]+$")
    set(commit "${head}")
  endif()
endif()
set(text "// Generated at build time by runtime/version/VersionStamp.cmake: do not edit.
#include \"runtime/version/Version.h\"

namespace disagmoe {

const char *productVersion() { return \"${VERSION}\"; }
const char *buildCommit() { return \"${commit}\"; }

} // namespace disagmoe
")
set(old "")
if(EXISTS "${OUT}")
  file(READ "${OUT}" old)
endif()
if(NOT old STREQUAL text)
  file(WRITE "${OUT}" "${text}")
endif()
