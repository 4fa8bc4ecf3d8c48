// A whole file mapped read-only into memory (POSIX mmap, PROT_READ, MAP_PRIVATE), for inputs read
// piece by piece (the training loop's token files, runtime/train/TokenData.h): only the pages that
// are read become resident, and the kernel may drop them again at any time, so resident memory
// does not grow with the file. release() drops pages at once (a scan over the whole file keeps
// its resident memory at the scan's window).
// Errors: MappedFileError "PATH: cannot open: <strerror>", "PATH: cannot map N bytes: <strerror>".
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>

namespace disagmoe {

class MappedFileError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

class MappedFile {
public:
  /// Maps PATH (a regular file; the caller refuses directories and FIFOs by name first,
  /// FileKind.h). An empty file maps nothing: data() is nullptr and size() 0.
  explicit MappedFile(const std::string &path);
  MappedFile() = default; ///< maps nothing
  ~MappedFile();
  MappedFile(const MappedFile &) = delete;
  MappedFile &operator=(const MappedFile &) = delete;
  MappedFile(MappedFile &&other) noexcept;
  MappedFile &operator=(MappedFile &&other) noexcept;

  const unsigned char *data() const { return data_; }
  size_t size() const { return size_; } ///< bytes
  const std::string &path() const { return path_; }

  /// Drops the resident pages of bytes [offset, offset + bytes) (MADV_DONTNEED, widened to whole
  /// pages; a later read of them reads the file again). Clamped to the file.
  void release(size_t offset, size_t bytes) const;

private:
  std::string path_;
  const unsigned char *data_ = nullptr;
  size_t size_ = 0;
};

} // namespace disagmoe
