// Up-front checks of disagmoe-run's output paths (--output, --trace, --op-times-out, --loss-log,
// --save-checkpoint, --save-weights, --save-grads), so a run that cannot write its results fails
// before it spends any work, naming the flag (the writers themselves still write to a temporary
// name and rename).
//
// Both checks create and remove a uniquely named probe file (mkstemp) in the directory that will
// receive the output: the only test that agrees with the later write on every file system
// (read-only mounts, /proc, permissions, root's bypass of mode bits).
// Errors: std::runtime_error "FLAG PATH: <why>" (is a directory, exists and is not a regular file
// (a symlink|a FIFO|a device|a socket): refusing to replace it, no such directory, not a directory,
// cannot write in DIR: <strerror>).
#pragma once

#include <string>

namespace disagmoe::tools {

/// PATH will be written as one file ("-" is refused: standard output carries the report): if it
/// exists it must be a regular file (checked with lstat: a symlink, FIFO, device or socket is
/// refused, never replaced or written through), and its parent directory must exist and be
/// writable.
void checkOutputFile(const std::string &flag, const std::string &path);

/// PATH will receive files: it must be a writable directory, or a missing one whose parent is a
/// writable directory (only the last component is created; outputDirRefusal in
/// runtime/io/FileKind.h). "-" is refused: a directory cannot go to standard output.
void checkOutputDir(const std::string &flag, const std::string &path);

/// PATH (a file inside an output directory, which need not exist yet) will be written: if it
/// exists it must be a regular file (lstat), else "exists and is not a regular file (a FIFO):
/// refusing to replace it". Used for --save-grads/--save-weights once the plan names the files.
void checkNotSpecialFile(const std::string &flag, const std::string &path);

/// PATH will be read (--input, --targets, --data, --resume, --op-times): if it exists it must be a
/// regular file or a symlink to one; a directory ("is a directory, expected a file") or a FIFO,
/// device or socket ("is not a regular file (a FIFO)") is refused. A missing file is left to the
/// reader, whose open names the error.
void checkInputFile(const std::string &flag, const std::string &path);

} // namespace disagmoe::tools
