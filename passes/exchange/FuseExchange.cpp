//===- FuseExchange.cpp - dispatch/combine become M2N, N2M and residual ---===//
//
// After partitioning and group assignment, the values that flow from the attention stage of layer l
// into the FFN stage of layer l are the token activations and their routing: they become one
// `moe.m2n` (attention group of l to FFN group of l). The FFN stage's output flows to the stage
// that forms x_{l+1} (the next layer's attention stage, or the head) through `moe.n2m`; the
// residual stream h_l goes there directly through `moe.residual` (docs/architecture.md,
// "Exchanges"; DisagMoE, seeds/000, "M2N/N2M"). FFN-side always-on FFNs (assign-groups' dense-side
// / shared-experts-side) first move into the layer's FFN stage, and FFN-side embedding / head get a
// moe.home_transfer, so that the IR carries every exchange the executor sends (docs/plan-format.md,
// `dense_ffn`, "FFN-side embedding and head").
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"

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
    if (failed(outlineFfnSideAlwaysOn(b, func)) || failed(addHomeTransfers(b, func)))
      return failure();
    stages.assign(func.getOps<moe::StageOp>().begin(), func.getOps<moe::StageOp>().end());
    for (moe::StageOp stage : stages) {
      if (stage.getSide() != "ffn")
        continue;
      int64_t layer = stage.getLayer(), ffnGroup = *stage.getGroup();
      // Dispatch: the FFN stage's inputs are (activations, expert ids, gates) from attention, or
      // the activations alone for a dense layer's FFN-side dense FFN (no routing).
      const size_t numInputs = stage.getInputs().size();
      if (numInputs != 3 && numInputs != 1)
        return stage.emitError() << "ffn stage of layer " << layer
                                 << " must take (activations, ids, gates) or, for an FFN-side "
                                    "dense FFN, (activations), has "
                                 << numInputs << " inputs";
      auto producer = stage.getInputs()[0].getDefiningOp<moe::StageOp>();
      if (!producer || producer.getSide() != "attention")
        return stage.emitError() << "ffn stage of layer " << layer
                                 << " is not fed by an attention stage";
      b.setInsertionPoint(stage);
      Value ids = numInputs == 3 ? stage.getInputs()[1] : Value();
      Value gates = numInputs == 3 ? stage.getInputs()[2] : Value();
      auto m2n = b.create<moe::M2NOp>(stage.getLoc(), stage.getInputs()[0].getType(),
                                      ids ? ids.getType() : Type(),
                                      gates ? gates.getType() : Type(), stage.getInputs()[0], ids,
                                      gates, layer, *producer.getGroup(), ffnGroup);
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

  /// Moves every FFN-side moe.dense_ffn out of its attention stage into the layer's FFN stage:
  ///  - shared experts of an MoE layer: r = h + shared(xn) leaves the attention stage (which now
  ///    yields h); the FFN stage computes y = shared(x) + experts(x, ids, gates) (the home F-rank
  ///    starts its N2M vector with shared(x)), so the consumer's x_{l+1} = h + N2M(y) keeps its
  ///    value;
  ///  - a dense layer: a new FFN stage computes y = dense(xn); the attention stage yields h and xn
  ///    instead of x_{l+1} = h + y, and each consumer forms x_{l+1} = h + y itself, as at the cut
  ///    of an MoE layer. The dispatch loop then gives it an M2N without ids / gates and an N2M.
  LogicalResult outlineFfnSideAlwaysOn(OpBuilder &b, func::FuncOp func) {
    SmallVector<moe::DenseFfnOp> moved;
    func.walk([&](moe::DenseFfnOp d) {
      auto stage = d->getParentOfType<moe::StageOp>();
      if (d.getSide() && *d.getSide() == "ffn" && stage && stage.getSide() == "attention")
        moved.push_back(d);
    });
    for (moe::DenseFfnOp d : moved) {
      auto attn = d->getParentOfType<moe::StageOp>();
      const int64_t layer = d.getLayer();
      auto add = d->hasOneUse() ? dyn_cast<arith::AddFOp>(*d->user_begin()) : arith::AddFOp();
      if (!add || !add->hasOneUse() || !isa<moe::YieldOp>(*add->user_begin()))
        return d.emitError() << "fuse-exchange: the FFN-side dense_ffn of layer " << layer
                             << " must feed one residual add that its attention stage yields";
      Value h = add.getLhs() == d.getResult() ? add.getRhs() : add.getLhs();
      // Weights move with the FFN: clone their onnx.weight references.
      for (Value w : {d.getW1(), d.getW3(), d.getW2()})
        if (!w.getDefiningOp<onnxir::WeightOp>())
          return d.emitError() << "fuse-exchange: the FFN-side dense_ffn of layer " << layer
                               << " must take its weights from onnx.weight inside its stage";
      auto cloneInto = [&](Block &block, Value x) {
        OpBuilder inner = OpBuilder::atBlockBegin(&block);
        IRMapping map;
        map.map(d.getX(), x);
        for (Value w : {d.getW1(), d.getW3(), d.getW2()})
          if (!map.contains(w))
            map.map(w, inner.clone(*w.getDefiningOp())->getResult(0));
        return cast<moe::DenseFfnOp>(inner.clone(*d, map));
      };
      if (d.getRole() == "shared") {
        moe::StageOp ffn;
        for (moe::StageOp s : func.getOps<moe::StageOp>())
          if (s.getSide() == "ffn" && s.getLayer() == layer)
            ffn = s;
        if (!ffn || ffn.getInputs().empty() || ffn.getInputs()[0].getDefiningOp() != attn ||
            attn.getBody().front().getTerminator()->getOperand(
                cast<OpResult>(ffn.getInputs()[0]).getResultNumber()) != d.getX())
          return d.emitError() << "fuse-exchange: the FFN-side shared experts of layer " << layer
                               << " need an FFN stage whose activations are their input";
        Block &body = ffn.getBody().front();
        moe::DenseFfnOp shared = cloneInto(body, body.getArgument(0));
        Operation *yield = body.getTerminator();
        if (yield->getNumOperands() != 1)
          return ffn.emitError() << "ffn stage of layer " << layer << " must yield one value";
        OpBuilder inner(yield);
        yield->setOperand(
            0, inner.create<arith::AddFOp>(add.getLoc(), shared.getResult(), yield->getOperand(0)));
        add.getResult().replaceAllUsesWith(h);
      } else {
        // Rebuild the attention stage with xn as an extra output, then its FFN stage.
        Operation *yield = attn.getBody().front().getTerminator();
        const unsigned xIndex = cast<OpOperand &>(*add->getUses().begin()).getOperandNumber();
        yield->insertOperands(yield->getNumOperands(), d.getX());
        SmallVector<Type> types(attn.getResultTypes());
        types.push_back(d.getX().getType());
        b.setInsertionPoint(attn);
        auto grown =
            b.create<moe::StageOp>(attn.getLoc(), types, attn.getSideAttr(), attn.getLayerAttr(),
                                   attn.getGroupAttr(), attn.getOnAttr(), attn.getInputs());
        grown.getBody().takeBody(attn.getBody());
        for (auto [from, to] : llvm::zip(attn.getResults(), grown.getResults()))
          from.replaceAllUsesWith(to);
        attn.erase();
        attn = grown;
        add.getResult().replaceAllUsesWith(h); // the attention stage now yields h at xIndex
        b.setInsertionPointAfter(attn);
        auto ffn = b.create<moe::StageOp>(
            d.getLoc(), TypeRange{d.getType()}, b.getStringAttr("ffn"), attn.getLayerAttr(),
            attn.getGroupAttr(), StringAttr(), ValueRange{attn.getResults().back()});
        Block *body = new Block();
        ffn.getBody().push_back(body);
        body->addArgument(d.getX().getType(), d.getLoc());
        moe::DenseFfnOp dense = cloneInto(*body, body->getArgument(0));
        OpBuilder::atBlockEnd(body).create<moe::YieldOp>(d.getLoc(), dense.getResult());
        // Every consumer of h now also takes y and forms x_{l+1} = h + y first.
        for (OpOperand &use : llvm::make_early_inc_range(attn.getResult(xIndex).getUses())) {
          auto consumer = dyn_cast<moe::StageOp>(use.getOwner());
          if (!consumer)
            return use.getOwner()->emitError()
                   << "the output of dense layer " << layer << " must feed a stage";
          Block &cb = consumer.getBody().front();
          BlockArgument hArg = cb.getArgument(use.getOperandNumber());
          consumer->insertOperands(consumer->getNumOperands(), ffn.getResult(0));
          BlockArgument yArg = cb.addArgument(d.getType(), d.getLoc());
          auto sum = OpBuilder::atBlockBegin(&cb).create<arith::AddFOp>(add.getLoc(), hArg, yArg);
          hArg.replaceAllUsesExcept(sum.getResult(), sum);
        }
      }
      SmallVector<Operation *> weights{d.getW1().getDefiningOp(), d.getW3().getDefiningOp(),
                                       d.getW2().getDefiningOp()};
      add.erase();
      d.erase();
      for (Operation *w : weights)
        if (w->use_empty())
          w->erase();
    }
    return success();
  }

  /// FFN-side embedding / head (stage `on = "ffn"`): x_0 leaves the embedding stage, and x_L
  /// enters the final norm, through a moe.home_transfer between the attention group and the FFN
  /// group of the same index (the head stage's residual add x_L = h + y runs where layer L-1's
  /// N2M arrives, on the attention group, before the transfer).
  LogicalResult addHomeTransfers(OpBuilder &b, func::FuncOp func) {
    for (moe::StageOp stage : func.getOps<moe::StageOp>()) {
      if (!stage.getOn() || *stage.getOn() != "ffn")
        continue;
      Block &body = stage.getBody().front();
      const int64_t group = *stage.getGroup();
      if (stage.getSide() == "embedding") {
        Operation *yield = body.getTerminator();
        b.setInsertionPoint(yield);
        for (OpOperand &v : yield->getOpOperands())
          v.set(b.create<moe::HomeTransferOp>(stage.getLoc(), v.get().getType(), v.get(),
                                              "embedding", group, group));
        continue;
      }
      moe::RmsNormOp norm;
      for (auto n : body.getOps<moe::RmsNormOp>())
        if (n.getRole() == "final_norm")
          norm = n;
      if (!norm)
        return stage.emitError("fuse-exchange: an FFN-side head stage needs its final rms_norm");
      b.setInsertionPoint(norm);
      norm->setOperand(0, b.create<moe::HomeTransferOp>(norm.getLoc(), norm.getX().getType(),
                                                        norm.getX(), "head", group, group));
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
      auto residual =
          b.create<moe::ResidualOp>(producer.getLoc(), operand.get().getType(), operand.get(),
                                    layer, *producer.getGroup(), *consumer.getGroup());
      operand.set(residual.getResult());
      return success();
    }
    return consumer.emitError() << "consumer of layer " << layer
                                << "'s FFN output takes no residual from its attention stage";
  }
};
} // namespace
} // namespace disagmoe
