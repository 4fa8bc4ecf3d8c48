//===- InputBinding.h - graph inputs besides token ids, outputs besides logits -*- C++ -*-===//
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
//     transformers computes when position_ids is None: cache_position = arange(past = 0, seq));
//   past_key_values.<layer>.key|value [batch, kv_heads, past, head_dim] (float, float16, bfloat16;
//     optimum's text-generation-with-past, transformers' DynamicCache): an empty cache, past = 0
//     (training runs every sequence from its first token). The cache's append, torch.cat([past,
//     new], dim=-2), then folds away (normalize's DropEmptyConcatInput) and the mask over
//     past + seq keys is the causal one; kv_heads and head_dim must be declared static.
// Any other input, or one whose declared shape needs another length (a mask longer than the
// sequence, i.e. padding, or a 4-D mask), is refused in one line naming it.
// The cache's outputs, present.<layer>.key|value, are dropped (dropKvCacheOutputs): a training
// plan computes the logits only.
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

/// Drops the KV-cache outputs (present.<layer>.key|value, as optimum names them) from `outputs`,
/// the graph outputs of model `path`: true with a one-line `note` naming them (empty if there were
/// none); false with a one-line `error` when no output is left (no logits) or more than one is
/// (a plan computes one output, the logits), naming every output left.
bool dropKvCacheOutputs(const std::string &path, std::vector<onnxfe::ValueInfo> &outputs,
                        std::string &note, std::string &error);

} // namespace disagmoe

#endif
