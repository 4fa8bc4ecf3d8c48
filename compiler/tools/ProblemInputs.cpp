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
llvm::Error fail(const std::string &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}
} // namespace

std::string resolveSample(const std::string &path, const char *folder) {
  if (llvm::sys::fs::exists(path))
    return path;
  std::string alt = std::string(DISAGMOE_SOURCE_DIR) + "/samples/" + folder + "/" + path;
  return llvm::sys::fs::exists(alt) ? alt : path;
}

llvm::Expected<std::string> loadProblemInputs(const std::string &hardware,
                                              const std::string &cluster, const std::string &config,
                                              placement::Problem &problem) {
  cost::HardwareCatalog catalog;
  std::string error;
  if (!cost::loadHardwareCatalog(hardware, catalog, error) ||
      !cost::loadCluster(resolveSample(cluster, "clusters"), catalog, problem.cluster, error))
    return fail(error);
  std::string configFile = resolveSample(config, "configs");
  mlir::MLIRContext context(mlir::MLIRContext::Threading::DISABLED);
  context.printOpOnDiagnostic(false);
  auto module = configfe::importModelConfig(context, configFile, 1, 16);
  if (!module)
    return module.takeError();
  if (llvm::Error e = configfe::extractModelShape(**module, problem.model))
    return fail(configFile + ": " + llvm::toString(std::move(e)));
  return configFile;
}

llvm::Expected<placement::Recompute> parseRecompute(const std::string &value, bool allowSelective) {
  if (value == "auto")
    return placement::Recompute::Auto;
  if (value == "on")
    return placement::Recompute::Always;
  if (value == "off")
    return placement::Recompute::Never;
  if (allowSelective && value == "selective")
    return placement::Recompute::Selective;
  return fail("--recompute: expected " +
              std::string(allowSelective ? "auto, on, selective or off" : "auto, on or off") +
              ", got '" + value + "'");
}

} // namespace disagmoe::tools
