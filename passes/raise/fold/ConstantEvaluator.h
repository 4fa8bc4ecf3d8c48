//===- ConstantEvaluator.h - ONNX nodes evaluated on constant inputs -*- C++ -*-===//
//
// The Fold stage of raising (normalize -> fold -> match, passes/raise/fold/FoldOnnxConstants.cpp):
// a host evaluator for the ONNX operators that build masks, positions and shape arithmetic from
// constants (opsets 13-17 semantics, onnx/docs/Operators.md), so that a subgraph depending only on
// shapes and constants becomes one dense constant at the compiled static shape and a mask is
// recognised by its values, whatever ops built it.
//
// Values: float tensors are computed in double and rounded once to the result's float type (for
// + - * / and sqrt on f32 operands this equals the f32 operation, as double holds 2 x 24 + 2 bits);
// integer tensors in int64; booleans as 0/1. Transcendental ops (Cos, Sin, Exp, ...) are not
// evaluated: RoPE tables stay computed in the graph, and the matcher reads their frequencies.
//
//===----------------------------------------------------------------------===//
#ifndef DISAGMOE_PASSES_RAISE_FOLD_CONSTANTEVALUATOR_H
#define DISAGMOE_PASSES_RAISE_FOLD_CONSTANTEVALUATOR_H

#include "dialects/onnx/OnnxDialect.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/SmallVector.h"

#include <cstdint>
#include <optional>
#include <vector>

namespace disagmoe::fold {

/// A tensor whose values are known at compile time.
struct HostTensor {
  enum class Kind : uint8_t { Float, Int, Bool };
  Kind kind = Kind::Float;
  llvm::SmallVector<int64_t> shape;
  std::vector<double> f;  ///< Kind::Float
  std::vector<int64_t> i; ///< Kind::Int and Kind::Bool (0 or 1)

  int64_t numel() const;
  double real(int64_t k) const { return kind == Kind::Float ? f[k] : static_cast<double>(i[k]); }
  int64_t integer(int64_t k) const {
    return kind == Kind::Float ? static_cast<int64_t>(f[k]) : i[k];
  }
};

/// The kind that holds values of `elementType` (float types: Float; i1: Bool; other integers:
/// Int); nullopt for anything else.
std::optional<HostTensor::Kind> kindOf(mlir::Type elementType);

/// The values of `attr` (a dense tensor of a float, integer or bool type), at most `maxElements`.
std::optional<HostTensor> fromAttr(mlir::ElementsAttr attr, int64_t maxElements);

/// `t` as a dense attribute of `type` (a splat when all values are equal, so that a large
/// constant of one value costs one element).
mlir::DenseElementsAttr toAttr(const HostTensor &t, mlir::RankedTensorType type);

/// The ops evaluate() knows.
bool isFoldable(llvm::StringRef opType);

/// Evaluates a single-result standard-domain `node` whose inputs are `inputs` (nullopt for an
/// input whose values are unknown; Shape needs only its input's static type). Nullopt when the op
/// is not foldable, an input is unknown, the result type is not static, or the result would hold
/// more than `maxElements` values.
std::optional<HostTensor> evaluate(onnxir::NodeOp node, llvm::ArrayRef<const HostTensor *> inputs,
                                   int64_t maxElements);

} // namespace disagmoe::fold

#endif
