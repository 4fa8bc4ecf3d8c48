// What a path names when it is not a regular file, so that readers and writers can refuse it by
// name instead of misbehaving: a writer's temp-file + rename would replace a device node, a FIFO or
// a symbolic link (whose target is then never written); opening a FIFO for writing blocks until a
// reader appears; a reader opening a directory sees a huge bogus size, and one opening a FIFO
// blocks. Header-only (POSIX lstat/stat) so that the runtime, runtime/sim and the compiler tools
// share it without a new library dependency.
#pragma once

#include <string>
#include <sys/stat.h>

namespace disagmoe {

/// The kind of PATH when it exists and is not a regular file: "a directory", "a symlink", "a FIFO",
/// "a device" (character or block), "a socket", or "a special file"; "" when PATH is a regular
/// file, does not exist, or cannot be examined (the open that follows then reports why).
/// followLinks = false (lstat) for outputs: a symlink itself is refused, never written through;
/// true (stat) for inputs: a symlink to a regular file is read as that file.
inline std::string nonRegularFileKind(const std::string &path, bool followLinks) {
  struct stat st;
  if ((followLinks ? ::stat(path.c_str(), &st) : ::lstat(path.c_str(), &st)) != 0)
    return "";
  if (S_ISREG(st.st_mode))
    return "";
  if (S_ISDIR(st.st_mode))
    return "a directory";
  if (S_ISLNK(st.st_mode))
    return "a symlink";
  if (S_ISFIFO(st.st_mode))
    return "a FIFO";
  if (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode))
    return "a device";
  if (S_ISSOCK(st.st_mode))
    return "a socket";
  return "a special file";
}

/// The refusal every writer gives for an existing non-regular output ("" when PATH may be written):
/// "exists and is not a regular file (a FIFO): refusing to replace it". Checked just before the
/// rename (or open) as well as up front, so a path that changed kind meanwhile is still refused.
inline std::string outputRefusal(const std::string &path) {
  const std::string kind = nonRegularFileKind(path, /*followLinks=*/false);
  return kind.empty() ? ""
                      : "exists and is not a regular file (" + kind + "): refusing to replace it";
}

/// The refusal every reader gives for a non-regular input ("" when PATH may be read; a missing file
/// is left to the open): "is a directory, expected a file" or "is not a regular file (a FIFO)".
inline std::string inputRefusal(const std::string &path) {
  const std::string kind = nonRegularFileKind(path, /*followLinks=*/true);
  if (kind.empty())
    return "";
  return kind == "a directory" ? "is a directory, expected a file"
                               : "is not a regular file (" + kind + ")";
}

/// The refusal for PATH as an output directory that will be created if missing ("" when it may be):
/// "-" is not a directory ("-: a directory of files is written here, not one file: standard output
/// cannot take it; give a directory name"), an existing PATH must be a directory, and only PATH's
/// last component is created: "its parent directory P does not exist (only the last component is
/// created)" or "P is not a directory". Issue 17: a misspelt parent used to be created silently.
inline std::string outputDirRefusal(const std::string &path) {
  if (path == "-")
    return "a directory of files is written here, not one file: standard output cannot take it; "
           "give a directory name";
  struct stat st;
  if (::stat(path.c_str(), &st) == 0)
    return S_ISDIR(st.st_mode) ? "" : "exists and is not a directory";
  std::string parent = path;
  while (parent.size() > 1 && parent.back() == '/')
    parent.pop_back();
  const size_t slash = parent.rfind('/');
  parent = slash == std::string::npos ? "." : slash == 0 ? "/" : parent.substr(0, slash);
  if (::stat(parent.c_str(), &st) != 0)
    return "its parent directory " + parent +
           " does not exist (only the last component is created)";
  if (!S_ISDIR(st.st_mode))
    return parent + " is not a directory";
  return "";
}

} // namespace disagmoe
