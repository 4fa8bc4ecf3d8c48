//===- NormalizePatterns.h - the normalize-onnx rewrite patterns ----------===//
//
// The Normalize stage of raising (normalize -> fold -> match): rewrite patterns on `onnx.node` that
// remove exporter noise (Identity, same-type Cast) and rewrite equivalent forms of one computation
// to the single form the matchers of raise-onnx-to-moe accept (rsqrt as Div(1, Sqrt(x)), x^2 as
// Pow(x, 2)). Every pattern is exact or rounding-equivalent and checks its constants exactly, so
// it never fires on a node that computes something else.
//
//===----------------------------------------------------------------------===//
#ifndef DISAGMOE_PASSES_RAISE_NORMALIZE_NORMALIZEPATTERNS_H
#define DISAGMOE_PASSES_RAISE_NORMALIZE_NORMALIZEPATTERNS_H

#include "dialects/onnx/OnnxDialect.h"

#include "mlir/IR/PatternMatch.h"
#include "llvm/ADT/SmallVector.h"

#include <optional>

namespace disagmoe::normalize {

using onnxir::NodeOp;

/// Identity(x) -> x (DropIdentity.cpp).
void populateDropIdentityPatterns(mlir::RewritePatternSet &patterns);
/// Cast(x, to = type of x) -> x (DropSameTypeCast.cpp).
void populateDropSameTypeCastPatterns(mlir::RewritePatternSet &patterns);
/// float16 / bfloat16 -> f32 everywhere (WidenLowPrecision.cpp): onnx.weight read as f32 with its
/// stored_type, nodes' results and dense attributes widened, Casts to float16 / bfloat16
/// retargeted to float, the function's signature; the plan computes a float16 / bfloat16 export
/// in fp32 on its weights as stored.
void populateWidenLowPrecisionPatterns(mlir::RewritePatternSet &patterns);
/// Concat's operands of length 0 along its axis dropped; Concat(x) -> x (DropEmptyConcatInput.cpp:
/// the empty KV cache a training plan binds, appended to by torch.cat([past, new], dim=-2)).
void populateDropEmptyConcatInputPatterns(mlir::RewritePatternSet &patterns);
/// Reciprocal(Sqrt(x)), Pow(x, -0.5) -> Div(1, Sqrt(x)) (CanonicalRsqrt.cpp).
void populateCanonicalRsqrtPatterns(mlir::RewritePatternSet &patterns);
/// Mul(x, x) -> Pow(x, 2) (CanonicalSquare.cpp).
void populateCanonicalSquarePatterns(mlir::RewritePatternSet &patterns);

/// MatMul(Mul(a, c1), Mul(b, c2)) -> Mul(MatMul(a, b), c1 * c2) for scalar constants
/// (HoistMatMulScales.cpp: torch's scaled_dot_product_attention symbolic).
void populateHoistMatMulScalesPatterns(mlir::RewritePatternSet &patterns);

/// Transpose(W) of a 2-D weight -> W referenced as [in, out], marked `transposed`
/// (FoldWeightTranspose.cpp).
void populateFoldWeightTransposePatterns(mlir::RewritePatternSet &patterns);

/// The opset-18..23 and onnxruntime spellings -> the opset-13 ones: Reduce*-18's axes input,
/// Split-18's num_outputs, RMSNormalization-23, SimplifiedLayerNormalization and
/// com.microsoft.SkipSimplifiedLayerNormalization (NewerOpsetForms.cpp).
void populateNewerOpsetFormPatterns(mlir::RewritePatternSet &patterns);

/// Attention-23 on 4-D Q/K/V -> Softmax(Q K^T * scale + mask) V (DecomposeAttention.cpp).
void populateDecomposeAttentionPatterns(mlir::RewritePatternSet &patterns);

/// com.microsoft.RotaryEmbedding and RotaryEmbedding-23 whose tables are plain RoPE at positions
/// 0..S-1 -> Hugging Face's rotate-half chain (DecomposeRotaryEmbedding.cpp).
void populateDecomposeRotaryEmbeddingPatterns(mlir::RewritePatternSet &patterns);
/// Why `node`, a RotaryEmbedding the pattern left, is not plain RoPE at positions 0..S-1 (for the
/// raise pass's error); empty if it is, or if `node` is no RotaryEmbedding.
std::string rotaryEmbeddingMismatch(NodeOp node);

/// com.microsoft.GroupQueryAttention with separate q/k/v and no KV cache -> head split, RoPE,
/// repeat_kv, Attention-23, head merge (DecomposeGroupQueryAttention.cpp).
void populateDecomposeGroupQueryAttentionPatterns(mlir::RewritePatternSet &patterns);
/// Why `node`, a GroupQueryAttention the pattern left, is not imported (for the raise pass's
/// error); empty if it is, or if `node` is no GroupQueryAttention.
std::string groupQueryAttentionMismatch(NodeOp node);

/// com.microsoft.GroupQueryAttention on a packed query MatMul(x, W) (+ bias) -> three MatMuls on
/// column slices of W (references into its bytes: row blocks of a W stored [out, in], strided
/// column blocks of one stored [in, out]) as separate query, key and value (SplitPackedQkv.cpp).
void populateSplitPackedQkvPatterns(mlir::RewritePatternSet &patterns);
/// Why the packed query of `node`, a GroupQueryAttention with no key and value inputs, is not
/// split; empty if it is, or if `node` is no such node.
std::string packedQkvMismatch(NodeOp node);

/// Split(Transpose(NonZero(hit)), sizes adding up to hit's static length N) -> the Constants
/// 0..N-1 in those pieces (FoldExhaustiveNonZeroSplit.cpp: GPT-OSS's loop over expert_hit).
void populateFoldExhaustiveNonZeroSplitPatterns(mlir::RewritePatternSet &patterns);
/// Why `node`, a Split of Transpose(NonZero(hit)) the pattern left, is not the loop over every
/// expert (for the raise pass's error); empty if it is, or if `node` is no such Split.
std::string nonZeroSplitMismatch(NodeOp node);
/// Gather(W, constant i) on axis 0 of a weight -> a reference to W's row block i
/// (FoldWeightGather.cpp: `self.gate_up_proj[expert_idx]` with a computed index).
void populateFoldWeightGatherPatterns(mlir::RewritePatternSet &patterns);

/// All of the above.
void populateNormalizeOnnxPatterns(mlir::RewritePatternSet &patterns);

/// Applies all of the above greedily to `root` (rewrites only, no region simplification: that
/// would also erase unused weights and blocks). Fails if they do not converge.
mlir::LogicalResult applyNormalizeOnnxPatterns(mlir::Operation *root);

// --- helpers shared by the patterns (NormalizeUtils.cpp) ---------------------------------------

/// `node` is a standard-domain node of `opType` with `inputs` operands and `outputs` results.
bool isNode(NodeOp node, llvm::StringRef opType, unsigned inputs, unsigned outputs);

/// The float element type of `v`'s tensor type, or null (not a tensor, or not a float).
mlir::FloatType floatElementType(mlir::Value v);

/// A new `Constant` node holding `value`, named "<anchor's name>/<suffix>", inserted at the
/// rewriter's insertion point.
mlir::Value createConstant(mlir::PatternRewriter &rewriter, NodeOp anchor, llvm::StringRef suffix,
                           mlir::DenseElementsAttr value);
/// The same for the scalar `value` of element type `elem`.
mlir::Value createScalarConstant(mlir::PatternRewriter &rewriter, NodeOp anchor,
                                 llvm::StringRef suffix, mlir::FloatType elem, double value);
/// The same for an int64 tensor of shape `dims` (shapes, axes, sizes, position ids).
mlir::Value createI64Constant(mlir::PatternRewriter &rewriter, NodeOp anchor,
                              llvm::StringRef suffix, llvm::ArrayRef<int64_t> dims,
                              llvm::ArrayRef<int64_t> values);

/// A new single-result node `opType(inputs) : resultType` named `name`, with ONNX attributes
/// `attrs`, in `domain` ("" the default one), at `anchor`'s location.
NodeOp createNode(mlir::PatternRewriter &rewriter, NodeOp anchor, llvm::StringRef opType,
                  llvm::StringRef name, mlir::ValueRange inputs, mlir::Type resultType,
                  llvm::ArrayRef<mlir::NamedAttribute> attrs = {}, llvm::StringRef domain = "");

/// Erases the `Constant` node that defines `v` if nothing reads it any more (onnx.node is not
/// Pure, so the greedy driver does not remove dead nodes itself).
void eraseIfDeadConstant(mlir::PatternRewriter &rewriter, mlir::Value v);

} // namespace disagmoe::normalize

#endif
