//===- ComponentCoverage.h - every computing node has a role in a recognised component ---===//
//
// The match patterns find each component from its anchor (Softmax, TopK, the norm chain, ...) and
// walk over the nodes between some of its parts (the heads' reshapes, the combine of the experts).
// A node inserted on such a path, e.g. a Mul scaling softmax(QK^T)V before o_proj, or an expert's
// output multiplied by a constant before the combine, would be dropped silently by the raised
// model. This check accounts for every node that computes on the token stream:
//
//   data node    a node whose output depends on the token ids through values (not only through
//                Shape): nodes computing only on constants, shapes and positions (RoPE tables,
//                masks, shape computations) fold away with static dims and are not checked;
//   moving node  an op that only moves, selects, broadcasts or scatters values (Reshape,
//                Transpose, Gather, Slice, Concat, Split, NonZero, OneHot, ScatterElements, ...);
//   role         every other data node must play a role of a recognised component, each a local
//                pattern: RMSNorm's Pow(x, 2) -> ReduceMean -> Add(eps) -> Sqrt -> Div -> Mul ->
//                Mul(w) chain; a projection MatMul/Gemm/Einsum with a weight; Q K^T (feeds a
//                Softmax) and P V (reads one); one constant scale per attention Softmax; the
//                additive causal/window mask; RoPE's products with cos/sin tables, rotate-half's
//                Neg (first of its Concat(-x2, x1)) and the Add/Sub of the rotated halves;
//                attention sinks' Sub(ReduceMax); Softmax, TopK; router renormalisation
//                Div(ReduceSum) and its eps Add; a product of an expert output with the router's
//                gates (TopK values, their softmax, renormalisation or scaling, or the dense score
//                matrix scattered at the router ids), a constant routed_scaling_factor on the
//                router's gates themselves (not on a per-expert gather of them), and the ReduceSum
//                over the weighted outputs; SiLU x * Sigmoid(x) (a Sigmoid read by that product)
//                and the gated product with the up projection; GPT-OSS's clamped SwiGLU (Clip of
//                the stride-2 slices, Sigmoid(alpha * gate), + 1, products); bias and residual
//                Adds, and the index_add accumulation Add(zeros, Scatter); com.microsoft.MoE;
//                DeepSeek-V3's router: the Sigmoid scores whose choice reaches a TopK, the group
//                mask's Not (a Where's condition before a TopK), its group sums, and the gates
//                GatherElements(scores, router ids) with their renormalisation and scaling.
// A data node with no role is an error naming it and its op type; all are reported at once.
//
//===----------------------------------------------------------------------===//
#ifndef DISAGMOE_PASSES_RAISE_COMPONENTCOVERAGE_H
#define DISAGMOE_PASSES_RAISE_COMPONENTCOVERAGE_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Support/LogicalResult.h"

namespace disagmoe::raise {

/// Emits one error per data node of `func` (the onnx dialect, token ids as argument 0) that has no
/// role in a recognised component: "node 'NAME' (OP): not part of any recognised component ...".
/// Failure iff an error was emitted. Reads the graph only; linear in the nodes (each rule walks at
/// most a few dozen nodes).
mlir::LogicalResult checkEveryNodeExplained(mlir::func::FuncOp func);

} // namespace disagmoe::raise

#endif
