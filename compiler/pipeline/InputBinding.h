//===- InputBinding.h - the graph inputs besides token ids, at the compiled shape -*- C++ -*-===//
//
// Hugging Face exports usually take `input_ids, attention_mask[, position_ids]` (optimum's
// text-generation task; transformers' forward signature). A plan runs [batch, seq] token ids and
// nothing else: every sequence is seq tokens long, with no padding. At that shape the two extra
// inputs have one value each, which the compiler binds as constants before folding, so the masks
// and positions the graph computes from them fold like any other (docs/architecture.md, "Raise:
// normalize, fold, match"):
//   attention_mask [batch, seq] (int64, int32, bool, float): all ones (every token attends;
//     transformers' convention: 1 = keep, 0 = padding);
//   position_ids [1 or batch, seq] or [seq] (int64, int32): 0 .. seq-1 along the last axis (what
//     transformers computes when position_ids is None: cache_position = arange(past = 0, seq)).
// Any other input, or one whose declared shape needs another length (a mask longer than the
// sequence, i.e. padding or a KV cache, or a 4-D mask), is refused in one line naming it.
//
//===----------------------------------------------------------------------===//
#ifndef DISAGMOE_COMPILER_PIPELINE_INPUTBINDING_H
#define DISAGMOE_COMPILER_PIPELINE_INPUTBINDING_H

#include "frontends/onnx/OnnxLoader.h"

#include <cstdint>
#include <string>
#include <vector>

namespace disagmoe {

/// Binds the graph input `declared` of model `path` at token ids of dims `tokenDims` ([batch,
/// seq]): true with `value` (its element type, dims [batch | 1, seq] or [seq]) and a one-line
/// `note` saying what it was bound to; false with a one-line `error` naming the file and input.
bool bindExtraInput(const std::string &path, const onnxfe::ValueInfo &declared,
                    const std::vector<int64_t> &tokenDims, onnxfe::TensorData &value,
                    std::string &note, std::string &error);

} // namespace disagmoe

#endif
