//===- ExchangeVolumePass.cpp - annotate exchanges with expected bytes ----===//
//
// For every moe.m2n of a placed module, attaches `volume`: the expected bytes per micro-batch of
// the layer's M2N, N2M and residual route under uniform routing, beside the conventional EP
// all-to-all dispatch + combine of the same layer (formulas in ExchangeVolume.h).
// FFN-side placements (assign-groups' side options, moved by fuse-exchange): a dense layer's M2N
// (no ids) sends each token to its home F-rank only, and its N2M returns it once, so their bytes
// are exact, not expected: `runtime_m2n_bytes` / `runtime_n2m_bytes` are the executor's messages
// for one micro-batch (fp32, every A-rank/F-rank pair's 8-byte count included, per token 8 + 4H
// (+ 8 for the M2N's route count); runtime/plan/Plan.h, bytesPerTokenOf), which `disagmoe-run`
// reports. FFN-side shared experts add the tokens whose home F-rank holds none of their experts:
// 1 - E[D] / R more destinations per token under uniform routing (home rank uniform over the R
// F-ranks: (1/R) sum_r C(E - E_r, k) / C(E, k) = 1 - E[D] / R). A moe.home_transfer (FFN-side
// embedding / head) gets `volume` = {bytes, runtime_bytes} the same way.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"
#include "passes/exchange/ExchangeVolume.h"

#include "mlir/IR/Builders.h"

#include <map>

namespace disagmoe {
#define GEN_PASS_DEF_EXCHANGEVOLUME
#include "passes/Passes.h.inc"

namespace {
using namespace mlir;

struct ExchangeVolumePass : impl::ExchangeVolumeBase<ExchangeVolumePass> {
  using ExchangeVolumeBase::ExchangeVolumeBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto placement = module->getAttrOfType<DictionaryAttr>("moe.placement");
    if (!placement) {
      module.emitError("exchange-volume needs a placed module (run place-groups first)");
      return signalPassFailure();
    }
    if (bytesPerElement < 1) {
      module.emitError() << "exchange-volume: bytes-per-element must be at least 1, got "
                         << static_cast<int64_t>(bytesPerElement);
      return signalPassFailure();
    }
    auto expertMap = placement.getAs<ArrayAttr>("expert_to_rank");
    const int64_t attnRanks = placement.getAs<IntegerAttr>("attn_ranks").getInt();
    const int64_t ffnRanks = placement.getAs<IntegerAttr>("ffn_ranks").getInt();
    const double b = static_cast<double>(bytesPerElement);
    // Executor message bytes of one micro-batch: one message per (A-rank, F-rank) pair with an
    // 8-byte count, and `perToken` bytes for each of T tokens that travel once.
    auto runtimeBytes = [&](int64_t tokens, int64_t perToken) {
      return static_cast<double>(attnRanks * ffnRanks * 8 + tokens * perToken);
    };
    auto tokensOf = [](RankedTensorType x) { return x.getNumElements() / x.getShape().back(); };
    // Whether layer l's residual route crosses attention groups.
    std::map<int64_t, bool> residualCrosses;
    module.walk([&](moe::ResidualOp r) {
      residualCrosses[r.getLayer()] = r.getSrcGroup() != r.getDstGroup();
    });

    Builder builder(module.getContext());
    WalkResult result = module.walk([&](Operation *op) {
      auto transfer = dyn_cast<moe::HomeTransferOp>(op);
      if (!transfer)
        return WalkResult::advance();
      auto x = llvm::cast<RankedTensorType>(transfer.getX().getType());
      if (!x.hasStaticShape()) {
        transfer.emitError("exchange-volume: the transferred rows need a static shape");
        return WalkResult::interrupt();
      }
      const int64_t tokens = tokensOf(x), H = x.getShape().back();
      NamedAttrList attrs;
      attrs.set("bytes", builder.getF64FloatAttr(static_cast<double>(tokens * H) * b));
      attrs.set("runtime_bytes", builder.getF64FloatAttr(runtimeBytes(tokens, 8 + 4 * H)));
      transfer->setAttr("volume", attrs.getDictionary(module.getContext()));
      return WalkResult::advance();
    });
    if (result.wasInterrupted())
      return signalPassFailure();
    result = module.walk([&](moe::M2NOp m2n) {
      auto x = llvm::cast<RankedTensorType>(m2n.getX().getType());
      int64_t layer = m2n.getLayer();
      if (!m2n.getIds()) {
        // A dense layer with an FFN-side dense FFN: every token to its home F-rank and back.
        if (!x.hasStaticShape()) {
          m2n.emitError() << "exchange-volume: layer " << layer << " needs static token counts";
          return WalkResult::interrupt();
        }
        const int64_t tokens = tokensOf(x), H = x.getShape().back();
        const double copy = static_cast<double>(tokens * H) * b;
        NamedAttrList attrs;
        attrs.set("destinations_per_token", builder.getF64FloatAttr(1.0));
        attrs.set("m2n_bytes", builder.getF64FloatAttr(copy));
        attrs.set("n2m_bytes", builder.getF64FloatAttr(copy));
        attrs.set("residual_bytes", builder.getF64FloatAttr(residualCrosses[layer] ? copy : 0.0));
        attrs.set("runtime_m2n_bytes", builder.getF64FloatAttr(runtimeBytes(tokens, 16 + 4 * H)));
        attrs.set("runtime_n2m_bytes", builder.getF64FloatAttr(runtimeBytes(tokens, 8 + 4 * H)));
        m2n->setAttr("volume", attrs.getDictionary(module.getContext()));
        return WalkResult::advance();
      }
      auto ids = llvm::cast<RankedTensorType>(m2n.getIds().getType());
      if (!ids.hasStaticShape() || !x.hasStaticShape() ||
          layer >= static_cast<int64_t>(expertMap.size())) {
        m2n.emitError() << "exchange-volume: layer " << layer
                        << " needs static token counts and an expert placement";
        return WalkResult::interrupt();
      }
      std::map<int64_t, int64_t> perRank;
      for (Attribute r : llvm::cast<ArrayAttr>(expertMap[layer]))
        ++perRank[llvm::cast<IntegerAttr>(r).getInt()];
      std::vector<int64_t> expertsPerRank;
      for (auto [rank, count] : perRank)
        expertsPerRank.push_back(count);
      ExchangeVolume v =
          expectedExchangeVolume(ids.getDimSize(0), ids.getDimSize(1), expertsPerRank,
                                 x.getShape().back(), bytesPerElement, residualCrosses[layer]);
      // FFN-side shared experts in the FFN stage this M2N feeds: home-rank copies as well.
      bool homeCopies = false;
      for (Operation *user : m2n->getUsers())
        if (auto stage = dyn_cast<moe::StageOp>(user))
          stage.walk([&](moe::DenseFfnOp) { homeCopies = true; });
      if (homeCopies) {
        const double R = static_cast<double>(expertsPerRank.size());
        v.destinationsPerToken += 1.0 - v.destinationsPerToken / R;
        v.m2nBytes = v.n2mBytes = static_cast<double>(ids.getDimSize(0)) * v.destinationsPerToken *
                                  static_cast<double>(x.getShape().back()) * b;
      }
      NamedAttrList attrs;
      attrs.set("destinations_per_token", builder.getF64FloatAttr(v.destinationsPerToken));
      attrs.set("m2n_bytes", builder.getF64FloatAttr(v.m2nBytes));
      attrs.set("n2m_bytes", builder.getF64FloatAttr(v.n2mBytes));
      attrs.set("residual_bytes", builder.getF64FloatAttr(v.residualBytes));
      attrs.set("all_to_all_bytes", builder.getF64FloatAttr(v.allToAllBytes()));
      attrs.set("ratio", builder.getF64FloatAttr(v.disagmoeBytes() / v.allToAllBytes()));
      m2n->setAttr("volume", attrs.getDictionary(module.getContext()));
      return WalkResult::advance();
    });
    if (result.wasInterrupted())
      signalPassFailure();
  }
};
} // namespace
} // namespace disagmoe
