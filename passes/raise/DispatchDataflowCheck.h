//===- DispatchDataflowCheck.h - refuse dispatch with trace-time token counts ----===//
//
// Tracing DeepSeek's `moe_infer` (modeling_deepseek.py: token-expert pairs sorted by expert with
// argsort, `tokens_per_expert = cnts.sum(0).cpu().numpy()` or bincount, then a Python loop over
// `sorted_tokens[start:end]` with the cumulative counts) leaves the graph at `.numpy()`: the
// per-expert counts of the traced batch become constant Slice bounds, and experts that got no token
// while tracing have no nodes. Such an export routes every batch like the traced one, silently.
//
// The check finds, by dataflow and not by names:
//   router ids   the indices output of a TopK (or an ArgMax) over scores;
//   sort         a TopK whose data is (a reshape or arithmetic of) router ids: argsort exports as
//                TopK(ids, k = n, largest = 0) and its indices output is the permutation (ids
//                used as ScatterElements positions, a mask over scores as in DeepSeek-V3's
//                group-limited top-k, do not count);
//   sorted stream every value computed from that permutation, not looking through Shape (a shape
//                does not depend on values) nor past a projection MatMul/Gemm with a weight (the
//                experts' outputs are no longer token-expert pairs);
// and refuses each sort whose sorted stream is cut along axis 0 (the token-expert pair axis) by a
// Slice with a constant, non-trivial start or end, or by a Split with constant sizes: those bounds
// are counts of the traced batch, not functions of the router's output.
//
//===----------------------------------------------------------------------===//
#ifndef DISAGMOE_PASSES_RAISE_DISPATCHDATAFLOWCHECK_H
#define DISAGMOE_PASSES_RAISE_DISPATCHDATAFLOWCHECK_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Support/LogicalResult.h"

namespace disagmoe::raise {

/// Emits one error per expert sort of `func` whose dispatch slices have constant bounds, at the
/// first such Slice/Split node, naming it, the sort and the router, the constant bounds (Slice) or
/// sizes (Split) and how
/// many such slices the layer has; the message says the counts were baked from the traced batch
/// and suggests exporting the loop over experts. Failure iff an error was emitted. Reads the graph
/// only.
mlir::LogicalResult checkDispatchDataflow(mlir::func::FuncOp func);

} // namespace disagmoe::raise

#endif
