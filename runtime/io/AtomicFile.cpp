// Temporary file + rename (AtomicFile.h).
#include "runtime/io/AtomicFile.h"

#include "runtime/io/FileKind.h"

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <unistd.h>

namespace disagmoe {

std::string temporarySibling(const std::string &path) {
  static std::atomic<unsigned> counter{0};
  return path + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter++);
}

std::string writeFileAtomically(const std::string &path,
                                const std::function<void(std::ostream &)> &write) {
  if (std::string why = outputRefusal(path); !why.empty())
    return why;
  const std::string tmp = temporarySibling(path);
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out)
      return "cannot create temporary file " + tmp + ": " + std::strerror(errno);
    try {
      write(out);
    } catch (...) {
      out.close();
      std::remove(tmp.c_str());
      throw;
    }
    out.close();
    if (!out) {
      std::remove(tmp.c_str());
      return "write failed";
    }
  }
  // A path that became special meanwhile is still refused.
  if (std::string why = outputRefusal(path); !why.empty()) {
    std::remove(tmp.c_str());
    return why;
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    std::remove(tmp.c_str());
    return std::string("cannot rename the temporary file into place: ") + std::strerror(err);
  }
  return "";
}

} // namespace disagmoe
