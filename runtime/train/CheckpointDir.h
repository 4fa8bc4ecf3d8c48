// Step-numbered checkpoints in one directory, as Megatron-LM and torchtitan keep them
// (docs/training.md, "Checkpoints"):
//
//   DIR/step-00000010.safetensors   one checkpoint per save (Checkpoint.h's file format); the
//                                   step (optimizer steps taken) in at least 8 decimal digits
//   DIR/latest                      one line, the file name of the newest complete checkpoint
//                                   ("step-00000010.safetensors\n"), replaced atomically (a
//                                   temporary file beside it, then a rename) after that
//                                   checkpoint's own rename
//
// A save therefore goes: the checkpoint file (written atomically by saveCheckpoint), then
// `latest`, then pruneCheckpoints deletes the older step files beyond the newest `keep`. A crash at
// any point leaves `latest` naming a complete file. Only files named step-<digits>.safetensors are
// ever deleted, and only those at a lower step than the one just written (a directory that holds
// later steps of another run keeps them).
// Errors: CheckpointError "<file>: <what>".
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace disagmoe::train {

/// "step-00000010.safetensors" for step 10 (printf "%08lld": more digits past 99999999).
std::string checkpointFileName(int64_t step);

/// Replaces DIR/latest by "<fileName>\n" atomically. Throws CheckpointError when DIR/latest exists
/// and is not a regular file (a symlink, FIFO, ...) or cannot be written.
void writeLatest(const std::string &dir, const std::string &fileName);

/// The checkpoint file `path` names for --resume: a file is itself; a directory is DIR/<the name
/// in DIR/latest>. Throws CheckpointError: "DIR/latest: missing (DIR holds no complete
/// checkpoint)", "DIR/latest: names \"x/y\", not a file name in DIR", "DIR/latest: names
/// step-00000004.safetensors, which does not exist".
std::string resolveCheckpoint(const std::string &path);

/// Deletes the files DIR/step-<s>.safetensors with s < newestStep, except the keep - 1 highest
/// (so with DIR/checkpointFileName(newestStep) `keep` remain); keep <= 0 deletes nothing. Returns
/// the deleted file names, in ascending step order. Throws CheckpointError when a delete fails.
std::vector<std::string> pruneCheckpoints(const std::string &dir, int64_t keep, int64_t newestStep);

} // namespace disagmoe::train
