//===- ModuleSchedule.cpp - the AF-Pipe schedule of a placed `moe` module --===//
#include "passes/schedule/ModuleSchedule.h"

#include <algorithm>

#include "frontends/config/CostExtraction.h"
#include "passes/schedule/AfPipe.h"
#include "runtime/cost/Hardware.h"

#include "dialects/moe/MoeDialect.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinAttributes.h"

namespace disagmoe::afpipe {
namespace {

llvm::Error fail(const std::string &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

/// H800 nodes of 8 GPUs with one 400 Gb/s NIC per GPU (samples/clusters/h800-*.yaml), enough for
/// `world` ranks: the cluster a plan is sized for when the user names none.
llvm::Expected<cost::ClusterSpec> defaultCluster(int64_t world) {
  cost::HardwareCatalog catalog;
  std::string error;
  if (!cost::loadHardwareCatalog(cost::defaultHardwareCatalogPath(), catalog, error))
    return fail(error);
  const cost::GpuSpec *gpu = catalog.findGpu("H800");
  const cost::NicSpec *nic = catalog.findNic("CX7-400G");
  if (!gpu || !nic)
    return fail(cost::defaultHardwareCatalogPath() +
                ": no H800 GPU or CX7-400G NIC for the default cluster");
  cost::ClusterSpec out;
  out.gpu = *gpu;
  out.nic = *nic;
  out.gpusPerNode = 8;
  out.nicsPerNode = 8;
  out.nodes = static_cast<int>((world + 7) / 8);
  out.name = "h800-" + std::to_string(out.nodes) + "x8";
  return out;
}

} // namespace

llvm::Expected<ModuleSchedule> buildModuleSchedule(mlir::ModuleOp module,
                                                   const ModuleScheduleOptions &options) {
  auto dict = module->getAttrOfType<mlir::DictionaryAttr>("moe.placement");
  if (!dict)
    return fail("module has no 'moe.placement' attribute (run place-groups first)");
  Config c;
  c.groups = dict.getAs<mlir::IntegerAttr>("num_groups").getInt();
  c.attnRanks = dict.getAs<mlir::IntegerAttr>("attn_ranks").getInt();
  c.ffnRanks = dict.getAs<mlir::IntegerAttr>("ffn_ranks").getInt();
  const int64_t world = dict.getAs<mlir::IntegerAttr>("world_size").getInt();
  c.replicas = 1;
  // The range [0, kMaxMicroBatches] is the pass's option check (checkAfPipeScheduleOptions).
  c.microbatches = options.microBatches > 0 ? options.microBatches : 2 * c.groups;
  if (c.microbatches < 2 * c.groups)
    return fail("micro-batches " + std::to_string(c.microbatches) +
                " cannot fill the AF-Pipe ring of 2p = " + std::to_string(2 * c.groups) +
                " stages");
  // One micro-batch is the compiled static [batch, seq].
  auto funcs = llvm::to_vector(module.getOps<mlir::func::FuncOp>());
  if (funcs.size() != 1 || funcs.front().getNumArguments() < 1)
    return fail("expected exactly one function taking the token ids");
  auto ids = llvm::dyn_cast<mlir::RankedTensorType>(funcs.front().getArgument(0).getType());
  if (!ids || ids.getRank() != 2 || !ids.hasStaticShape())
    return fail("token ids must have a static [batch, seq] shape");
  c.seqLen = ids.getDimSize(1);
  // Sequence s of a micro-batch runs on A-rank s mod dA (RankWorker's assignTokens), so A-ranks
  // past the batch hold no tokens. A few idle ones are legal (the runtime runs them with empty
  // messages; a batch-1 model under the default 2 A-ranks has one) but most of a group idle is a
  // mistake that costs a thread or process and its weights per rank (65536 A-ranks for a batch of
  // 2 compiled, then the run was OOM-killed): refuse more than max(4, 2 x batch). The floor of 4
  // keeps the small layouts the tests run on batch-1 plans (1 sequence over 3 A-ranks) legal.
  const int64_t sequences = ids.getDimSize(0);
  const int64_t maxAttnRanks = std::max<int64_t>(4, 2 * sequences);
  if (c.attnRanks > maxAttnRanks)
    return fail("attn-ranks " + std::to_string(c.attnRanks) + " exceeds max(4, 2 x batch) = " +
                std::to_string(maxAttnRanks) + " for the " + std::to_string(sequences) +
                " sequences of a micro-batch: sequence s runs on A-rank s mod attn-ranks, so " +
                std::to_string(c.attnRanks - sequences) + " of each group's " +
                std::to_string(c.attnRanks) +
                " A-ranks would have no work (use fewer A-ranks or a larger --batch)");
  // Sides of the always-on components, as assign-groups set them (the plan emitter reads the same
  // attributes): the schedule computes them on that side and sends the messages the runtime sends.
  funcs.front().walk([&](moe::DenseFfnOp ffn) {
    if (ffn.getSide() && *ffn.getSide() == "ffn")
      (ffn.getRole() == "dense" ? c.denseOnFfn : c.sharedOnFfn) = true;
  });
  funcs.front().walk([&](moe::StageOp stage) {
    if (stage.getOn() && *stage.getOn() == "ffn")
      (stage.getSide() == "head" ? c.headOnFfn : c.embeddingOnFfn) = true;
  });
  c.sequencesPerStep = ids.getDimSize(0) * c.microbatches;

  cost::ModelShape shape;
  if (llvm::Error e = configfe::extractModelShape(module, shape)) {
    ModuleSchedule unsized;
    unsized.status = ModuleScheduleStatus::Unsized;
    unsized.unsized = llvm::toString(std::move(e));
    return unsized;
  }
  cost::ClusterSpec cluster;
  if (options.clusterPath.empty()) {
    llvm::Expected<cost::ClusterSpec> h800 = defaultCluster(world);
    if (!h800)
      return h800.takeError();
    cluster = std::move(*h800);
  } else {
    cost::HardwareCatalog catalog;
    std::string error;
    if (!cost::loadHardwareCatalog(cost::defaultHardwareCatalogPath(), catalog, error) ||
        !cost::loadCluster(options.clusterPath, catalog, cluster, error))
      return fail(error);
    if (cluster.gpus() < world)
      return fail(options.clusterPath + ": " + std::to_string(cluster.gpus()) +
                  " GPUs cannot hold the plan's " + std::to_string(world) + " ranks");
  }
  c.nicBandwidth = cluster.nic.bandwidth;
  c.pcieBandwidth = cluster.gpu.pcieBandwidth;
  ModuleSchedule built;
  std::string error;
  if (!buildAfPipe(workloadFromModel(shape, cluster, c), hardwareOf(cluster), c, built.schedule,
                   error))
    return fail(error);
  sched::VerifyOptions vo;
  vo.worldSize = static_cast<int>(world);
  if (std::string bad = sched::verifySchedule(built.schedule, vo); !bad.empty())
    return fail(bad);
  return built;
}

} // namespace disagmoe::afpipe
