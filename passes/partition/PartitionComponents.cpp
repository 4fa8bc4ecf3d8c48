//===- PartitionComponents.cpp - outline attention and FFN stages ---------===//
//
// Cuts the raised model at the component boundary of DisagMoE (seeds/000, "Disaggregation"): per
// layer l, an attention stage (attention norm, attention, residual add, FFN norm, router) and an
// FFN stage (experts). The residual add that forms x_{l+1} = h_l + y_l belongs to the receiver,
// i.e. to the next layer's attention stage (or the head stage), so the residual stream crosses the
// cut explicitly. Always-on FFNs (moe.dense_ffn: a dense layer's FFN, or shared experts) stay on
// the attention side with their residual add; fuse-exchange moves those that assign-groups puts on
// the FFN side into the layer's FFN stage. Weight references (`onnx.weight`) are cloned into the
// stages that use them, which are isolated from above.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/SetVector.h"

namespace disagmoe {
#define GEN_PASS_DEF_PARTITIONCOMPONENTS
#include "passes/Passes.h.inc"

namespace {
using namespace mlir;

/// Layer of a raised component op, or nullopt for ops without one (embedding, head, adds).
std::optional<int64_t> layerOf(Operation *op) {
  if (auto attr = op->getAttrOfType<IntegerAttr>("layer"))
    return attr.getInt();
  return std::nullopt;
}

/// Stage key of an op: (side, layer). Residual adds go with the consumer of the sum.
struct StageKey {
  std::string side;
  int64_t layer;
  bool operator<(const StageKey &o) const {
    return std::tie(layer, side) < std::tie(o.layer, o.side);
  }
};

/// Moves `ops` (in program order) into a new moe.stage placed after the last of them.
void outlineStage(OpBuilder &b, const StageKey &key, ArrayRef<Operation *> ops) {
  llvm::SmallPtrSet<Operation *, 16> inSet(ops.begin(), ops.end());
  llvm::SetVector<Value> inputs, outputs;
  llvm::SetVector<Operation *> weights;
  for (Operation *op : ops) {
    for (Value operand : op->getOperands()) {
      Operation *def = operand.getDefiningOp();
      if (def && inSet.contains(def))
        continue;
      if (def && isa<onnxir::WeightOp>(def))
        weights.insert(def);
      else
        inputs.insert(operand);
    }
    for (Value result : op->getResults())
      for (Operation *user : result.getUsers())
        if (!inSet.contains(user))
          outputs.insert(result);
  }

  b.setInsertionPointAfter(ops.back());
  SmallVector<Type> outTypes;
  for (Value v : outputs)
    outTypes.push_back(v.getType());
  auto stage = b.create<moe::StageOp>(
      ops.front()->getLoc(), outTypes, b.getStringAttr(key.side), b.getI64IntegerAttr(key.layer),
      /*group=*/IntegerAttr(), /*on=*/StringAttr(), inputs.getArrayRef());
  Block *body = new Block();
  stage.getBody().push_back(body);
  IRMapping map;
  for (Value in : inputs)
    map.map(in, body->addArgument(in.getType(), in.getLoc()));
  OpBuilder inner = OpBuilder::atBlockEnd(body);
  for (Operation *w : weights)
    inner.clone(*w, map);
  for (Operation *op : ops)
    inner.clone(*op, map);
  SmallVector<Value> yielded;
  for (Value v : outputs)
    yielded.push_back(map.lookup(v));
  inner.create<moe::YieldOp>(ops.back()->getLoc(), yielded);

  for (auto [index, oldValue] : llvm::enumerate(outputs))
    Value(oldValue).replaceUsesWithIf(stage.getOutputs()[index], [&](OpOperand &use) {
      return !inSet.contains(use.getOwner()) && use.getOwner() != stage;
    });
  for (Operation *op : llvm::reverse(ops))
    op->erase();
}

struct PartitionComponentsPass : impl::PartitionComponentsBase<PartitionComponentsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    for (auto func : module.getOps<func::FuncOp>())
      if (failed(partition(func)))
        return signalPassFailure();
  }

  LogicalResult partition(func::FuncOp func) {
    bool hasStages = false;
    func.walk([&](moe::StageOp) { hasStages = true; });
    if (hasStages)
      return func.emitError("function is already partitioned");

    int64_t numLayers = 0;
    func.walk([&](Operation *op) {
      if (isa<moe::AttentionOp, moe::MlaAttentionOp, moe::ExpertsOp>(op))
        numLayers = std::max(numLayers, *layerOf(op) + 1);
    });

    // Assign every component op and residual add to a stage, in program order.
    std::map<StageKey, SmallVector<Operation *>> stages;
    for (Operation &op : func.getBody().front()) {
      std::optional<StageKey> key;
      if (isa<moe::EmbeddingOp>(op))
        key = StageKey{"embedding", 0};
      else if (isa<moe::HeadOp>(op))
        key = StageKey{"head", numLayers};
      else if (auto norm = dyn_cast<moe::RmsNormOp>(op))
        key = norm.getRole() == "final_norm" ? StageKey{"head", numLayers}
                                             : StageKey{"attention", norm.getLayer()};
      else if (isa<moe::AttentionOp, moe::MlaAttentionOp, moe::RouterOp, moe::DenseFfnOp>(op))
        key = StageKey{"attention", *layerOf(&op)}; // dense FFNs and shared experts: attention side
      else if (isa<moe::ExpertsOp>(op))
        key = StageKey{"ffn", *layerOf(&op)};
      else if (isa<arith::AddFOp>(op))
        key = residualAddStage(&op, numLayers);
      else if (isa<onnxir::WeightOp, func::ReturnOp>(op))
        continue;
      if (!key)
        return op.emitError("partition-components: op is not a raised component; run "
                            "raise-onnx-to-moe first");
      stages[*key].push_back(&op);
    }

    OpBuilder b(func.getContext());
    for (auto &[key, ops] : stages)
      outlineStage(b, key, ops);
    // Weight references now live inside the stages.
    for (auto weight : llvm::make_early_inc_range(func.getOps<onnxir::WeightOp>()))
      if (weight->use_empty())
        weight->erase();
    return success();
  }

  /// h = x + attention(x) belongs to the attention stage of its layer, and so do r = h + shared(h)
  /// and a dense layer's x_{l+1} = h + dense(h) (moe.dense_ffn runs on the attention side; a dense
  /// layer's output then takes the residual route); x_{l+1} = h_l + y_l (y the experts' output)
  /// belongs to the stage that consumes it: layer l+1's attention stage, or the head.
  std::optional<StageKey> residualAddStage(Operation *add, int64_t numLayers) {
    for (Value operand : add->getOperands()) {
      Operation *def = operand.getDefiningOp();
      if (auto attn = dyn_cast_or_null<moe::AttentionOp>(def))
        return StageKey{"attention", attn.getLayer()};
      if (auto ffn = dyn_cast_or_null<moe::DenseFfnOp>(def))
        return StageKey{"attention", ffn.getLayer()};
      if (auto mla = dyn_cast_or_null<moe::MlaAttentionOp>(def))
        return StageKey{"attention", mla.getLayer()};
      if (auto experts = dyn_cast_or_null<moe::ExpertsOp>(def)) {
        int64_t next = experts.getLayer() + 1;
        return next < numLayers ? StageKey{"attention", next} : StageKey{"head", numLayers};
      }
    }
    return std::nullopt;
  }
};
} // namespace
} // namespace disagmoe
