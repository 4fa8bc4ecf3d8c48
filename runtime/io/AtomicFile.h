// Whole-file writes that never leave a half-written file at the destination: the bytes go to a
// temporary file beside it (`PATH.tmp.<pid>.<n>`, same directory, so the rename stays on one file
// system), which is renamed onto PATH once complete (rename(2) replaces atomically). A destination
// that exists and is not a regular file (a symlink, FIFO, device, directory) is refused before the
// write and again just before the rename (FileKind.h, outputRefusal). Used by the safetensors
// writer (Safetensors.h), the checkpoint directory's `latest` pointer (CheckpointDir.h) and the
// Hugging Face export (HfExport.h).
#pragma once

#include <functional>
#include <ostream>
#include <string>

namespace disagmoe {

/// Writes PATH atomically with the bytes `write` puts on the stream it is given (binary mode).
/// Returns "" on success, else one reason without the path ("exists and is not a regular file (a
/// FIFO): refusing to replace it", "cannot create temporary file PATH.tmp.12.0: No space left on
/// device", "write failed", "cannot rename the temporary file into place: ..."); the temporary file
/// is removed on every failure. An exception thrown by `write` removes the temporary file and
/// propagates.
std::string writeFileAtomically(const std::string &path,
                                const std::function<void(std::ostream &)> &write);

/// A fresh name for a temporary sibling of PATH: "PATH.tmp.<pid>.<n>", n counting up per process.
std::string temporarySibling(const std::string &path);

} // namespace disagmoe
