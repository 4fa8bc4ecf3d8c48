//===- GraphMatchers.h - structural queries over the `onnx` dialect -------===//
//
// Small helpers the raising pass uses to recognise components by structure: the node that produces
// a value, its consumers, constant values (from `Constant` nodes or small initializers), and walks
// through shape-only ops (Cast, Reshape, Unsqueeze, ...). No tensor names are ever consulted.
//
//===----------------------------------------------------------------------===//
#ifndef DISAGMOE_PASSES_RAISE_GRAPHMATCHERS_H
#define DISAGMOE_PASSES_RAISE_GRAPHMATCHERS_H

#include "dialects/onnx/OnnxDialect.h"

#include "mlir/IR/Value.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallVector.h"

#include <optional>
#include <string>

namespace disagmoe::raise {

using onnxir::NodeOp;
using onnxir::WeightOp;

/// The `onnx.node` that produces `v`, if it is one of `opTypes` (any op type when empty).
NodeOp producer(mlir::Value v, llvm::ArrayRef<llvm::StringRef> opTypes = {});

/// `onnx.node` users of `v` with the given op type.
llvm::SmallVector<NodeOp> consumers(mlir::Value v, llvm::StringRef opType);

/// Values of a constant tensor (a `Constant` node's `value`, or an `onnx.weight` with its value
/// kept), as doubles; nullopt if `v` is not such a constant. Looks through Cast and the reshaping
/// ops that keep values in order (Reshape, Unsqueeze, Squeeze, Flatten, Identity).
std::optional<llvm::SmallVector<double>> constantValues(mlir::Value v);

/// The single value of a scalar or one-element constant.
std::optional<double> scalarConstant(mlir::Value v);

/// The weight reference behind `v` (an initializer, possibly read through Identity nodes), or null.
WeightOp weightOf(mlir::Value v);

/// Follows `v` backwards through ops that only move or retype data (Cast, Reshape, Unsqueeze,
/// Squeeze, Flatten, Identity) on their first input.
mlir::Value skipDataMovement(mlir::Value v);

/// For a binary node, the operand other than `known` (nullopt if `known` is not an operand).
std::optional<mlir::Value> otherOperand(NodeOp node, mlir::Value known);

/// Static shape of a value, or empty when its type is unranked or has unknown dims.
llvm::SmallVector<int64_t> staticShape(mlir::Value v);

/// True if `target` is reachable backwards from `from` (through operands), visiting at most
/// `budget` ops.
bool dependsOn(mlir::Value from, mlir::Value target, int budget = 4096);

/// First node of type `opType` found walking backwards from `from` (breadth-first, at most
/// `budget` ops), or null.
NodeOp findUpstream(mlir::Value from, llvm::StringRef opType, int budget = 256);

/// Readable "node 'name' (OpType)" for diagnostics.
std::string describe(NodeOp node);

/// An additive attention mask recognised by its values (the Fold stage turns masks into
/// constants, whatever ops built them): a float constant, read through Expand, Cast and the
/// reshaping ops, of shape [..., Q, Q] whose every [Q, Q] slice holds exactly 0 where query i sees
/// key j and a value <= -1e4 (finfo.min, -inf) where it does not, each query i seeing exactly the
/// keys max(0, i - w + 1) .. i. `window` is w, or 0 when every query sees every key up to its own
/// (full causal; a window of at least Q is the same mask at this length).
struct MaskByValue {
  int64_t window = 0;
};
/// Masks recognised by value, each constant read once: every layer's attention adds the same
/// mask Constant, whose [Q, Q] values (Q the compiled sequence) are scanned once per pass run, not
/// once per layer and use.
class MaskAnalysis {
public:
  /// The mask `v` holds, or nullopt. With nullopt, `whyNot` (when given) is empty if `v` is not a
  /// constant of zeros and large negative values at all, and otherwise says how a constant mask
  /// differs from a causal or sliding-window one (the first row that does).
  std::optional<MaskByValue> of(mlir::Value v, std::string *whyNot = nullptr);
  /// Drops the verdict cached for `op` (called when it is erased: its address may be reused).
  void forget(mlir::Operation *op) { cache_.erase(op); }

private:
  struct Result {
    std::optional<MaskByValue> mask;
    std::string whyNot;
  };
  llvm::DenseMap<mlir::Operation *, Result> cache_; // by the Constant node behind the value
};

/// `v` is a constant whose values are all zero (a splat, or every value 0).
bool isZeroConstant(mlir::Value v);

/// MatMul/Gemm(x, W) with W a 2-D weight (through Transpose and data movement).
bool isProjection(NodeOp node);

/// DeepSeek-V3's router (transformers' DeepseekV3TopkRouter) chooses on sigmoid(x Wg) scores
/// through ops that only select, mask or bias them (Reshape, Add, TopK, ReduceSum,
/// ScatterElements, Expand, Cast, Not, Where, ...; never a projection, Mul or Softmax).
/// sigmoidRouterScores: the Sigmoid of a projection that `topk`'s data input is computed from
/// that way, or null. routerTopKOf: the first TopK whose data input the values of `sigmoid` (of
/// a projection) reach that way, or null (a SiLU's Sigmoid feeds a Mul: null).
NodeOp sigmoidRouterScores(NodeOp topk);
NodeOp routerTopKOf(NodeOp sigmoid);

} // namespace disagmoe::raise

#endif
