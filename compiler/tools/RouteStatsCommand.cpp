//===- RouteStatsCommand.cpp - `disagmoe route-stats` ---------------------===//
//
//   disagmoe route-stats MODEL.onnx --data mock --data text:FILE [--data shuffled:FILE ...]
//                        [-o OUT_DIR] [--ep 4,8,16,32] [--gbs 64,128,256,512,1024,2048]
//                        [--seq-len 64] [--tokens 1048576] [--run-batch 64] [--jobs N] [--seed 1]
//                        [--attn-ranks 2] [--ffn-ranks 1] [--classify-ep 8] [--classify-gbs G]
//                        [--profile-data NAME]
//
// Compiles MODEL.onnx through the same pipeline as `disagmoe compile` to a plan for
// [run-batch, seq-len] (OUT_DIR/plan), runs its forward pass on cpu ranks over every data
// condition's token stream, and writes OUT_DIR/route-stats.json, route-stats.csv and
// routing-profile.json (docs/observatory.md). Errors: one line "disagmoe route-stats: ...", exit
// code 1.
//
//===----------------------------------------------------------------------===//
#include "compiler/emit/PlanEmitter.h"
#include "compiler/observatory/RouteStats.h"
#include "compiler/pipeline/Pipeline.h"
#include "compiler/tools/CommandLine.h"
#include "runtime/io/FileKind.h"

#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <thread>

using namespace llvm;
namespace obs = disagmoe::observatory;

int routeStatsMain(int argc, char **argv) {
  cl::OptionCategory category("disagmoe route-stats options");
  cl::opt<std::string> input(cl::Positional, cl::desc("<model.onnx>"), cl::Required,
                             cl::cat(category));
  cl::list<std::string> data(
      "data",
      cl::desc("Data condition: mock, shuffled:FILE, remapped:FILE or text:FILE "
               "(repeat or separate with commas)"),
      cl::CommaSeparated, cl::OneOrMore, cl::cat(category));
  cl::opt<std::string> output("o", cl::desc("Output directory"), cl::value_desc("dir"),
                              cl::init("route-stats"), cl::cat(category));
  disagmoe::tools::NumberList<int> ep(
      "ep", cl::desc("EP degrees (default 4,8,16,32, those up to the expert count)"),
      cl::CommaSeparated, cl::cat(category));
  disagmoe::tools::NumberList<int64_t> gbs(
      "gbs", cl::desc("Global batch sizes in sequences (default 64,...,2048)"), cl::CommaSeparated,
      cl::cat(category));
  disagmoe::tools::NumberOpt<int64_t> seqLen("seq-len", cl::desc("Tokens per sequence"),
                                             cl::init(64), cl::cat(category));
  disagmoe::tools::NumberOpt<int64_t> tokens(
      "tokens", cl::desc("Tokens per condition (fewer when a file is shorter)"), cl::init(1 << 20),
      cl::cat(category));
  disagmoe::tools::NumberOpt<int64_t> runBatch("run-batch", cl::desc("Sequences per forward run"),
                                               cl::init(64), cl::cat(category));
  disagmoe::tools::NumberOpt<int> jobs(
      "jobs", cl::desc("Forward runs in flight at once (default: the CPU count)"), cl::init(0),
      cl::cat(category));
  disagmoe::tools::NumberOpt<uint64_t> seed(
      "seed", cl::desc("Seed of mock ids, the shuffle and the remapping"), cl::init(1),
      cl::cat(category));
  disagmoe::tools::NumberOpt<int64_t> attnRanks(
      "attn-ranks", cl::desc("A-ranks of the forward plan"), cl::init(2), cl::cat(category));
  disagmoe::tools::NumberOpt<int64_t> ffnRanks("ffn-ranks", cl::desc("F-ranks of the forward plan"),
                                               cl::init(1), cl::cat(category));
  disagmoe::tools::NumberOpt<int> classifyEp(
      "classify-ep", cl::desc("EP degree of the classification (default 8)"), cl::init(8),
      cl::cat(category));
  disagmoe::tools::NumberOpt<int64_t> classifyGbs(
      "classify-gbs", cl::desc("GBS of the classification (default: smallest)"), cl::init(0),
      cl::cat(category));
  cl::opt<std::string> profileData(
      "profile-data", cl::desc("Condition written to routing-profile.json (default: first text:)"),
      cl::init(""), cl::cat(category));
  cl::HideUnrelatedOptions(category);
  if (!disagmoe::tools::parseCommandLine(argc, argv, "disagmoe route-stats: routing observatory\n",
                                         "disagmoe route-stats"))
    return 2;
  // -o names a directory of files ("-" cannot be one); only its last component is created.
  if (const std::string why = disagmoe::outputDirRefusal(output); !why.empty()) {
    errs() << "disagmoe route-stats: -o " << output << ": " << why << "\n";
    return 1;
  }
  // OUT_DIR holds the plan's temporary folder from the start; a failed run that created OUT_DIR
  // leaves nothing behind (std::filesystem::remove takes only an empty directory).
  struct RemoveIfEmpty {
    std::string dir;
    ~RemoveIfEmpty() {
      std::error_code ec;
      if (!dir.empty())
        std::filesystem::remove(dir, ec);
    }
  } cleanup;
  if (std::error_code ec; std::filesystem::create_directory(output.getValue(), ec))
    cleanup.dir = output;

  obs::RouteStatsOptions o;
  for (const std::string &d : data) {
    llvm::Expected<obs::DataSpec> spec = obs::parseDataSpec(d);
    if (!spec) {
      errs() << "disagmoe route-stats: " << llvm::toString(spec.takeError()) << "\n";
      return 1;
    }
    o.data.push_back(std::move(*spec));
  }
  // Token ids of one condition are held in memory (8 bytes each); 99999999999 was std::bad_alloc.
  constexpr int64_t kMaxConditionTokens = int64_t{1} << 28;
  if (tokens < 1 || tokens > kMaxConditionTokens) {
    errs() << "disagmoe route-stats: --tokens must be in [1, " << kMaxConditionTokens << "], got "
           << tokens << "\n";
    return 1;
  }
  if (!ep.empty())
    o.ep.assign(ep.begin(), ep.end());
  else
    o.epDefault = true; // 4,8,16,32 up to the model's expert count
  if (!gbs.empty())
    o.gbs.assign(gbs.begin(), gbs.end());
  o.seqLen = seqLen;
  o.tokens = tokens;
  o.runBatch = runBatch;
  o.jobs = jobs > 0 ? jobs : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  o.seed = seed;
  o.classifyEp = classifyEp;
  // Without --classify-ep, the summary is at an EP degree the user asked for (issue 17: `--ep 4`
  // printed "EP 8"): the largest --ep value up to the default 8, else the smallest one.
  if (!classifyEp.getNumOccurrences() && ep.getNumOccurrences() && !ep.empty()) {
    int pick = -1;
    for (int d : ep)
      if (d <= classifyEp && d > pick)
        pick = d;
    o.classifyEp = pick > 0 ? pick : *std::min_element(ep.begin(), ep.end());
  }
  o.classifyGbs = classifyGbs;
  o.profileData = profileData;
  o.modelPath = input;
  o.outDir = output;
  // The plan is compiled into a temporary folder and moved to OUT_DIR/plan only when the whole run
  // succeeded, so that a failed run leaves no plan behind.
  const std::string finalPlanDir = output + "/plan";
  o.planDir = output + "/.plan.tmp";
  if (seqLen < 1 || runBatch < 1) {
    errs() << "disagmoe route-stats: --seq-len and --run-batch must be >= 1\n";
    return 1;
  }

  disagmoe::CompileOptions options;
  options.batch = runBatch;
  options.seqLen = seqLen;
  options.attnRanks = attnRanks;
  options.ffnRanks = ffnRanks;
  mlir::MLIRContext context(mlir::MLIRContext::Threading::DISABLED);
  context.printOpOnDiagnostic(false);
  auto compiled = disagmoe::compileOnnx(context, input, options, nulls());
  if (!compiled) {
    errs() << "disagmoe route-stats: " << llvm::toString(compiled.takeError()) << "\n";
    return 1;
  }
  mlir::OwningOpRef<mlir::ModuleOp> module = std::move(*compiled);
  std::error_code ec;
  const bool outputExisted = std::filesystem::exists(output.getValue(), ec);
  auto discard = [&] { // the temporary plan, and OUT_DIR when this run created it and left it empty
    std::error_code ignored;
    std::filesystem::remove_all(o.planDir, ignored);
    if (!outputExisted)
      std::filesystem::remove(output.getValue(), ignored); // only removes an empty folder
  };
  llvm::Expected<disagmoe::Plan> plan = disagmoe::emitPlan(*module, input);
  llvm::Error saved = plan ? disagmoe::savePlan(*plan, o.planDir) : plan.takeError();
  if (saved) {
    discard();
    errs() << "disagmoe route-stats: " << input << ": " << llvm::toString(std::move(saved)) << "\n";
    return 1;
  }

  obs::RouteStatsSummary s;
  llvm::Error failed = obs::runRouteStats(o, s, std::cout);
  std::cout.flush(); // progress lines before the summary below
  if (failed) {
    discard();
    errs() << "disagmoe route-stats: " << llvm::toString(std::move(failed)) << "\n";
    return 1;
  }
  std::filesystem::remove_all(finalPlanDir, ec);
  std::filesystem::rename(o.planDir, finalPlanDir, ec);
  if (ec) {
    discard();
    errs() << "disagmoe route-stats: " << finalPlanDir
           << ": cannot move the plan there: " << ec.message() << "\n";
    return 1;
  }
  outs() << "route-stats: " << s.layers << " MoE layers, " << s.experts << " experts, top-"
         << s.topK << "; Gini of per-rank load at EP " << s.classifyEp << ", GBS " << s.classifyGbs
         << " (mean over layers and batches):\n";
  for (const obs::ConditionSummary &c : s.conditions) {
    if (c.meanGini < 0) { // not one batch of GBS sequences (it used to print Gini -1)
      outs() << "  " << c.name << ": no batch formed (" << c.tokens << " tokens, fewer than GBS "
             << s.classifyGbs << " sequences)\n";
      continue;
    }
    // A layer without a full batch (-1 in the summary's vectors) prints "-".
    const auto value = [](double v, const char *spec) {
      return v < 0 ? std::string("-") : std::string(llvm::formatv(spec, v));
    };
    outs() << "  " << c.name << ": Gini " << format("%.4f", c.meanGini) << " by layer [";
    for (size_t l = 0; l < c.giniByLayer.size(); ++l)
      outs() << (l ? " " : "") << value(c.giniByLayer[l], "{0:F3}");
    outs() << "], max/mean [";
    for (size_t l = 0; l < c.maxOverMeanByLayer.size(); ++l)
      outs() << (l ? " " : "") << value(c.maxOverMeanByLayer[l], "{0:F3}");
    outs() << "], alpha [";
    for (size_t l = 0; l < c.alphaByLayer.size(); ++l)
      outs() << (l ? " " : "") << format("%.4g", c.alphaByLayer[l]);
    outs() << "]\n";
  }
  outs() << "route-stats: forward " << s.forwardTokens << " tokens in "
         << format("%.2f", s.forwardSeconds) << " s; total " << format("%.2f", s.totalSeconds)
         << " s\n";
  outs() << "classification: " << input << ": " << s.classification;
  if (s.realGini >= 0)
    outs() << " (real-text Gini " << format("%.3f", s.realGini);
  if (s.realGini >= 0 && s.mockGini >= 0)
    outs() << ", mock " << format("%.3f", s.mockGini) << ", mock/real "
           << format("%.2f", s.realGini > 0 ? s.mockGini / s.realGini : 0.0);
  if (s.realGini >= 0)
    outs() << ")";
  else
    outs() << " (no text: condition)";
  outs() << "\n";
  outs() << "disagmoe route-stats: wrote " << output
         << "/route-stats.json, route-stats.csv, routing-profile.json\n";
  return 0;
}
