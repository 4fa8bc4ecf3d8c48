//===- WeightDtypes.h - which initializer element types compile -*- C++ -*-===//
//
// The plan computes in fp32 (docs/architecture.md, "Training semantics and numerics"). Initializers
// of an ONNX model are accepted by element type as follows:
//   float32: weights as they are;
//   float16, bfloat16: weights of a float16 / bfloat16 export (Hugging Face's model.to(dtype)),
//     kept in their stored dtype in the plan and widened exactly to fp32 by the runtime as it reads
//     them; the compile pipeline computes the whole export in fp32 on them (normalize-onnx's
//     WidenLowPrecision.cpp: the export's roundings of activations and constants to the dtype are
//     not performed), which `disagmoe compile` states in one note;
//   int64, int32, bool: index, shape and mask constants (the fold stage evaluates them);
// and refused otherwise, in one line naming the initializer and its dtype: float64 (the plan has
// no fp64 arithmetic, and narrowing the weights would change them), int8 / uint8 / int16 / uint16
// (quantised weights: no dequantisation is imported), and every other type.
//
//===----------------------------------------------------------------------===//
#ifndef DISAGMOE_COMPILER_PIPELINE_WEIGHTDTYPES_H
#define DISAGMOE_COMPILER_PIPELINE_WEIGHTDTYPES_H

#include "frontends/onnx/OnnxLoader.h"

#include <string>
#include <vector>

namespace disagmoe {

/// Checks the element types of `initializers`, the initializers of model `path`: true with a
/// one-line `note` when float16 / bfloat16 weights are stored (naming the dtypes and their
/// counts, and saying that the plan computes in fp32 on them; empty when there are none); false
/// with a one-line `error` naming the file, the first refused initializer and its dtype.
bool checkWeightDtypes(const std::string &path,
                       const std::vector<onnxfe::Initializer> &initializers, std::string &note,
                       std::string &error);

} // namespace disagmoe

#endif
