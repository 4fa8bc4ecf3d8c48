//===- MatchUtils.cpp - the match context and the helpers of the component patterns ---===//
#include "passes/raise/patterns/ComponentMatcher.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/DenseSet.h"

#include <cstdio>
#include <cstdlib>
#include <deque>
#include <limits>

using namespace mlir;

namespace disagmoe::raise {

double shortestF32(double v) {
  const float f = static_cast<float>(v);
  for (int digits = 1; digits <= 9; ++digits) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.*g", digits, v);
    double d = std::strtod(buf, nullptr);
    if (static_cast<float>(d) == f)
      return d;
  }
  return v;
}

// --- MatchContext --------------------------------------------------------------------------

MatchContext::MatchContext(func::FuncOp func, int64_t hidden) : func(func) {
  auto ids = llvm::cast<RankedTensorType>(func.getArgument(0).getType());
  const int64_t batch = ids.getDimSize(0), seq = ids.getDimSize(1);
  tokens = ShapedType::isDynamic(batch) || ShapedType::isDynamic(seq) ? ShapedType::kDynamic
                                                                      : batch * seq;
  actType = RankedTensorType::get({batch, seq, hidden}, Float32Type::get(func.getContext()));
  int64_t i = 0;
  func.walk([&](Operation *op) { order_[op] = i++; });
}

void MatchContext::recordFailure(Operation *anchor, MatchError error) {
  failures_.try_emplace(anchor, std::move(error));
}

std::optional<std::pair<Operation *, MatchError>> MatchContext::earliestFailure() const {
  std::optional<std::pair<Operation *, MatchError>> best;
  int64_t bestOrder = std::numeric_limits<int64_t>::max();
  for (const auto &[anchor, error] : failures_) {
    auto it = order_.find(anchor);
    int64_t o = it == order_.end() ? std::numeric_limits<int64_t>::max() - 1 : it->second;
    if (!best || o < bestOrder)
      best = std::make_pair(anchor, error), bestOrder = o;
  }
  return best;
}

void MatchContext::inheritOrder(Operation *op, Operation *original) {
  if (auto it = order_.find(original); it != order_.end())
    order_[op] = it->second;
  described_[op] = describeOp(original);
}

std::string MatchContext::describeOp(Operation *op) const {
  if (auto node = dyn_cast<NodeOp>(op))
    return describe(node);
  if (auto it = described_.find(op); it != described_.end())
    return it->second;
  return op->getName().getStringRef().str();
}

SmallVector<NodeOp> MatchContext::nodesOfType(StringRef opType) {
  if (!nodesByType_) {
    nodesByType_.emplace();
    func.walk([&](NodeOp node) { (*nodesByType_)[node.getOpType()].push_back(node); });
  }
  SmallVector<NodeOp> out;
  auto it = nodesByType_->find(opType);
  if (it != nodesByType_->end())
    for (NodeOp node : it->second)
      if (!erasedNodes_.contains(node))
        out.push_back(node);
  return out;
}

void MatchContext::notifyOperationErased(Operation *op) {
  if (isa<NodeOp>(op))
    erasedNodes_.insert(op);
  failures_.erase(op);
  order_.erase(op);
  described_.erase(op);
  masks.forget(op);
  for (Value r : op->getResults())
    expertCandidates.erase(r);
}

// --- ComponentMatcher helpers --------------------------------------------------------------

std::nullopt_t ComponentMatcher::fail(Operation *at, const std::string &message) {
  if (!error) {
    bool named = isa<NodeOp>(at) || !isa<func::FuncOp>(at);
    error = MatchError{at->getLoc(), named ? ctx.describeOp(at) + ": " + message : message};
  }
  return std::nullopt;
}

SmallVector<std::pair<NodeOp, WeightOp>> ComponentMatcher::projections(Value x) {
  SmallVector<std::pair<NodeOp, WeightOp>> out;
  for (NodeOp mm : consumers(x, "MatMul"))
    if (mm.getInputs()[0] == x)
      if (WeightOp w = weightOf(mm.getInputs()[1]))
        out.push_back({mm, w});
  return out;
}

std::pair<NodeOp, WeightOp> ComponentMatcher::biasAfter(Value y, int64_t width) {
  for (NodeOp add : consumers(y, "Add")) {
    auto other = otherOperand(add, y);
    WeightOp b = other ? weightOf(*other) : WeightOp();
    if (b && staticShape(b.getResult()) == SmallVector<int64_t>{width})
      return {add, b};
  }
  return {nullptr, nullptr};
}

NodeOp ComponentMatcher::findDownstream(Value v, StringRef opType, bool needWeight, int budget) {
  llvm::DenseSet<Operation *> seen;
  std::deque<Value> work{v};
  while (!work.empty() && budget-- > 0) {
    Value cur = work.front();
    work.pop_front();
    for (Operation *user : cur.getUsers()) {
      auto node = dyn_cast<NodeOp>(user);
      if (!node || !seen.insert(node).second)
        continue;
      bool weighted = node.getOpType() == "MatMul" && weightOf(node.getInputs()[1]);
      if (node.getOpType() == opType && (!needWeight || weighted))
        return node;
      if (weighted)
        continue;
      for (Value out : node.getOutputs())
        work.push_back(out);
    }
  }
  return nullptr;
}

SmallVector<NodeOp> ComponentMatcher::between(NodeOp from, NodeOp to) {
  SmallVector<NodeOp> chain;
  Value cur = from.getOutputs()[0];
  for (int i = 0; i < 8; ++i) {
    auto users = cur.getUsers();
    if (users.empty())
      break;
    auto node = dyn_cast<NodeOp>(*users.begin());
    if (!node || node == to)
      break;
    chain.push_back(node);
    cur = node.getOutputs()[0];
  }
  return chain;
}

SmallVector<NodeOp> ComponentMatcher::allNodes(StringRef opType) { return ctx.nodesOfType(opType); }

Operation *ComponentMatcher::firstUser(Value v) {
  return v.getUsers().empty() ? v.getParentBlock()->getParentOp() : *v.getUsers().begin();
}

int64_t ComponentMatcher::outWidth(WeightOp w) {
  auto shape = staticShape(w.getResult());
  return shape.size() >= 2 ? shape.back() : -1;
}

ComponentMatcher::~ComponentMatcher() {
  for (Operation *op : llvm::reverse(created_))
    if (op->use_empty())
      op->erase();
}

WeightOp ComponentMatcher::sliceRef(WeightOp w, int64_t e, bool transpose) {
  auto type = llvm::cast<RankedTensorType>(w.getResult().getType());
  SmallVector<int64_t> shape;
  for (int64_t d : type.getShape().drop_front())
    if (d != 1)
      shape.push_back(d);
  if (shape.empty())
    shape.push_back(1);
  if (transpose && shape.size() == 2)
    std::swap(shape[0], shape[1]);
  const int64_t bytes = static_cast<int64_t>(w.getLength()) / type.getDimSize(0);
  OpBuilder b(w);
  b.setInsertionPointAfter(w);
  auto ref = b.create<WeightOp>(
      w.getLoc(), RankedTensorType::get(shape, type.getElementType()),
      b.getStringAttr(w.getWeightName().str() + "[" + std::to_string(e) + "]"), w.getFileAttr(),
      b.getI64IntegerAttr(static_cast<int64_t>(w.getOffset()) + e * bytes),
      b.getI64IntegerAttr(bytes), /*value=*/ElementsAttr(),
      transpose && shape.size() == 2 ? b.getUnitAttr() : UnitAttr(), /*row_stride=*/IntegerAttr(),
      w.getStoredTypeAttr());
  created_.push_back(ref);
  return ref;
}

WeightOp ComponentMatcher::reshapedRef(WeightOp w, ArrayRef<int64_t> shape) {
  auto type = llvm::cast<RankedTensorType>(w.getResult().getType());
  OpBuilder b(w);
  b.setInsertionPointAfter(w);
  auto ref = b.create<WeightOp>(w.getLoc(), RankedTensorType::get(shape, type.getElementType()),
                                w.getWeightNameAttr(), w.getFileAttr(), w.getOffsetAttr(),
                                w.getLengthAttr(), /*value=*/ElementsAttr(), w.getTransposedAttr(),
                                /*row_stride=*/IntegerAttr(), w.getStoredTypeAttr());
  created_.push_back(ref);
  return ref;
}

WeightOp ComponentMatcher::transposedRef(WeightOp w) {
  auto type = llvm::cast<RankedTensorType>(w.getResult().getType());
  OpBuilder b(w);
  b.setInsertionPointAfter(w);
  auto ref = b.create<WeightOp>(
      w.getLoc(),
      RankedTensorType::get({type.getDimSize(1), type.getDimSize(0)}, type.getElementType()),
      w.getWeightNameAttr(), w.getFileAttr(), w.getOffsetAttr(), w.getLengthAttr(),
      /*value=*/ElementsAttr(), b.getUnitAttr(), /*row_stride=*/IntegerAttr(),
      w.getStoredTypeAttr());
  created_.push_back(ref);
  return ref;
}

bool ComponentMatcher::isZeros(Value v) {
  if (isZeroConstant(skipDataMovement(v)))
    return true; // folded by the fold stage
  NodeOp node = producer(skipDataMovement(v), {"ConstantOfShape"});
  if (!node)
    return false;
  auto attr = node.getOnnxAttrs().get("value");
  if (!attr)
    return true;
  auto dense = llvm::dyn_cast<DenseElementsAttr>(attr);
  if (!dense || !dense.isSplat())
    return false;
  return llvm::isa<FloatType>(dense.getElementType()) ? dense.getSplatValue<APFloat>().isZero()
                                                      : dense.getSplatValue<APInt>().isZero();
}

std::string ComponentMatcher::einsumEquation(NodeOp n) {
  std::string eq;
  if (auto a = n.getOnnxAttrs().getAs<StringAttr>("equation"))
    for (char c : a.getValue())
      if (c != ' ')
        eq += c;
  return eq;
}

WeightOp ComponentMatcher::gatheredByIds(Value v, Value ids) {
  NodeOp g = producer(v, {"Gather"});
  if (!g || g.getInputs()[1] != ids)
    return nullptr;
  if (auto axis = g.getOnnxAttrs().getAs<IntegerAttr>("axis"); axis && axis.getInt() != 0)
    return nullptr;
  return weightOf(g.getInputs()[0]);
}

int64_t ComponentMatcher::rankOf(Value v, int depth) {
  if (auto t = llvm::dyn_cast<ShapedType>(v.getType()); t && t.hasRank())
    return t.getRank();
  NodeOp node = producer(v);
  if (!node || depth > 4)
    return -1;
  if (node.getOpType() == "Einsum") {
    std::string eq = einsumEquation(node);
    auto arrow = eq.find("->");
    return arrow == std::string::npos ? -1 : static_cast<int64_t>(eq.size() - arrow - 2);
  }
  if (node.getOpType() == "Add" || node.getOpType() == "Mul") {
    int64_t r = -1;
    for (Value in : node.getInputs())
      r = std::max(r, rankOf(in, depth + 1));
    return r;
  }
  return -1;
}

bool ComponentMatcher::isStrideTwoSlice(NodeOp slice, int64_t start) {
  auto ins = slice.getInputs();
  if (ins.size() < 5)
    return false;
  auto starts = constantValues(ins[1]), axes = constantValues(ins[3]),
       steps = constantValues(ins[4]);
  const int64_t rank = rankOf(ins[0]);
  return starts && axes && steps && starts->size() == 1 && axes->size() == 1 &&
         steps->size() == 1 && (*starts)[0] == start && (*steps)[0] == 2 &&
         ((*axes)[0] == -1 || (*axes)[0] == rank - 1);
}

// --- rewriting ------------------------------------------------------------------------------

void eraseIfUnused(PatternRewriter &rewriter, Operation *root) {
  llvm::DenseSet<Operation *> erased;
  SmallVector<Operation *> work{root};
  while (!work.empty()) {
    Operation *op = work.pop_back_val();
    if (!op || erased.contains(op) || !isa<NodeOp, onnxir::NoneOp, WeightOp>(op) ||
        !op->use_empty())
      continue;
    for (Value operand : op->getOperands())
      if (Operation *def = operand.getDefiningOp())
        work.push_back(def);
    erased.insert(op);
    rewriter.eraseOp(op);
  }
}

void replaceComponent(PatternRewriter &rewriter, Value value, Value replacement) {
  Operation *def = value.getDefiningOp();
  rewriter.replaceAllUsesWith(value, replacement);
  if (def)
    eraseIfUnused(rewriter, def);
}

} // namespace disagmoe::raise
