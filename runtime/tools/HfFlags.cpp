// --init-weights, --export-hf, --export-dtype, --export-shard-bytes (HfFlags.h).
#include "runtime/tools/HfFlags.h"
#include "runtime/io/FileKind.h"
#include "runtime/tools/DecimalNumber.h"
#include "runtime/tools/ParseOnly.h"
#include "runtime/train/HfConfig.h"
#include "runtime/train/HfNameMap.h"

#include <filesystem>
#include <stdexcept>

namespace disagmoe::tools {

bool HfFlags::take(const std::string &flag, const std::string &value) {
  if (flag == "--init-weights")
    initWeights = value;
  else if (flag == "--export-hf")
    exportDir = value;
  else if (flag == "--export-dtype") {
    dtypeGiven = true;
    if (value == "fp32")
      exportOptions.dtype = SafetensorsDtype::F32;
    else if (value == "bf16")
      exportOptions.dtype = SafetensorsDtype::BF16;
    else
      throw std::invalid_argument("--export-dtype: expected fp32 or bf16, got \"" + value + "\"");
  } else if (flag == "--export-shard-bytes") {
    shardGiven = true;
    size_t used = 0;
    unsigned long long v = 0;
    try {
      if (isDecimalInteger(value)) // not "0x10" (DecimalNumber.h)
        v = std::stoull(value, &used);
    } catch (const std::exception &) {
      used = 0;
    }
    if (value.empty() || used != value.size() || value[0] == '-' || v == 0)
      throw std::invalid_argument("--export-shard-bytes: expected an integer >= 1, got \"" + value +
                                  "\"");
    exportOptions.shardBytes = v;
  } else {
    return false;
  }
  if (value.empty())
    throw std::invalid_argument(flag + ": empty value");
  return true;
}

void HfFlags::check() const {
  if ((dtypeGiven || shardGiven) && exportDir.empty())
    throw std::invalid_argument(
        std::string(dtypeGiven ? "--export-dtype" : "--export-shard-bytes") +
        " needs --export-hf DIR");
  if (exportDir == "-") // a value check: no file is looked at
    throw std::invalid_argument("--export-hf -: " + outputDirRefusal("-"));
  if (parseOnly()) // DISAGMOE_PARSE_ONLY=1: no path is looked at (runtime/tools/ParseOnly.h)
    return;
  if (!exportDir.empty()) {
    if (const std::string why = train::hfExportRefusal(exportDir); !why.empty())
      throw std::invalid_argument("--export-hf " + exportDir + ": " + why);
    // The export creates DIR itself, not its parents: checked now, not after the run.
    const std::filesystem::path parent = std::filesystem::path(exportDir).parent_path();
    std::error_code pec;
    if (!parent.empty() && !std::filesystem::is_directory(parent, pec))
      throw std::invalid_argument("--export-hf " + exportDir + ": its parent directory " +
                                  parent.string() + " does not exist");
  }
  std::error_code ec;
  if (!initWeights.empty() && !std::filesystem::exists(initWeights, ec))
    throw std::invalid_argument("--init-weights " + initWeights + ": does not exist");
}

void checkHfNaming(const HfFlags &flags, const Plan &plan) {
  // The first of the two flags given is the one named (both need the same naming).
  const bool init = !flags.initWeights.empty();
  if (!init && flags.exportDir.empty())
    return;
  try {
    (void)train::hfTensors(plan.model, train::hfFamilyOf(plan.model));
  } catch (const train::HfMapError &e) {
    throw std::invalid_argument(
        (init ? "--init-weights " + flags.initWeights : "--export-hf " + flags.exportDir) + ": " +
        e.what());
  }
  // config.json too (a scaled RoPE has no rope_scaling to write): refused before the run, not
  // after it has trained.
  if (!flags.exportDir.empty()) {
    try {
      (void)train::hfConfigJson(plan.model, train::hfFamilyOf(plan.model),
                                flags.exportOptions.dtype);
    } catch (const train::HfMapError &e) {
      throw std::invalid_argument("--export-hf " + flags.exportDir + ": " + e.what());
    }
  }
}

std::unique_ptr<train::HfWeights> openInitWeights(const HfFlags &flags, const Plan &plan,
                                                  std::ostream *out) {
  if (flags.initWeights.empty())
    return nullptr;
  auto hf = std::make_unique<train::HfWeights>(plan, flags.initWeights);
  if (out)
    *out << "initial weights: " << flags.initWeights << " (" << train::toString(hf->family())
         << " naming, " << hf->files().size() << " file" << (hf->files().size() == 1 ? "" : "s")
         << ": " << hf->dtypeSummary() << ")\n";
  return hf;
}

void exportHfIfAsked(const HfFlags &flags, const Plan &plan,
                     const std::function<const Tensor &(int)> &weightOf, std::ostream &out) {
  if (flags.exportDir.empty())
    return;
  const train::HfExportSummary s =
      train::exportHf(plan, weightOf, flags.exportDir, flags.exportOptions);
  out << "Hugging Face checkpoint (" << plan.model.family << ", "
      << toString(flags.exportOptions.dtype) << ", " << s.tensors << " tensors, " << s.tensorBytes
      << " bytes in " << s.files.size() << " file" << (s.files.size() == 1 ? "" : "s")
      << ") written to " << flags.exportDir << "/\n";
}

} // namespace disagmoe::tools
