//===- GraphMatchers.cpp - structural queries over the `onnx` dialect -----===//
#include "passes/raise/GraphMatchers.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringSet.h"

#include <algorithm>
#include <deque>
#include <vector>

using namespace mlir;

namespace disagmoe::raise {

NodeOp producer(Value v, ArrayRef<StringRef> opTypes) {
  auto node = v.getDefiningOp<NodeOp>();
  if (!node || opTypes.empty())
    return node;
  for (StringRef t : opTypes)
    if (node.getOpType() == t)
      return node;
  return nullptr;
}

SmallVector<NodeOp> consumers(Value v, StringRef opType) {
  SmallVector<NodeOp> out;
  for (Operation *user : v.getUsers())
    if (auto node = dyn_cast<NodeOp>(user))
      if (node.getOpType() == opType && !llvm::is_contained(out, node))
        out.push_back(node);
  return out;
}

namespace {
std::optional<SmallVector<double>> valuesOf(ElementsAttr attr) {
  auto dense = llvm::dyn_cast_or_null<DenseElementsAttr>(attr);
  if (!dense)
    return std::nullopt;
  SmallVector<double> out;
  Type elem = dense.getElementType();
  if (llvm::isa<FloatType>(elem)) {
    for (APFloat f : dense.getValues<APFloat>())
      out.push_back(f.convertToDouble());
  } else if (elem.isIntOrIndex()) {
    for (APInt i : dense.getValues<APInt>())
      out.push_back(static_cast<double>(i.getSExtValue()));
  } else {
    return std::nullopt;
  }
  return out;
}
} // namespace

std::optional<SmallVector<double>> constantValues(Value v) {
  // Ops that keep a tensor's values in row-major order (exports without constant folding leave
  // them around constants such as TopK's K).
  if (auto node = producer(v, {"Cast", "Reshape", "Unsqueeze", "Squeeze", "Flatten", "Identity"}))
    return constantValues(node.getInputs()[0]);
  if (auto weight = v.getDefiningOp<WeightOp>())
    return weight.getValue() ? valuesOf(*weight.getValue()) : std::nullopt;
  if (auto node = producer(v, {"Constant"}))
    if (auto attr = node.getOnnxAttrs().get("value"))
      return valuesOf(llvm::dyn_cast<ElementsAttr>(attr));
  return std::nullopt;
}

std::optional<double> scalarConstant(Value v) {
  auto values = constantValues(v);
  if (!values || values->size() != 1)
    return std::nullopt;
  return values->front();
}

WeightOp weightOf(Value v) {
  // torch.onnx.export keeps one copy of identical initializers and reads the others through
  // Identity nodes.
  while (auto identity = producer(v, {"Identity"}))
    v = identity.getInputs()[0];
  return v.getDefiningOp<WeightOp>();
}

Value skipDataMovement(Value v) {
  while (auto node =
             producer(v, {"Cast", "Reshape", "Unsqueeze", "Squeeze", "Flatten", "Identity"}))
    v = node.getInputs()[0];
  return v;
}

std::optional<Value> otherOperand(NodeOp node, Value known) {
  if (node.getInputs().size() != 2)
    return std::nullopt;
  if (node.getInputs()[0] == known)
    return node.getInputs()[1];
  if (node.getInputs()[1] == known)
    return node.getInputs()[0];
  return std::nullopt;
}

SmallVector<int64_t> staticShape(Value v) {
  auto type = llvm::dyn_cast<RankedTensorType>(v.getType());
  if (!type || !type.hasStaticShape())
    return {};
  return SmallVector<int64_t>(type.getShape());
}

bool dependsOn(Value from, Value target, int budget) {
  llvm::DenseSet<Value> seen;
  std::deque<Value> work{from};
  while (!work.empty() && budget-- > 0) {
    Value v = work.front();
    work.pop_front();
    if (v == target)
      return true;
    if (!seen.insert(v).second)
      continue;
    if (Operation *def = v.getDefiningOp())
      for (Value operand : def->getOperands())
        work.push_back(operand);
  }
  return false;
}

NodeOp findUpstream(Value from, StringRef opType, int budget) {
  llvm::DenseSet<Operation *> seen;
  std::deque<Value> work{from};
  while (!work.empty() && budget-- > 0) {
    Value v = work.front();
    work.pop_front();
    auto node = v.getDefiningOp<NodeOp>();
    if (!node || !seen.insert(node).second)
      continue;
    if (node.getOpType() == opType)
      return node;
    for (Value operand : node.getInputs())
      work.push_back(operand);
  }
  return nullptr;
}

std::string describe(NodeOp node) {
  return "node '" + node.getNodeName().str() + "' (" + node.getOpType().str() + ")";
}

namespace {
/// The Constant node behind `v` through broadcasts and the ops that keep values in order.
NodeOp constantBehind(Value v) {
  while (auto node = producer(
             v, {"Expand", "Cast", "Reshape", "Unsqueeze", "Squeeze", "Flatten", "Identity"}))
    v = node.getInputs()[0];
  return producer(v, {"Constant"});
}
} // namespace

namespace {
/// The mask that `constant` holds (MaskAnalysis::of, uncached).
std::optional<MaskByValue> maskOfConstant(NodeOp constant, std::string *whyNot) {
  auto dense = constant.getOnnxAttrs().getAs<DenseElementsAttr>("value");
  if (!dense || !llvm::isa<FloatType>(dense.getElementType()))
    return std::nullopt;
  auto type = llvm::cast<ShapedType>(dense.getType());
  if (type.getRank() < 2 || !type.hasStaticShape())
    return std::nullopt;
  const int64_t q = type.getDimSize(type.getRank() - 2), k = type.getDimSize(type.getRank() - 1);
  auto values = valuesOf(dense);
  if (!values)
    return std::nullopt;
  constexpr double kHidden = -1e4; // finfo(float16).min is -65504; any hidden score is below this
  for (double x : *values)
    if (x != 0.0 && !(x <= kHidden))
      return std::nullopt; // not a mask of 0 and large negatives: some other constant
  auto refuse = [&](const std::string &why) -> std::optional<MaskByValue> {
    if (whyNot)
      *whyNot = why;
    return std::nullopt;
  };
  if (q != k)
    return refuse("the mask is [" + std::to_string(q) + ", " + std::to_string(k) +
                  "] (queries x keys), not square: a past key-value cache is not supported");
  // The first key each query sees; every query must see a contiguous run ending at itself.
  const int64_t slices = type.getNumElements() / (q * k);
  std::vector<int64_t> first(static_cast<size_t>(q), -1);
  for (int64_t s = 0; s < slices; ++s)
    for (int64_t i = 0; i < q; ++i) {
      const double *row = values->data() + (s * q + i) * k;
      int64_t lo = -1, hi = -1;
      for (int64_t j = 0; j < k; ++j)
        if (row[j] == 0.0) {
          if (lo < 0)
            lo = j;
          else if (hi != j - 1)
            return refuse("query " + std::to_string(i) + " sees keys that are not contiguous");
          hi = j;
        }
      if (hi != i)
        return refuse("query " + std::to_string(i) + " sees keys up to " + std::to_string(hi) +
                      ", not up to itself (a causal mask)");
      if (s > 0 && first[i] != lo)
        return refuse("the mask differs between batch rows or heads (a padding mask is not "
                      "supported)");
      first[i] = lo;
    }
  // A sliding window w: query i sees keys max(0, i - w + 1) .. i.
  int64_t window = 0;
  for (int64_t i = 0; i < q && window == 0; ++i)
    if (first[i] > 0)
      window = i - first[i] + 1;
  for (int64_t i = 0; i < q; ++i) {
    const int64_t expected = window > 0 ? std::max<int64_t>(0, i - window + 1) : 0;
    if (first[i] != expected)
      return refuse("query " + std::to_string(i) + " sees keys from " + std::to_string(first[i]) +
                    ", not from " + std::to_string(expected) +
                    (window > 0 ? " (a sliding window of " + std::to_string(window) + ")"
                                : std::string(" (a causal mask)")));
  }
  return MaskByValue{window};
}
} // namespace

std::optional<MaskByValue> MaskAnalysis::of(Value v, std::string *whyNot) {
  if (whyNot)
    whyNot->clear();
  NodeOp constant = constantBehind(v);
  if (!constant)
    return std::nullopt;
  auto [it, inserted] = cache_.try_emplace(constant.getOperation());
  if (inserted)
    it->second.mask = maskOfConstant(constant, &it->second.whyNot);
  if (whyNot)
    *whyNot = it->second.whyNot;
  return it->second.mask;
}

bool isZeroConstant(Value v) {
  NodeOp constant = producer(v, {"Constant"});
  auto dense = constant ? constant.getOnnxAttrs().getAs<DenseElementsAttr>("value") : nullptr;
  if (!dense)
    return false;
  if (dense.isSplat())
    return llvm::isa<FloatType>(dense.getElementType()) ? dense.getSplatValue<APFloat>().isZero()
                                                        : dense.getSplatValue<APInt>().isZero();
  auto values = valuesOf(dense);
  return values && llvm::all_of(*values, [](double x) { return x == 0.0; });
}

bool isProjection(NodeOp node) {
  if (!node || (node.getOpType() != "MatMul" && node.getOpType() != "Gemm") ||
      node.getInputs().size() < 2)
    return false;
  Value w = skipDataMovement(node.getInputs()[1]);
  while (NodeOp t = producer(w, {"Transpose"}))
    w = skipDataMovement(t.getInputs()[0]);
  return static_cast<bool>(weightOf(w));
}

namespace {

/// The ops on the sigmoid router's choice path: selecting, masking and biasing the scores.
bool onChoicePath(StringRef op) {
  static const llvm::StringSet<> ops = {
      "Reshape", "Unsqueeze",       "Squeeze", "Flatten",   "Identity",        "Cast",
      "Add",     "Where",           "TopK",    "ReduceSum", "Expand",          "Not",
      "Equal",   "ScatterElements", "Concat",  "Tile",      "ConstantOfShape", "Constant"};
  return ops.contains(op);
}

NodeOp projectionSigmoid(NodeOp node) {
  return node && node.getOpType() == "Sigmoid" && node.getDomain().empty() &&
                 isProjection(producer(skipDataMovement(node.getInputs()[0])))
             ? node
             : NodeOp();
}

} // namespace

NodeOp sigmoidRouterScores(NodeOp topk) {
  llvm::DenseSet<Value> seen;
  std::deque<Value> work{topk.getInputs()[0]};
  for (int budget = 64; !work.empty() && budget-- > 0;) {
    Value v = work.front();
    work.pop_front();
    if (!seen.insert(v).second)
      continue;
    NodeOp n = producer(v);
    if (!n)
      continue;
    if (NodeOp s = projectionSigmoid(n))
      return s;
    if (onChoicePath(n.getOpType()))
      for (Value in : n.getInputs())
        work.push_back(in);
  }
  return nullptr;
}

NodeOp routerTopKOf(NodeOp sigmoid) {
  if (!projectionSigmoid(sigmoid))
    return nullptr;
  llvm::DenseSet<Value> seen;
  std::deque<Value> work{sigmoid.getOutputs()[0]};
  for (int budget = 64; !work.empty() && budget-- > 0;) {
    Value v = work.front();
    work.pop_front();
    if (!seen.insert(v).second)
      continue;
    for (Operation *user : v.getUsers()) {
      auto n = dyn_cast<NodeOp>(user);
      if (!n)
        continue;
      if (n.getOpType() == "TopK" && n.getInputs()[0] == v)
        return n;
      if (onChoicePath(n.getOpType()))
        for (Value out : n.getOutputs())
          work.push_back(out);
    }
  }
  return nullptr;
}

} // namespace disagmoe::raise
