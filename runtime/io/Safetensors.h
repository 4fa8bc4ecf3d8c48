// safetensors files (https://github.com/huggingface/safetensors, "Format"): the checkpoint format
// of the training loop (runtime/train/Checkpoint.h) and of Hugging Face weights
// (runtime/train/HfWeights.h, HfExport.h).
//
//   8 bytes      N, unsigned little-endian: the header's length in bytes
//   N bytes      JSON header, UTF-8: {"<name>": {"dtype": "F32", "shape": [..],
//                "data_offsets": [b, e]}, ..., "__metadata__": {"<key>": "<string value>", ...}},
//                padded with spaces
//   the rest     the byte buffer; tensor <name> is bytes [b, e) of it, row-major little-endian
//
// Checkpoints hold F32 only (readSafetensors refuses any other dtype). Hugging Face files are read
// header first (readSafetensorsHeader: F32, BF16 or F16 entries) and tensor by tensor
// (readSafetensorsElements), converted to fp32 exactly; the writer stores F32, or BF16 rounded to
// nearest even (as torch's .to(torch.bfloat16)).
// Every error is a SafetensorsError whose message starts with the file path and names the field.
#pragma once

#include "runtime/tensor/Tensor.h"

#include <cstdint>
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

/// The element types this reader and writer know.
enum class SafetensorsDtype { F32, BF16, F16 };
/// "F32", "BF16", "F16" (the spec's spellings).
const char *toString(SafetensorsDtype dtype);
/// Bytes per element: 4, 2, 2.
uint64_t elementBytes(SafetensorsDtype dtype);

struct SafetensorsFile {
  std::map<std::string, Tensor> tensors;
  std::map<std::string, std::string>
      metadata; ///< "__metadata__" (string values only, per the spec)
};

/// Writes `tensors` in the given order (data offsets ascending, no gaps) and `metadata`,
/// atomically (AtomicFile.h), stored as `dtype` (BF16: each fp32 value rounded to nearest even,
/// NaN kept a NaN). Throws SafetensorsError "PATH: <why>".
void writeSafetensors(const std::string &path,
                      const std::vector<std::pair<std::string, const Tensor *>> &tensors,
                      const std::map<std::string, std::string> &metadata,
                      SafetensorsDtype dtype = SafetensorsDtype::F32);

/// Reads and checks a whole file: header length within the file, valid JSON object, every
/// entry with dtype "F32", a non-negative shape and data_offsets [b, e] with e - b = 4 * numel,
/// inside the buffer, the entries covering the buffer without overlap; metadata values strings.
SafetensorsFile readSafetensors(const std::string &path);

/// One entry of a header.
struct SafetensorsEntry {
  SafetensorsDtype dtype = SafetensorsDtype::F32;
  std::vector<int64_t> shape;
  uint64_t begin = 0, end = 0; ///< data_offsets, bytes into the data buffer
};

/// A file's header alone (the tensors stay on disk until read).
struct SafetensorsHeader {
  std::string path;
  uint64_t dataStart = 0; ///< byte offset of the data buffer in the file (8 + N)
  std::map<std::string, SafetensorsEntry> tensors;
  std::map<std::string, std::string> metadata;
};

/// Reads and checks the header as readSafetensors does, accepting F32, BF16 and F16 entries
/// (another dtype is refused naming the tensor). Throws SafetensorsError.
SafetensorsHeader readSafetensorsHeader(const std::string &path);

/// Elements [first, first + count) (row-major) of tensor `name`, converted to fp32 (exact for
/// BF16 and F16). Throws SafetensorsError naming the tensor when it is absent, the range lies
/// outside it or the file is shorter than its header says.
std::vector<float> readSafetensorsElements(const SafetensorsHeader &header, const std::string &name,
                                           uint64_t first, uint64_t count);

/// fp32 -> bf16 bits, round to nearest even (NaN stays a quiet NaN); bf16 / fp16 bits -> fp32.
uint16_t floatToBf16(float value);
float bf16ToFloat(uint16_t bits);
float f16ToFloat(uint16_t bits);

} // namespace disagmoe
