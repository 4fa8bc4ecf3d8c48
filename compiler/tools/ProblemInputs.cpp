//===- ProblemInputs.cpp - model and cluster of `disagmoe plan` / `simulate` ===//
#include "compiler/tools/ProblemInputs.h"

#include "frontends/config/ConfigFrontend.h"
#include "frontends/config/CostExtraction.h"
#include "runtime/cost/Hardware.h"

#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/FileSystem.h"

#ifndef DISAGMOE_SOURCE_DIR
#define DISAGMOE_SOURCE_DIR "."
#endif

namespace disagmoe::tools {
namespace {
/// `path` itself if it exists, else the file of that name in samples/<folder>/ of the source tree.
std::string resolve(const std::string &path, const char *folder) {
  if (llvm::sys::fs::exists(path))
    return path;
  std::string alt = std::string(DISAGMOE_SOURCE_DIR) + "/samples/" + folder + "/" + path;
  return llvm::sys::fs::exists(alt) ? alt : path;
}
} // namespace

bool loadProblemInputs(const std::string &hardware, const std::string &cluster,
                       const std::string &config, placement::Problem &problem,
                       std::string &configFile, std::string &error) {
  cost::HardwareCatalog catalog;
  if (!cost::loadHardwareCatalog(hardware, catalog, error) ||
      !cost::loadCluster(resolve(cluster, "clusters"), catalog, problem.cluster, error))
    return false;
  configFile = resolve(config, "configs");
  mlir::MLIRContext context(mlir::MLIRContext::Threading::DISABLED);
  context.printOpOnDiagnostic(false);
  auto module = configfe::importModelConfig(context, configFile, 1, 16);
  if (!module) {
    error = llvm::toString(module.takeError());
    return false;
  }
  if (llvm::Error e = configfe::extractModelShape(**module, problem.model)) {
    error = configFile + ": " + llvm::toString(std::move(e));
    return false;
  }
  return true;
}

bool parseRecompute(const std::string &value, bool allowSelective, placement::Recompute &out,
                    std::string &error) {
  if (value == "auto")
    out = placement::Recompute::Auto;
  else if (value == "on")
    out = placement::Recompute::Always;
  else if (value == "off")
    out = placement::Recompute::Never;
  else if (allowSelective && value == "selective")
    out = placement::Recompute::Selective;
  else {
    error = "--recompute: expected " +
            std::string(allowSelective ? "auto, on, selective or off" : "auto, on or off") +
            ", got '" + value + "'";
    return false;
  }
  return true;
}

} // namespace disagmoe::tools
