//===- disagmoe.cpp - the disagmoe command-line compiler ------------------===//
//
//   disagmoe compile model.onnx -o plan/ [--attn-ranks N] [--ffn-ranks M] [--groups P]
//                    [--dense-side attention|ffn] [--shared-experts-side attention|ffn]
//                    [--embedding-side attention|ffn] [--head-side attention|ffn]
//                    [--batch B] [--seq-len S] [--micro-batches M] [--cluster CLUSTER.yaml]
//                    [--capacity-tokens N]
//                    [--print-ir-after=<stage>] [--print-ir-after-all]
//
// Errors are one line on stderr, "disagmoe compile: <file>: <what>", with exit code 1.
//
//===----------------------------------------------------------------------===//
#include "compiler/emit/ExchangeCapacity.h"
#include "compiler/emit/PlanEmitter.h"
#include "compiler/emit/ScheduleEmitter.h"
#include "compiler/pipeline/Pipeline.h"
#include "compiler/tools/CommandLine.h"
#include "compiler/tools/ProblemInputs.h"
#include "runtime/cost/Hardware.h"
#include "runtime/io/FileKind.h"
#include "runtime/version/Version.h"

#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <string>

using namespace llvm;

namespace {
/// The command list, for `disagmoe`, `disagmoe --help` and an unknown command.
void printCommands(raw_ostream &os) {
  os << "usage: disagmoe <command> [options]   (disagmoe <command> --help for its options)\n"
        "commands:\n"
        "  compile MODEL.onnx -o PLAN_DIR   ONNX MoE model -> plan.json (the runtime's input)\n"
        "  inspect MODEL.onnx               what the frontend recognised, parameters and FLOPs\n"
        "  plan                             roofline + Z3 placement of a model on a cluster\n"
        "  simulate                         AF-Pipe against the pipeline baselines\n"
        "  route-stats MODEL.onnx -o DIR    measured expert loads (routing profile)\n";
}

/// " (did you mean 'compile'?)" when \p word is a plausible misspelling of a command (at most a
/// third of it differs, as for unknown flags), else "".
std::string suggestCommand(StringRef word) {
  static const char *const commands[] = {"compile", "inspect", "plan", "simulate", "route-stats"};
  std::string best;
  unsigned bestDistance = ~0u;
  for (const char *command : commands) {
    unsigned d = word.edit_distance(command, /*AllowReplacements=*/true, bestDistance);
    if (d < bestDistance) {
      bestDistance = d;
      best = command;
    }
  }
  if (best.empty() || bestDistance > std::max<size_t>(2, word.size() / 3))
    return "";
  return " (did you mean '" + best + "'?)";
}

int usage() {
  printCommands(errs());
  return 2;
}

int fail(const std::string &message) {
  outs().flush(); // the printed IR first: with 2>&1 the two streams share one pipe
  errs() << "disagmoe compile: " << message << "\n";
  return 1;
}

int compileMain(int argc, char **argv) {
  cl::OptionCategory category("disagmoe compile options");
  cl::opt<std::string> input(cl::Positional, cl::desc("<model.onnx>"), cl::Required,
                             cl::cat(category));
  cl::opt<std::string> output("o",
                              cl::desc("Output plan directory (\"-\": the plan's JSON on stdout)"),
                              cl::value_desc("dir"), cl::Required, cl::cat(category));
  disagmoe::tools::NumberOpt<int64_t> attnRanks(
      "attn-ranks",
      cl::desc("A-ranks per attention group (default 2, at most max(4, 2 x batch): "
               "sequence s runs on A-rank s mod N)"),
      cl::init(2), cl::cat(category));
  disagmoe::tools::NumberOpt<int64_t> ffnRanks(
      "ffn-ranks", cl::desc("F-ranks per FFN group (default 2)"), cl::init(2), cl::cat(category));
  disagmoe::tools::NumberOpt<int64_t> groups(
      "groups", cl::desc("Groups per side, layer l on group l mod p (default 1)"), cl::init(1),
      cl::cat(category));
  cl::opt<std::string> denseSide(
      "dense-side", cl::desc("Side that runs dense layers' FFNs: attention (default) or ffn"),
      cl::init("attention"), cl::cat(category));
  cl::opt<std::string> sharedExpertsSide(
      "shared-experts-side", cl::desc("Side that runs shared experts: attention (default) or ffn"),
      cl::init("attention"), cl::cat(category));
  cl::opt<std::string> embeddingSide(
      "embedding-side", cl::desc("Side that runs the embedding: attention (default) or ffn"),
      cl::init("attention"), cl::cat(category));
  cl::opt<std::string> headSide(
      "head-side", cl::desc("Side that runs the final norm and head: attention (default) or ffn"),
      cl::init("attention"), cl::cat(category));
  cl::opt<std::string> routingProfile(
      "routing-profile",
      cl::desc("Place experts from measured loads (disagmoe route-stats; docs/routing-profile.md)"),
      cl::value_desc("file"), cl::cat(category));
  disagmoe::tools::NumberOpt<int64_t> batch(
      "batch",
      cl::desc("Sequences per batch the plan is compiled for (default: the "
               "model's static dim, else 2)"),
      cl::init(0), cl::cat(category));
  disagmoe::tools::NumberOpt<int64_t> seqLen(
      "seq-len", cl::desc("Tokens per sequence (default: the model's static dim, else 8)"),
      cl::init(0), cl::cat(category));
  disagmoe::tools::NumberOpt<int64_t> microBatches(
      "micro-batches",
      cl::desc("Micro-batches of the plan's AF-Pipe schedule, each of "
               "[batch, seq] (default 2p, in [2p, 4096])"),
      cl::init(0), cl::cat(category));
  cl::opt<std::string> cluster(
      "cluster",
      cl::desc("Cluster whose roofline sizes the schedule (default: H800 nodes of 8 GPUs)"),
      cl::value_desc("CLUSTER.yaml"), cl::init(""), cl::cat(category));
  disagmoe::tools::NumberOpt<int64_t> capacityTokens(
      "capacity-tokens",
      cl::desc(
          "Most tokens one M2N or N2M message may carry (the plan's exchange capacity_tokens; "
          "default: batch x seq, which no batch of the compiled shape exceeds: dropless). A batch "
          "routing more tokens from one A-rank to one F-rank stops naming the exchange, rank and "
          "count"),
      cl::value_desc("N"), cl::init(0), cl::cat(category));
  cl::list<std::string> printAfter("print-ir-after",
                                   cl::desc("Print the IR after a stage: import, normalize, fold, "
                                            "raise, partition, groups, exchange, "
                                            "placement, volume, schedule"),
                                   cl::CommaSeparated, cl::cat(category));
  cl::opt<bool> printAfterAll("print-ir-after-all", cl::desc("Print the IR after every stage"),
                              cl::cat(category));
  cl::HideUnrelatedOptions(category);
  if (!disagmoe::tools::parseCommandLine(argc, argv, "disagmoe compile: ONNX MoE model -> plan\n",
                                         "disagmoe compile"))
    return 2;

  // -o -: the plan is one self-contained file (weights are named by absolute path and offset), so
  // its JSON can go to standard output; the IR that --print-ir-after prints goes there too.
  const bool toStdout = output == "-";
  if (toStdout && (!printAfter.empty() || printAfterAll))
    return fail("-o -: the plan's JSON goes to standard output, where --print-ir-after prints the "
                "IR: give -o PLAN_DIR");
  // -o PLAN_DIR, checked before any stage runs (as route-stats -o): an existing directory is
  // written into (its plan.json replaced, atomically; other files left alone), a missing one is
  // created, but not its parents.
  if (!toStdout)
    if (const std::string why = disagmoe::outputDirRefusal(output); !why.empty())
      return fail("-o " + output + ": " + why);
  if (capacityTokens.getNumOccurrences() && capacityTokens < 1)
    return fail("--capacity-tokens " + std::to_string(capacityTokens) +
                ": expected an integer >= 1");
  disagmoe::CompileOptions options;
  if (batch.getNumOccurrences())
    options.batch = batch;
  if (seqLen.getNumOccurrences())
    options.seqLen = seqLen;
  options.attnRanks = attnRanks;
  options.ffnRanks = ffnRanks;
  options.groups = groups;
  options.denseSide = denseSide;
  options.sharedExpertsSide = sharedExpertsSide;
  options.embeddingSide = embeddingSide;
  options.headSide = headSide;
  options.routingProfile = routingProfile;
  options.printIrAfter.assign(printAfter.begin(), printAfter.end());
  options.printIrAfterAll = printAfterAll;
  options.microBatches = microBatches;
  // Read now, so that a missing or malformed cluster is named as --cluster's (not as a fault of
  // the model's pipeline) before any stage runs; a bare name is looked up under samples/clusters/.
  if (!cluster.empty()) {
    options.cluster = disagmoe::tools::resolveSample(cluster, "clusters");
    disagmoe::cost::HardwareCatalog catalog;
    disagmoe::cost::ClusterSpec spec;
    std::string error;
    if (!disagmoe::cost::loadHardwareCatalog(disagmoe::cost::defaultHardwareCatalogPath(), catalog,
                                             error) ||
        !disagmoe::cost::loadCluster(options.cluster, catalog, spec, error)) {
      errs() << "disagmoe compile: --cluster " << error << "\n";
      return 1;
    }
  }

  // Single-threaded: IR printing after passes requires it, and the pipeline is sequential anyway.
  mlir::MLIRContext context(mlir::MLIRContext::Threading::DISABLED);
  context.printOpOnDiagnostic(false);
  std::vector<std::string> notes;
  auto compiled = disagmoe::compileOnnx(context, input, options, outs(), &notes);
  // Flush the printed IR before any stderr line: errs()' tie to outs() did not hold here
  // (a "wrote" line landed mid-IR under `2>&1 | FileCheck` in CI).
  outs().flush();
  if (!compiled)
    return fail(llvm::toString(compiled.takeError()));
  for (const std::string &line : notes) // inputs bound at the compiled shape, weights upcast
    errs() << "disagmoe compile: note: " << input << ": " << line << "\n";
  mlir::OwningOpRef<mlir::ModuleOp> module = std::move(*compiled);
  llvm::Expected<disagmoe::Plan> plan = disagmoe::emitPlan(*module, input);
  if (!plan)
    return fail(input + ": " + llvm::toString(plan.takeError()));
  llvm::Expected<std::string> note = disagmoe::emitSchedule(*module, *plan);
  if (!note)
    return fail(input + ": " + llvm::toString(note.takeError()));
  if (!note->empty())
    errs() << "disagmoe compile: note: " << input << ": " << *note << "\n";
  if (capacityTokens.getNumOccurrences())
    if (llvm::Error e =
            disagmoe::applyExchangeCapacity(*plan, static_cast<int64_t>(capacityTokens)))
      return fail(input + ": " + llvm::toString(std::move(e)));
  if (toStdout) { // `disagmoe-run plan.json` reads the same text from a file
    outs() << disagmoe::planToJson(*plan);
    outs().flush();
    errs() << "disagmoe compile: wrote the plan's JSON to standard output\n";
    return 0;
  }
  std::error_code ec;
  const bool replacing =
      std::filesystem::exists(std::filesystem::path(output.getValue()) / "plan.json", ec);
  if (llvm::Error e = disagmoe::savePlan(*plan, output))
    return fail(llvm::toString(std::move(e)));
  // On stderr, so that stdout holds only the IR that --print-ir-after asked for.
  errs() << "disagmoe compile: wrote " << output << "/plan.json"
         << (replacing ? " (replacing the plan that was there)" : "") << "\n";
  return 0;
}
} // namespace

int routeStatsMain(int argc, char **argv); // RouteStatsCommand.cpp
int inspectMain(int argc, char **argv);    // InspectCommand.cpp
int planMain(int argc, char **argv);       // PlanCommand.cpp
int simulateMain(int argc, char **argv);   // SimulateCommand.cpp

int main(int argc, char **argv) {
  // `disagmoe --version` and every command's --version (llvm::cl's, LLVM's own otherwise).
  cl::SetVersionPrinter([](raw_ostream &os) { os << disagmoe::versionLine("disagmoe") << "\n"; });
  if (argc < 2)
    return usage();
  if (std::strcmp(argv[1], "--version") == 0 || std::strcmp(argv[1], "-version") == 0) {
    outs() << disagmoe::versionLine("disagmoe") << "\n";
    return 0;
  }
  if (std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-help") == 0 ||
      std::strcmp(argv[1], "-h") == 0 || std::strcmp(argv[1], "help") == 0) {
    printCommands(outs());
    return 0;
  }
  if (std::strcmp(argv[1], "plan") == 0) // roofline + Z3 placement (docs/placement.md)
    return argv[1] = argv[0], planMain(argc - 1, argv + 1);
  if (std::strcmp(argv[1], "simulate") == 0) // AF-Pipe against the baselines (docs/results.md)
    return argv[1] = argv[0], simulateMain(argc - 1, argv + 1);
  if (std::strcmp(argv[1], "inspect") == 0) // what the frontend recognised
    return argv[1] = argv[0], inspectMain(argc - 1, argv + 1);
  if (std::strcmp(argv[1], "route-stats") == 0) // routing observatory (docs/observatory.md)
    return argv[1] = argv[0], routeStatsMain(argc - 1, argv + 1);
  if (std::strcmp(argv[1], "compile") == 0) {
    // Parse the rest as if "disagmoe compile" were the program name.
    argv[1] = argv[0];
    return compileMain(argc - 1, argv + 1);
  }
  errs() << "disagmoe: unknown command '" << argv[1] << "'" << suggestCommand(argv[1]) << "\n";
  return usage();
}
