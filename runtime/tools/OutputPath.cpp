// Up-front mkstemp probes that disagmoe-run's output paths are writable (OutputPath.h).
#include "runtime/tools/OutputPath.h"

#include "runtime/io/FileKind.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <unistd.h>

namespace disagmoe::tools {
namespace {

namespace fs = std::filesystem;

[[noreturn]] void fail(const std::string &flag, const std::string &path, const std::string &why) {
  throw std::runtime_error(flag + " " + path + ": " + why);
}

// Creates and removes a probe file in `dir` (an existing directory).
void probe(const std::string &flag, const std::string &path, const fs::path &dir) {
  std::string name = (dir / ".disagmoe-write-probe-XXXXXX").string();
  const int fd = mkstemp(name.data());
  if (fd < 0)
    fail(flag, path, "cannot write in " + dir.string() + ": " + std::strerror(errno));
  close(fd);
  unlink(name.c_str());
}

} // namespace

void checkOutputFile(const std::string &flag, const std::string &path) {
  if (path == "-") // the report is on standard output
    fail(flag, path,
         "one file is written here, and standard output carries the run's report: give a file "
         "name");
  std::error_code ec;
  // lstat: a symlink is refused itself (the rename would replace it, and its target is never
  // written).
  const std::string kind = nonRegularFileKind(path, /*followLinks=*/false);
  if (kind == "a directory")
    fail(flag, path, "is a directory (expected a file name)");
  if (!kind.empty())
    fail(flag, path, outputRefusal(path));
  fs::path parent = fs::path(path).parent_path();
  if (parent.empty())
    parent = ".";
  if (!fs::exists(parent, ec))
    fail(flag, path, "directory " + parent.string() + " does not exist");
  if (!fs::is_directory(parent, ec))
    fail(flag, path, parent.string() + " is not a directory");
  probe(flag, path, parent);
}

void checkOutputDir(const std::string &flag, const std::string &path) {
  // "-", a non-directory, or a missing parent (only the last component is created: issue 17).
  if (const std::string why = outputDirRefusal(path); !why.empty())
    fail(flag, path, why);
  std::error_code ec;
  fs::path at = fs::path(path);
  if (!fs::exists(at, ec)) {
    at = at.parent_path();
    if (at.empty())
      at = ".";
  }
  probe(flag, path, at);
}

void checkNotSpecialFile(const std::string &flag, const std::string &path) {
  const std::string why = outputRefusal(path);
  if (!why.empty())
    fail(flag, path, why);
}

void checkInputFile(const std::string &flag, const std::string &path) {
  const std::string why = inputRefusal(path);
  if (!why.empty())
    fail(flag, path, why);
}

} // namespace disagmoe::tools
