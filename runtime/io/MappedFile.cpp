// Read-only private file mappings (MappedFile.h).
#include "runtime/io/MappedFile.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <utility>

namespace disagmoe {

MappedFile::MappedFile(const std::string &path) : path_(path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    throw MappedFileError(path + ": cannot open: " + std::strerror(errno));
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    throw MappedFileError(path + ": cannot determine the file size: " + std::strerror(err));
  }
  size_ = static_cast<size_t>(st.st_size);
  if (size_ > 0) {
    void *p = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      const int err = errno;
      ::close(fd);
      throw MappedFileError(path + ": cannot map " + std::to_string(size_) +
                            " bytes: " + std::strerror(err));
    }
    data_ = static_cast<const unsigned char *>(p);
  }
  ::close(fd); // the mapping keeps the file open
}

MappedFile::~MappedFile() {
  if (data_)
    ::munmap(const_cast<unsigned char *>(data_), size_);
}

MappedFile::MappedFile(MappedFile &&other) noexcept
    : path_(std::move(other.path_)), data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)) {}

MappedFile &MappedFile::operator=(MappedFile &&other) noexcept {
  if (this != &other) {
    if (data_)
      ::munmap(const_cast<unsigned char *>(data_), size_);
    path_ = std::move(other.path_);
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

void MappedFile::release(size_t offset, size_t bytes) const {
  if (!data_ || offset >= size_)
    return;
  bytes = std::min(bytes, size_ - offset);
  static const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  const size_t begin = offset / page * page;
  const size_t end = std::min(size_, (offset + bytes + page - 1) / page * page);
  // Advice only: a failure leaves the pages resident, which is harmless.
  ::madvise(const_cast<unsigned char *>(data_) + begin, end - begin, MADV_DONTNEED);
}

} // namespace disagmoe
