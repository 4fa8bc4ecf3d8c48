//===- PlaceGroups.cpp - ranks for the groups, experts for the F-ranks ----===//
//
// The walking-skeleton placement: group sizes come from the command line; experts are split
// contiguously over the F-ranks of their layer's FFN group. The Z3 placement (issue: roofline cost
// model and Z3 placement) replaces the sizes and the map with solved ones, writing the same
// `moe.placement` attribute.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"
#include "passes/placement/solver/ExpertPlacement.h"
#include "runtime/cost/RoutingProfile.h"

#include "mlir/IR/Builders.h"

#include <map>

namespace disagmoe {
#define GEN_PASS_DEF_PLACEGROUPS
#include "passes/Passes.h.inc"

std::optional<OptionError> checkPlaceGroupsOptions(const PlaceGroupsOptions &o, int64_t groups) {
  for (auto [value, name] :
       {std::pair<int64_t, const char *>{o.attnRanks, "attn-ranks"}, {o.ffnRanks, "ffn-ranks"}})
    if (value < 1 || value > kMaxRanksPerGroup)
      return OptionError{name, "must be in [1, " + std::to_string(kMaxRanksPerGroup) + "], got " +
                                   std::to_string(value)};
  if (groups * (o.attnRanks + o.ffnRanks) > kMaxWorldSize)
    return OptionError{"attn-ranks",
                       "+ ffn-ranks: p x (" + std::to_string(o.attnRanks) + " + " +
                           std::to_string(o.ffnRanks) +
                           ") = " + std::to_string(groups * (o.attnRanks + o.ffnRanks)) +
                           " ranks exceeds the supported world size " +
                           std::to_string(kMaxWorldSize) + " (p = " + std::to_string(groups) + ")"};
  return std::nullopt;
}

namespace {
using namespace mlir;

struct PlaceGroupsPass : impl::PlaceGroupsBase<PlaceGroupsPass> {
  using PlaceGroupsBase::PlaceGroupsBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    Builder b(module.getContext());
    auto groupsAttr = module->getAttrOfType<IntegerAttr>("moe.num_groups");
    if (!groupsAttr) {
      module.emitError("place-groups needs the groups assigned first (no 'moe.num_groups' "
                       "attribute; run assign-groups and fuse-exchange)");
      return signalPassFailure();
    }
    int64_t p = groupsAttr.getInt();
    if (auto bad =
            checkPlaceGroupsOptions(PlaceGroupsOptions{attnRanks, ffnRanks, routingProfile}, p)) {
      module.emitError() << "place-groups: " << bad->option << " " << bad->problem;
      return signalPassFailure();
    }

    // Experts per layer, from the raised experts ops.
    std::map<int64_t, int64_t> expertsPerLayer;
    module.walk([&](moe::ExpertsOp op) { expertsPerLayer[op.getLayer()] = op.getNumExperts(); });
    if (expertsPerLayer.empty()) {
      module.emitError("place-groups: the module has no moe.experts op to place");
      return signalPassFailure();
    }

    // Measured per-expert loads, when a routing profile is given.
    std::map<int64_t, std::vector<int64_t>> profiledLoads;
    if (!routingProfile.empty()) {
      cost::RoutingProfile profile;
      std::string error;
      if (!cost::readRoutingProfile(routingProfile, profile, error)) {
        module.emitError() << "place-groups: " << error;
        return signalPassFailure();
      }
      for (const auto &layer : profile.layers)
        profiledLoads[layer.layer] = layer.expertLoads;
      for (auto [layer, experts] : expertsPerLayer) {
        auto it = profiledLoads.find(layer);
        if (it == profiledLoads.end() || static_cast<int64_t>(it->second.size()) != experts) {
          module.emitError() << "place-groups: " << routingProfile << ": layer " << layer
                             << (it == profiledLoads.end()
                                     ? std::string(" is missing")
                                     : " has " + std::to_string(it->second.size()) + " experts")
                             << " but the model's layer " << layer << " has " << experts
                             << " experts";
          return signalPassFailure();
        }
      }
    }

    // Rank layout: attention groups first (group g: ranks g*A .. g*A+A-1), then FFN groups.
    const int64_t firstFfnRank = p * attnRanks;
    SmallVector<Attribute> expertMap, profiledMax, contiguousMax;
    int64_t numLayers = expertsPerLayer.rbegin()->first + 1;
    for (int64_t layer = 0; layer < numLayers; ++layer) {
      auto it = expertsPerLayer.find(layer);
      if (it == expertsPerLayer.end()) { // a dense layer: no experts to place
        expertMap.push_back(b.getI64ArrayAttr({}));
        continue;
      }
      int64_t experts = it->second;
      if (ffnRanks > experts) {
        module.emitError() << "ffn-ranks " << static_cast<int64_t>(ffnRanks) << " exceeds the "
                           << experts << " experts of layer " << layer
                           << ": an F-rank would hold no expert";
        return signalPassFailure();
      }
      int64_t groupBase = firstFfnRank + (layer % p) * ffnRanks;
      SmallVector<int64_t> ranks;
      if (profiledLoads.empty()) {
        for (int64_t e = 0; e < experts; ++e)
          ranks.push_back(groupBase + e * ffnRanks / experts);
      } else {
        const std::vector<int64_t> &loads = profiledLoads[layer];
        const int64_t slots = (experts + ffnRanks - 1) / ffnRanks; // as many as contiguous holds
        placement::ExpertPlacement balanced = placement::placeBalanced(loads, ffnRanks, slots);
        placement::ExpertPlacement contiguous = placement::placeContiguous(loads, ffnRanks);
        for (int64_t e = 0; e < experts; ++e)
          ranks.push_back(groupBase + balanced.ranksOf[e].front());
        double total = 0;
        for (int64_t load : loads)
          total += static_cast<double>(load);
        // Share of the layer's assignments on the most loaded F-rank (1/F is perfect balance).
        profiledMax.push_back(b.getF64FloatAttr(total > 0 ? balanced.maxLoad() / total : 0));
        contiguousMax.push_back(b.getF64FloatAttr(total > 0 ? contiguous.maxLoad() / total : 0));
      }
      expertMap.push_back(b.getI64ArrayAttr(ranks));
    }

    NamedAttrList placement;
    placement.set("num_groups", b.getI64IntegerAttr(p));
    placement.set("attn_ranks", b.getI64IntegerAttr(attnRanks));
    placement.set("ffn_ranks", b.getI64IntegerAttr(ffnRanks));
    placement.set("world_size", b.getI64IntegerAttr(p * (attnRanks + ffnRanks)));
    placement.set("expert_to_rank", b.getArrayAttr(expertMap));
    if (!profiledLoads.empty()) {
      placement.set("routing_profile", b.getStringAttr(routingProfile));
      placement.set("max_rank_load_share", b.getArrayAttr(profiledMax));
      placement.set("contiguous_max_rank_load_share", b.getArrayAttr(contiguousMax));
    }
    module->setAttr("moe.placement", placement.getDictionary(module.getContext()));
  }
};
} // namespace
} // namespace disagmoe
