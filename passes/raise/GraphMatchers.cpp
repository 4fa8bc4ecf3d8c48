//===- GraphMatchers.cpp - structural queries over the `onnx` dialect -----===//
#include "passes/raise/GraphMatchers.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/DenseSet.h"

#include <deque>

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

} // namespace disagmoe::raise
