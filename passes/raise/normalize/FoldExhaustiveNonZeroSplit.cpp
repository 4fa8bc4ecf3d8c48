//===- FoldExhaustiveNonZeroSplit.cpp - expert_hit split into every index -> 0..N-1 -===//
//
// Hugging Face's GPT-OSS training branch (GptOssExperts.forward, modeling_gpt_oss.py) loops over
// `expert_hit = torch.greater(expert_mask.sum(dim=(-1, -2)), 0).nonzero()`; torch.onnx.export
// unrolls `for expert_idx in expert_hit[:]` once per expert the trace batch hit, as
// Split(Transpose(NonZero(hit), perm = [1, 0]), split = [1, ..., 1], axis = 0). When `hit` is a
// 1-D boolean of static length N and the split sizes add up to N, the graph is defined only where
// NonZero returns N indices, and NonZero returns them in ascending order: every index 0..N-1, so
// Split output j holds offset_j .. offset_j + size_j - 1 as an [size_j, 1] int64 tensor. The
// pattern replaces each output by that Constant (exact wherever the graph runs; where some expert
// is not hit, Split's sizes do not add up and onnxruntime refuses the file, while the folded graph
// computes the module's loop over the experts hit, an expert with no token adding nothing).
// A split that does not cover all N indices (a trace batch that missed an expert) is kept. The
// NonZero and the nodes that only fed it are erased.
//
//===----------------------------------------------------------------------===//
#include "passes/raise/GraphMatchers.h"
#include "passes/raise/normalize/NormalizePatterns.h"

#include "mlir/IR/BuiltinTypes.h"

using namespace mlir;

namespace disagmoe::normalize {

/// A Split(Transpose(NonZero(hit), perm = [1, 0]), sizes) on axis 0 of a 1-D `hit` of static
/// length n: its NonZero, n and sizes; null when `node` is not one.
NodeOp hitSplit(NodeOp node, int64_t &n, SmallVector<int64_t> &sizes) {
  if (node.getOpType() != "Split" || !node.getDomain().empty() || node.getInputs().empty())
    return nullptr;
  auto axisAttr = node.getOnnxAttrs().getAs<IntegerAttr>("axis");
  if (axisAttr && axisAttr.getInt() != 0 && axisAttr.getInt() != -2)
    return nullptr;
  NodeOp transpose = raise::producer(node.getInputs()[0], {"Transpose"});
  if (!transpose)
    return nullptr;
  if (auto perm = transpose.getOnnxAttrs().getAs<ArrayAttr>("perm")) {
    auto p = llvm::to_vector(
        llvm::map_range(perm, [](Attribute a) { return llvm::cast<IntegerAttr>(a).getInt(); }));
    if (p != SmallVector<int64_t>{1, 0})
      return nullptr;
  }
  NodeOp nonZero = raise::producer(transpose.getInputs()[0], {"NonZero"});
  if (!nonZero)
    return nullptr;
  auto hitType = llvm::dyn_cast<RankedTensorType>(nonZero.getInputs()[0].getType());
  if (!hitType || hitType.getRank() != 1 || hitType.isDynamicDim(0))
    return nullptr;
  n = hitType.getDimSize(0);
  // The sizes: the `split` input (opset 13+) or attribute (opset 11-12).
  sizes.clear();
  if (node.getInputs().size() >= 2) {
    auto values = raise::constantValues(node.getInputs()[1]);
    if (!values)
      return nullptr;
    for (double v : *values)
      sizes.push_back(static_cast<int64_t>(v));
  } else if (auto attr = node.getOnnxAttrs().getAs<ArrayAttr>("split")) {
    for (Attribute a : attr)
      sizes.push_back(llvm::cast<IntegerAttr>(a).getInt());
  } else {
    return nullptr;
  }
  return nonZero;
}

/// "; experts 0, 5 are not in the file" when the loop's bodies name their experts:
/// torch.onnx.export names a per-expert module's nodes after its path (`<block>/experts.<e>/...`,
/// Mixtral's and Qwen3-MoE's ModuleList); empty for stacked expert weights (GPT-OSS), whose bodies
/// do not say.
std::string missingExperts(NodeOp split, int64_t n) {
  const std::string name = split.getNodeName().str();
  const std::string prefix = name.substr(0, name.rfind('/')) + "/experts.";
  llvm::SmallVector<bool> present(n, false);
  bool named = false;
  split->getParentOp()->walk([&](NodeOp other) {
    StringRef rest = other.getNodeName();
    unsigned e = 0;
    if (rest.consume_front(prefix) && !rest.consumeInteger(10, e) && rest.starts_with("/") &&
        e < present.size())
      present[e] = named = true;
  });
  if (!named)
    return "";
  std::string missing;
  int64_t count = 0;
  for (auto [e, here] : llvm::enumerate(present))
    if (!here)
      missing += (count++ ? ", " : "") + std::to_string(e);
  return count == 1 ? "; expert " + missing + " is not in the file"
                    : "; experts " + missing + " are not in the file";
}

std::string nonZeroSplitMismatch(NodeOp node) {
  int64_t n = 0;
  SmallVector<int64_t> sizes;
  if (!hitSplit(node, n, sizes))
    return "";
  int64_t total = 0;
  for (int64_t s : sizes)
    total += s;
  if (total == n && sizes.size() == node.getOutputs().size())
    return "";
  return "the loop over the experts hit (Split of NonZero, Hugging Face's expert_hit) was traced "
         "with " +
         std::to_string(total) + " of " + std::to_string(n) + " experts hit" +
         missingExperts(node, n) +
         ", so the file runs only on batches that hit exactly those: export with a trace batch "
         "that routes a token to every expert";
}

namespace {

struct FoldExhaustiveNonZeroSplit : OpRewritePattern<NodeOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(NodeOp node, PatternRewriter &rewriter) const override {
    int64_t n = 0;
    SmallVector<int64_t> sizes;
    if (!hitSplit(node, n, sizes))
      return failure();
    NodeOp transpose = raise::producer(node.getInputs()[0], {"Transpose"});
    int64_t total = 0;
    for (int64_t s : sizes)
      total += s;
    if (sizes.size() != node.getOutputs().size() || total != n ||
        llvm::any_of(sizes, [](int64_t s) { return s < 0; }))
      return failure();
    rewriter.setInsertionPoint(node);
    SmallVector<Value> constants;
    int64_t offset = 0;
    for (auto [j, size] : llvm::enumerate(sizes)) {
      SmallVector<int64_t> values;
      for (int64_t i = 0; i < size; ++i)
        values.push_back(offset + i);
      offset += size;
      constants.push_back(
          createI64Constant(rewriter, node, "hit_" + std::to_string(j), {size, 1}, values));
    }
    rewriter.replaceOp(node, constants);
    // The hit flags are read by nothing else now (the per-expert token masks read the one-hot mask
    // itself): erase the NonZero and the nodes that only fed it (Greater, ReduceSum, constants),
    // as onnx.node is not Pure and the driver keeps dead nodes.
    SmallVector<Operation *> work{transpose};
    while (!work.empty()) {
      Operation *op = work.pop_back_val();
      auto dead = dyn_cast_or_null<NodeOp>(op);
      if (!dead || !dead->use_empty())
        continue;
      SmallVector<Operation *> operands;
      for (Value in : dead.getInputs())
        if (Operation *def = in.getDefiningOp())
          operands.push_back(def);
      rewriter.eraseOp(dead);
      llvm::append_range(work, operands);
    }
    return success();
  }
};

} // namespace

void populateFoldExhaustiveNonZeroSplitPatterns(RewritePatternSet &patterns) {
  patterns.add<FoldExhaustiveNonZeroSplit>(patterns.getContext());
}

} // namespace disagmoe::normalize
