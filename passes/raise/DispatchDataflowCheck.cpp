//===- DispatchDataflowCheck.cpp - refuse dispatch with trace-time token counts --===//
#include "passes/raise/DispatchDataflowCheck.h"

#include "passes/raise/GraphMatchers.h"

#include "llvm/ADT/DenseSet.h"

#include <deque>
#include <limits>

using namespace mlir;

namespace disagmoe::raise {
namespace {

/// A MatMul/Gemm/Einsum with a weight operand: a projection, past which values are no longer the
/// routed token-expert pairs (and behind which router scores start).
bool isProjection(NodeOp node) {
  StringRef op = node.getOpType();
  if (op != "MatMul" && op != "Gemm" && op != "Einsum")
    return false;
  for (Value in : node.getInputs()) {
    Value v = skipDataMovement(in);
    while (NodeOp t = producer(v, {"Transpose"}))
      v = skipDataMovement(t.getInputs()[0]);
    if (weightOf(v))
      return true;
  }
  return false;
}

/// The expert ids a router node produces: TopK's indices, ArgMax's output.
Value routerIds(NodeOp node) {
  if (node.getOpType() == "TopK" && node.getOutputs().size() == 2)
    return node.getOutputs()[1];
  if (node.getOpType() == "ArgMax" && node.getOutputs().size() == 1)
    return node.getOutputs()[0];
  return Value();
}

/// If `topk` sorts expert ids (argsort exports as TopK over the ids), the router node whose ids it
/// sorts; null otherwise. Walks back from the sorted data through anything but projections.
NodeOp sortedRouter(NodeOp topk, const llvm::DenseMap<Value, NodeOp> &routerOfIds) {
  llvm::DenseSet<Value> seen;
  std::deque<Value> work{topk.getInputs()[0]};
  for (int budget = 64; !work.empty() && budget-- > 0;) {
    Value v = work.front();
    work.pop_front();
    if (!seen.insert(v).second)
      continue;
    if (auto it = routerOfIds.find(v); it != routerOfIds.end() && it->second != topk)
      return it->second;
    NodeOp node = producer(v);
    if (!node || isProjection(node) || node.getOpType() == "Shape")
      continue;
    for (auto [i, in] : llvm::enumerate(node.getInputs())) {
      // Ids used as scatter positions build a mask over the scores (DeepSeek-V3's group-limited
      // top-k: group_mask.scatter_(1, group_idx, 1), then masked_fill of the scores); the sort
      // then orders scores, not the ids themselves as moe_infer's argsort does.
      if (node.getOpType() == "ScatterElements" && i == 1)
        continue;
      work.push_back(in);
    }
  }
  return nullptr;
}

bool isNone(Value v) { return isa_and_nonnull<onnxir::NoneOp>(v.getDefiningOp()); }

/// Axis `a` of a value of rank `rank` (-1: unknown) as a non-negative index, or -1.
int64_t normaliseAxis(double a, int64_t rank) {
  auto axis = static_cast<int64_t>(a);
  if (axis < 0)
    return rank > 0 ? axis + rank : -1;
  return axis;
}

int64_t rankOf(Value v) {
  auto type = llvm::dyn_cast<ShapedType>(v.getType());
  return type && type.hasRank() ? type.getRank() : -1;
}

std::string fmt(double v) { return std::to_string(static_cast<long long>(v)); }

/// "bounds [start, end)" when a Slice of `data` cuts axis 0 at a constant count (a start other than
/// 0, or an end short of the whole axis); empty otherwise.
std::string constantSliceBounds(NodeOp slice) {
  auto ins = slice.getInputs();
  if (ins.size() < 3)
    return "";
  auto starts = constantValues(ins[1]), ends = constantValues(ins[2]);
  if (!starts && !ends)
    return "";
  const int64_t rank = rankOf(ins[0]);
  SmallVector<double> axes;
  if (ins.size() > 3 && !isNone(ins[3])) {
    auto a = constantValues(ins[3]);
    if (!a)
      return ""; // the sliced axes are not known: cannot tell
    axes = *a;
  } else {
    for (size_t i = 0; i < (starts ? starts->size() : ends->size()); ++i)
      axes.push_back(static_cast<double>(i));
  }
  auto shape = staticShape(ins[0]);
  // An end at or past the axis' length (or INT_MAX-style "to the end") is the whole axis.
  const double whole = shape.empty() ? static_cast<double>(std::numeric_limits<int32_t>::max())
                                     : static_cast<double>(shape[0]);
  for (size_t i = 0; i < axes.size(); ++i) {
    if (normaliseAxis(axes[i], rank) != 0)
      continue;
    std::optional<double> start, end;
    if (starts && i < starts->size())
      start = (*starts)[i];
    if (ends && i < ends->size())
      end = (*ends)[i];
    // Negative bounds count from the end: a structural choice, not a token count.
    bool bakedStart = start && *start > 0;
    bool bakedEnd = end && *end >= 0 && *end < whole;
    if (bakedStart || bakedEnd)
      return "bounds [" + (start ? fmt(*start) : std::string("?")) + ", " +
             (end ? fmt(*end) : std::string("?")) + ")";
  }
  return "";
}

/// "sizes [a, b, ...]" when a Split of axis 0 has constant sizes; empty otherwise.
std::string constantSplitSizes(NodeOp split) {
  int64_t axis = 0;
  if (auto a = split.getOnnxAttrs().getAs<IntegerAttr>("axis"))
    axis = a.getInt();
  if (normaliseAxis(static_cast<double>(axis), rankOf(split.getInputs()[0])) != 0)
    return "";
  std::optional<SmallVector<double>> sizes;
  if (split.getInputs().size() >= 2 && !isNone(split.getInputs()[1]))
    sizes = constantValues(split.getInputs()[1]);
  else if (auto attr = split.getOnnxAttrs().getAs<ArrayAttr>("split")) {
    sizes.emplace();
    for (Attribute a : attr)
      sizes->push_back(static_cast<double>(llvm::cast<IntegerAttr>(a).getInt()));
  }
  if (!sizes)
    return "";
  std::string out = "sizes [";
  for (size_t i = 0; i < sizes->size(); ++i)
    out += (i ? ", " : "") + fmt((*sizes)[i]);
  return out + "]";
}

/// Slices/Splits with constant counts on the values computed from `perm` (the sort's permutation),
/// in block order, each with its bounds.
SmallVector<std::pair<NodeOp, std::string>> bakedCuts(Value perm) {
  SmallVector<std::pair<NodeOp, std::string>> out;
  llvm::DenseSet<Operation *> seen;
  std::deque<Value> work{perm};
  for (int budget = 1 << 16; !work.empty() && budget-- > 0;) {
    Value v = work.front();
    work.pop_front();
    for (Operation *user : v.getUsers()) {
      auto node = dyn_cast<NodeOp>(user);
      if (!node || !seen.insert(node).second)
        continue;
      // A shape does not depend on values; a projection's output is no longer the routed pairs.
      if (node.getOpType() == "Shape" || isProjection(node))
        continue;
      // Only a cut of the sorted data counts; sorted values used as bounds are data-dependent.
      std::string bounds;
      if (node.getOpType() == "Slice" && node.getInputs()[0] == v)
        bounds = constantSliceBounds(node);
      else if (node.getOpType() == "Split" && node.getInputs()[0] == v)
        bounds = constantSplitSizes(node);
      if (!bounds.empty())
        out.push_back({node, bounds});
      for (Value o : node.getOutputs())
        work.push_back(o);
    }
  }
  llvm::sort(out, [](const auto &a, const auto &b) {
    NodeOp x = a.first, y = b.first;
    return x->isBeforeInBlock(y.getOperation());
  });
  return out;
}

} // namespace

LogicalResult checkDispatchDataflow(func::FuncOp func) {
  llvm::DenseMap<Value, NodeOp> routerOfIds;
  SmallVector<NodeOp> topks;
  func.walk([&](NodeOp node) {
    if (Value ids = routerIds(node))
      routerOfIds[ids] = node;
    if (node.getOpType() == "TopK")
      topks.push_back(node);
  });
  bool ok = true;
  for (NodeOp sort : topks) {
    NodeOp router = sortedRouter(sort, routerOfIds);
    if (!router)
      continue;
    auto cuts = bakedCuts(sort.getOutputs()[1]);
    if (cuts.empty())
      continue;
    ok = false;
    auto &[first, bounds] = cuts.front();
    first.emitError()
        << describe(first) << ": the MoE dispatch cuts the token-expert pairs sorted by "
        << describe(sort) << " (the expert ids of router " << describe(router) << ") at constant "
        << bounds << " (" << cuts.size() << (cuts.size() == 1 ? " such cut" : " such cuts")
        << " in this layer): the per-expert token counts are constants "
           "baked from the traced batch, not functions of the router's output, so "
           "every batch would be routed like the traced one and experts that got no "
           "token while tracing are missing. This is what tracing DeepSeek's "
           "moe_infer (argsort, bincount or tokens_per_expert.cpu().numpy(), slices "
           "or a split of the sorted tokens) produces; refusing the export. Export the loop over "
           "experts instead (for each expert e: torch.where(expert_mask[e]), run the "
           "expert on those rows, index_add_ into the output), as Hugging Face's "
           "Mixtral and Qwen MoE blocks do";
  }
  return success(ok);
}

} // namespace disagmoe::raise
