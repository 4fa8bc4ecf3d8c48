//===- ExchangeVolumePass.cpp - annotate exchanges with expected bytes ----===//
//
// For every moe.m2n of a placed module, attaches `volume`: the expected bytes per micro-batch of
// the layer's M2N, N2M and residual route under uniform routing, beside the conventional EP
// all-to-all dispatch + combine of the same layer (formulas in ExchangeVolume.h).
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
    // Whether layer l's residual route crosses attention groups.
    std::map<int64_t, bool> residualCrosses;
    module.walk([&](moe::ResidualOp r) {
      residualCrosses[r.getLayer()] = r.getSrcGroup() != r.getDstGroup();
    });

    Builder b(module.getContext());
    WalkResult result = module.walk([&](moe::M2NOp m2n) {
      auto ids = llvm::cast<RankedTensorType>(m2n.getIds().getType());
      auto x = llvm::cast<RankedTensorType>(m2n.getX().getType());
      int64_t layer = m2n.getLayer();
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
      ExchangeVolume v = expectedExchangeVolume(ids.getDimSize(0), ids.getDimSize(1),
                                                expertsPerRank, x.getShape().back(),
                                                bytesPerElement, residualCrosses[layer]);
      NamedAttrList attrs;
      attrs.set("destinations_per_token", b.getF64FloatAttr(v.destinationsPerToken));
      attrs.set("m2n_bytes", b.getF64FloatAttr(v.m2nBytes));
      attrs.set("n2m_bytes", b.getF64FloatAttr(v.n2mBytes));
      attrs.set("residual_bytes", b.getF64FloatAttr(v.residualBytes));
      attrs.set("all_to_all_bytes", b.getF64FloatAttr(v.allToAllBytes()));
      attrs.set("ratio", b.getF64FloatAttr(v.disagmoeBytes() / v.allToAllBytes()));
      m2n->setAttr("volume", attrs.getDictionary(module.getContext()));
      return WalkResult::advance();
    });
    if (result.wasInterrupted())
      signalPassFailure();
  }
};
} // namespace
} // namespace disagmoe
