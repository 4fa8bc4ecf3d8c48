//===- FuseExchange.cpp - dispatch/combine become M2N, N2M and residual ---===//
//
// After partitioning and group assignment, the values that flow from the attention stage of layer l
// into the FFN stage of layer l are the token activations and their routing: they become one
// `moe.m2n` (attention group of l to FFN group of l). The FFN stage's output flows to the stage that
// forms x_{l+1} (the next layer's attention stage, or the head) through `moe.n2m`; the residual
// stream h_l goes there directly through `moe.residual` (DESIGN.md, "Exchanges"; DisagMoE,
// seeds/000, "M2N/N2M").
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
  void runOnOperation() override {
    ModuleOp module = getOperation();
    for (auto func : module.getOps<func::FuncOp>())
      if (failed(fuse(func)))
        return signalPassFailure();
  }

  LogicalResult fuse(func::FuncOp func) {
    SmallVector<moe::StageOp> stages(func.getOps<moe::StageOp>());
    if (stages.empty())
      return func.emitError("fuse-exchange: no moe.stage ops; run partition-components first");
    for (moe::StageOp stage : stages)
      if (!stage.getGroup())
        return stage.emitError() << "fuse-exchange: " << stage.getSide() << " stage of layer "
                                 << stage.getLayer() << " has no group; run assign-groups first";

    OpBuilder b(func.getContext());
    for (moe::StageOp stage : stages) {
      if (stage.getSide() != "ffn")
        continue;
      int64_t layer = stage.getLayer(), ffnGroup = *stage.getGroup();
      // Dispatch: the FFN stage's inputs are (activations, expert ids, gates) from attention.
      if (stage.getInputs().size() != 3)
        return stage.emitError() << "ffn stage of layer " << layer
                                 << " must take (activations, ids, gates), has "
                                 << stage.getInputs().size() << " inputs";
      auto producer = stage.getInputs()[0].getDefiningOp<moe::StageOp>();
      if (!producer || producer.getSide() != "attention")
        return stage.emitError() << "ffn stage of layer " << layer
                                 << " is not fed by an attention stage";
      b.setInsertionPoint(stage);
      auto m2n = b.create<moe::M2NOp>(stage.getLoc(), stage.getInputs()[0].getType(),
                                      stage.getInputs()[1].getType(),
                                      stage.getInputs()[2].getType(), stage.getInputs()[0],
                                      stage.getInputs()[1], stage.getInputs()[2], layer,
                                      *producer.getGroup(), ffnGroup);
      stage->setOperands(m2n.getResults());

      // Combine: every consumer of the FFN output receives it through an N2M exchange, and the
      // residual h_l that it is added to through a residual route, both into the consumer's group.
      for (Value out : stage.getOutputs()) {
        for (OpOperand &use : llvm::make_early_inc_range(out.getUses())) {
          auto consumer = dyn_cast<moe::StageOp>(use.getOwner());
          if (!consumer)
            return use.getOwner()->emitError()
                   << "the FFN output of layer " << layer << " must feed a stage";
          b.setInsertionPoint(consumer);
          auto n2m = b.create<moe::N2MOp>(stage.getLoc(), out.getType(), out, layer, ffnGroup,
                                          *consumer.getGroup());
          use.set(n2m.getResult());
          if (failed(routeResidual(b, consumer, layer)))
            return failure();
        }
      }
    }
    // Dense layers have no FFN stage: their attention stage's output x_{l+1} = r_l goes to the
    // stage that consumes it (layer l+1's attention, or the head) by the residual route alone.
    for (moe::StageOp consumer : func.getOps<moe::StageOp>()) {
      for (OpOperand &operand : consumer->getOpOperands()) {
        auto producer = operand.get().getDefiningOp<moe::StageOp>();
        if (!producer || producer.getSide() != "attention" || producer == consumer ||
            consumer.getSide() == "ffn")
          continue;
        b.setInsertionPoint(consumer);
        auto residual = b.create<moe::ResidualOp>(producer.getLoc(), operand.get().getType(),
                                                  operand.get(), producer.getLayer(),
                                                  *producer.getGroup(), *consumer.getGroup());
        operand.set(residual.getResult());
      }
    }
    return success();
  }

  /// The consumer stage of y_l also takes h_l from layer l's attention stage: send it through
  /// moe.residual, placed just before the consumer.
  LogicalResult routeResidual(OpBuilder &b, moe::StageOp consumer, int64_t layer) {
    for (OpOperand &operand : consumer->getOpOperands()) {
      auto producer = operand.get().getDefiningOp<moe::StageOp>();
      if (!producer || producer.getSide() != "attention" || producer.getLayer() != layer)
        continue;
      b.setInsertionPoint(consumer);
      auto residual = b.create<moe::ResidualOp>(producer.getLoc(), operand.get().getType(),
                                                operand.get(), layer, *producer.getGroup(),
                                                *consumer.getGroup());
      operand.set(residual.getResult());
      return success();
    }
    return consumer.emitError() << "consumer of layer " << layer
                                << "'s FFN output takes no residual from its attention stage";
  }
};
} // namespace
} // namespace disagmoe
