//===- AssignGroups.cpp - interleave layers over p groups per side --------===//
//
// DisagMoE's interleaved layer assignment (seeds/000; docs/architecture.md, "Terms"): with p groups
// per side, group g holds layers g, g+p, g+2p, ... on the attention side and on the FFN side, so
// each group runs v = L/p virtual stages of the AF-Pipe ring A0 -> F0 -> A1 -> F1 -> ...
// It also says on which side each always-on FFN (dense layer, shared experts) runs: the `side`
// attribute of moe.dense_ffn, from the dense-side and shared-experts-side options.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"

#include "mlir/IR/Builders.h"

namespace disagmoe {
#define GEN_PASS_DEF_ASSIGNGROUPS
#include "passes/Passes.h.inc"

std::optional<OptionError> checkAssignGroupsOptions(const AssignGroupsOptions &o) {
  if (o.groups < 1 || o.groups > kMaxRanksPerGroup)
    return OptionError{"p", "must be in [1, " + std::to_string(kMaxRanksPerGroup) + "], got " +
                                std::to_string(o.groups)};
  // Each always-on FFN (dense layer or shared experts), the embedding and the head run on the
  // attention or the FFN side.
  for (auto [value, name] :
       {std::pair<const std::string &, const char *>{o.denseSide, "dense-side"},
        {o.sharedExpertsSide, "shared-experts-side"},
        {o.embeddingSide, "embedding-side"},
        {o.headSide, "head-side"}})
    if (value != "attention" && value != "ffn")
      return OptionError{name, "must be attention or ffn, got '" + value + "'"};
  return std::nullopt;
}

namespace {
using namespace mlir;

struct AssignGroupsPass : impl::AssignGroupsBase<AssignGroupsPass> {
  using AssignGroupsBase::AssignGroupsBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    const int64_t p = groups;
    if (auto bad = checkAssignGroupsOptions(
            AssignGroupsOptions{groups, denseSide, sharedExpertsSide, embeddingSide, headSide})) {
      module.emitError() << "assign-groups: " << bad->option << " " << bad->problem;
      return signalPassFailure();
    }
    SmallVector<moe::StageOp> stages;
    module.walk([&](moe::StageOp stage) { stages.push_back(stage); });
    if (stages.empty()) {
      module.emitError("assign-groups: no moe.stage ops; run partition-components first");
      return signalPassFailure();
    }
    int64_t numLayers = 0;
    for (moe::StageOp stage : stages)
      if (stage.getSide() == "attention" || stage.getSide() == "ffn")
        numLayers = std::max(numLayers, stage.getLayer() + 1);
    if (numLayers % p != 0) {
      module.emitError() << "assign-groups: p = " << p << " does not divide the " << numLayers
                         << " layers (layer l runs on group l mod p, so every group must hold "
                            "the same number of layers)";
      return signalPassFailure();
    }
    Builder b(module.getContext());
    for (moe::StageOp stage : stages) {
      // The head runs where the last layer's output arrives: group L mod p.
      int64_t layer = stage.getSide() == "head" ? numLayers : stage.getLayer();
      stage.setGroupAttr(b.getI64IntegerAttr(layer % p));
      if (stage.getSide() == "embedding" || stage.getSide() == "head")
        stage.setOnAttr(b.getStringAttr(stage.getSide() == "head" ? StringRef(headSide)
                                                                  : StringRef(embeddingSide)));
    }
    module->setAttr("moe.num_groups", b.getI64IntegerAttr(p));
    module.walk([&](moe::DenseFfnOp ffn) {
      StringRef side =
          ffn.getRole() == "dense" ? StringRef(denseSide) : StringRef(sharedExpertsSide);
      ffn.setSideAttr(b.getStringAttr(side));
    });
  }
};
} // namespace
} // namespace disagmoe
