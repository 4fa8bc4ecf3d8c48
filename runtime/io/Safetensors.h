// safetensors files (https://github.com/huggingface/safetensors, "Format"): the checkpoint format
// of the training loop (runtime/train/Checkpoint.h).
//
//   8 bytes      N, unsigned little-endian: the header's length in bytes
//   N bytes      JSON header, UTF-8: {"<name>": {"dtype": "F32", "shape": [..], "data_offsets": [b,
//   e]},
//                ..., "__metadata__": {"<key>": "<string value>", ...}}, padded with spaces
//   the rest     the byte buffer; tensor <name> is bytes [b, e) of it, row-major little-endian
//
// Only F32 tensors are written and read (the runtime's weights and AdamW moments are fp32).
// Every error is a SafetensorsError whose message starts with the file path and names the field.
#pragma once

#include "runtime/tensor/Tensor.h"

#include <map>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace disagmoe {

class SafetensorsError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

struct SafetensorsFile {
  std::map<std::string, Tensor> tensors;
  std::map<std::string, std::string>
      metadata; ///< "__metadata__" (string values only, per the spec)
};

/// Writes `tensors` in the given order (data offsets ascending, no gaps) and `metadata`,
/// atomically: a temporary file next to `path`, then a rename, so `path` is never half-written.
void writeSafetensors(const std::string &path,
                      const std::vector<std::pair<std::string, const Tensor *>> &tensors,
                      const std::map<std::string, std::string> &metadata);

/// Reads and checks a whole file: header length within the file, valid JSON object, every
/// entry with dtype "F32", a non-negative shape and data_offsets [b, e] with e - b = 4 * numel,
/// inside the buffer, the entries covering the buffer without overlap; metadata values strings.
SafetensorsFile readSafetensors(const std::string &path);

} // namespace disagmoe
