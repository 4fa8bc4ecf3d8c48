//===- FuseExchange.cpp - dispatch/combine become M2N, N2M and residual ---===//
//
// After partitioning, the values that flow from an attention stage of layer l into the FFN stage of
// layer l are the token activations and their routing: they become one `moe.m2n` (A-group l mod p to
// F-group l mod p). The FFN stage's output flows to the consumer of x_{l+1} on attention group
// (l+1) mod p through `moe.n2m`; the residual stream h_l goes there directly through
// `moe.residual` (DESIGN.md, "Exchanges"; DisagMoE, seeds/000, "M2N/N2M").
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"

#include "mlir/IR/Builders.h"

namespace disagmoe {
#define GEN_PASS_DEF_FUSEEXCHANGE
#include "passes/Passes.h.inc"

namespace {
using namespace mlir;

struct FuseExchangePass : impl::FuseExchangeBase<FuseExchangePass> {
  using FuseExchangeBase::FuseExchangeBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (groups < 1) {
      module.emitError() << "fuse-exchange: groups must be at least 1, got " << static_cast<int64_t>(groups);
      return signalPassFailure();
    }
    for (auto func : module.getOps<func::FuncOp>())
      if (failed(fuse(func)))
        return signalPassFailure();
    module->setAttr("moe.num_groups",
                    IntegerAttr::get(IntegerType::get(module.getContext(), 64), groups));
  }

  LogicalResult fuse(func::FuncOp func) {
    SmallVector<moe::StageOp> stages(func.getOps<moe::StageOp>());
    if (stages.empty())
      return func.emitError("fuse-exchange: no moe.stage ops; run partition-components first");
    int64_t numLayers = 0;
    for (auto stage : stages)
      if (stage.getSide() == "ffn" || stage.getSide() == "attention")
        numLayers = std::max(numLayers, stage.getLayer() + 1);
    if (numLayers % groups != 0)
      return func.emitError() << "fuse-exchange: " << static_cast<int64_t>(groups) << " groups do not divide the "
                              << numLayers << " layers (layer l runs on group l mod p)";

    OpBuilder b(func.getContext());
    for (auto stage : stages) {
      if (stage.getSide() != "ffn")
        continue;
      int64_t layer = stage.getLayer(), group = layer % groups, next = (layer + 1) % groups;
      // Dispatch: the FFN stage's inputs are (activations, expert ids, gates) from attention.
      if (stage.getInputs().size() != 3)
        return stage.emitError() << "ffn stage of layer " << layer
                                 << " must take (activations, ids, gates), has "
                                 << stage.getInputs().size() << " inputs";
      b.setInsertionPoint(stage);
      auto m2n = b.create<moe::M2NOp>(stage.getLoc(), stage.getInputs()[0].getType(),
                                      stage.getInputs()[1].getType(),
                                      stage.getInputs()[2].getType(), stage.getInputs()[0],
                                      stage.getInputs()[1], stage.getInputs()[2], layer, group,
                                      group);
      stage->setOperands(m2n.getResults());

      // Combine: every consumer of the FFN output receives it through an N2M exchange, and the
      // residual h_l that it is added to through a residual route.
      b.setInsertionPointAfter(stage);
      for (Value out : stage.getOutputs()) {
        auto n2m = b.create<moe::N2MOp>(stage.getLoc(), out.getType(), out, layer, group, next);
        out.replaceAllUsesExcept(n2m.getResult(), n2m);
        for (Operation *consumer : n2m->getUsers())
          if (failed(routeResidual(b, consumer, stage, layer, group, next)))
            return failure();
      }
    }
    return success();
  }

  /// The consumer stage of y_l also takes h_l from layer l's attention stage: send it through
  /// moe.residual, placed just before the consumer.
  LogicalResult routeResidual(OpBuilder &b, Operation *consumer, moe::StageOp ffn, int64_t layer,
                              int64_t group, int64_t next) {
    for (OpOperand &operand : consumer->getOpOperands()) {
      auto producer = operand.get().getDefiningOp<moe::StageOp>();
      if (!producer || producer.getSide() != "attention" || producer.getLayer() != layer)
        continue;
      b.setInsertionPoint(consumer);
      auto residual = b.create<moe::ResidualOp>(ffn.getLoc(), operand.get().getType(),
                                                operand.get(), layer, group, next);
      operand.set(residual.getResult());
      return success();
    }
    return consumer->emitError() << "consumer of layer " << layer
                                 << "'s FFN output takes no residual from its attention stage";
  }
};
} // namespace
} // namespace disagmoe
