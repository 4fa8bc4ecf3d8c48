// disagmoe-run: execute a compiled plan's forward pass.
//
//   disagmoe-run PLAN_DIR_OR_JSON [--backend cpu] [--comm local] [--input ids.npy]
//                [--output logits.npy] [--batch B --seq-len S --seed N] [--timeout SECONDS]
//                [--trace TRACE.json] [--op-times-out OPS.json]   (runtime/executor/OpProfile.h)
//                [--warmup N]   (N untimed forward runs first; benchmarks time a warm run,
//                bench/train)
//   disagmoe-run PLAN_DIR_OR_JSON --backend sim [--op-times MEASURED.json] [--trace TRACE.json]
//                [--host-cores C]   (ranks as threads sharing C CPU cores, runtime/sim/Simulator.h)
//
// Without --input, token ids are drawn uniformly from the vocabulary with a seeded mt19937_64
// (shape: --batch/--seq-len, default the plan's compiled shape). Prints the placement, the
// exchange bytes per layer and the throughput. Every error: one line "disagmoe-run: <message>" on
// stderr and exit code 1. With DISAGMOE_PARSE_ONLY=1 (runtime/tools/ParseOnly.h) it exits 0 after
// parsing and checking the flags (--config's file is read: it holds flags), before the plan or any
// other file is opened.
#include "runtime/executor/Executor.h"
#include "runtime/executor/Report.h"
#include "runtime/io/Npy.h"
#include "runtime/plan/Plan.h"
#include "runtime/tools/CudaBackend.h"
#include "runtime/tools/DecimalNumber.h"
#include "runtime/tools/DistributedRun.h"
#include "runtime/tools/HfFlags.h"
#include "runtime/tools/OutputPath.h"
#include "runtime/tools/ParseOnly.h"
#include "runtime/tools/RunArgs.h"
#include "runtime/tools/RunConfig.h"
#include "runtime/tools/SimBackend.h"
#include "runtime/train/Progress.h"
#include "runtime/version/Version.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <new>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

using namespace disagmoe;

namespace {

class UsageError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

const char *kUsage =
    "usage: disagmoe-run --version   (the product version and the commit it was built from)\n"
    "       disagmoe-run PLAN_DIR_OR_JSON [--backend cpu] [--comm local] [--input ids.npy]\n"
    "                    [--output logits.npy] [--batch B] [--seq-len S] [--seed N] [--timeout "
    "SECONDS]\n"
    "                    [--trace TRACE.json] [--op-times-out OPS.json] [--warmup N]\n"
    "                    [--init-weights HF.safetensors|index.json|DIR] [--export-hf DIR]\n"
    "                    [--export-dtype fp32|bf16] [--export-shard-bytes N] [--verbose | "
    "--quiet]\n"
    "                    (default: a summary of a few lines; --verbose: the per-layer and per-rank "
    "tables;\n"
    "                    --quiet: errors and the final result line only; every run, --train "
    "too)\n"
    "                    (--trace: Chrome trace of the run, one track per rank; --op-times-out: "
    "measured\n"
    "                    per-op medians in the format --backend sim --op-times reads; --warmup: N "
    "untimed\n"
    "                    runs of the same input before the reported one; --init-weights: the "
    "weights from\n"
    "                    Hugging Face safetensors by HF name; --export-hf: the weights run with, "
    "as a\n"
    "                    Hugging Face checkpoint directory with config.json, sharded past\n"
    "                    --export-shard-bytes, default 5000000000)\n"
    "       disagmoe-run PLAN_DIR_OR_JSON --backend sim [--op-times MEASURED.json] [--trace "
    "TRACE.json]\n"
    "                    [--host-cores C]\n"
    "       disagmoe-run PLAN_DIR_OR_JSON --backend cuda [--precision bf16|fp32] [...]\n"
    "                    (bf16 compute with fp32 master weights, or fp32 throughout for checking; "
    "probes the\n"
    "                    device first)\n"
    "                    (replays the plan's schedule on the simulator: step time, busy/idle, "
    "bubble, MFU;\n"
    "                    --host-cores: the ranks are threads sharing C CPU cores, as the cpu "
    "backend runs)\n";

struct Options {
  std::string plan, backend = "cpu", comm = "local", input, output;
  std::string precision;         // --backend cuda: bf16 (default) or fp32
  int64_t batch = 0, seqLen = 0; // 0: the plan's compiled shape
  uint64_t seed = 0;
  int64_t timeoutSeconds = 60;
  bool seedGiven = false, timeoutGiven = false; // --backend sim refuses what it would ignore
  std::string opTimes;                          // --backend sim: measured op times to replay with
  std::string trace; // sim: the simulated step's Chrome trace; cpu: the executed run's
  std::string
      opTimesOut; // --backend cpu: write the measured per-op times (runtime/executor/OpProfile.h)
  int64_t warmup =
      0; // untimed forward runs before the reported one (caches and allocator pools warm)
  int64_t hostCores =
      0; // --backend sim: ranks as threads on this many CPU cores (0: a device per rank)
  tools::HfFlags hf; // --init-weights, --export-hf (runtime/tools/HfFlags.h)
};

int64_t parseInteger(const std::string &flag, const std::string &text, int64_t lo) {
  size_t used = 0;
  long long v = 0;
  try {
    if (tools::isDecimalInteger(text)) // not "0x10", "+3" or " 3" (DecimalNumber.h)
      v = std::stoll(text, &used);
  } catch (const std::exception &) {
    used = 0;
  }
  if (used != text.size() || text.empty() || v < lo)
    throw UsageError(flag + ": expected an integer >= " + std::to_string(lo) + ", got \"" + text +
                     "\"");
  return v;
}

Options parseArgs(int argc, char **argv) {
  Options o;
  for (int i = 1; i < argc; ++i)
    if (std::string(argv[i]) == "--help" || std::string(argv[i]) == "-h") {
      std::cout << kUsage << disagmoe::tools::distributedUsage();
      std::exit(0);
    }
  // One parser for every disagmoe-run flag (runtime/tools/RunArgs.h); the training ones are
  // refused here by name.
  const tools::RunArgs args = tools::parseRunArgs(argc, argv, tools::RunMode::Forward);
  o.plan = args.plan;
  for (const auto &[arg_, value] : args.flags) {
    try {
      if (o.hf.take(arg_, value))
        continue;
    } catch (const std::invalid_argument &e) {
      throw UsageError(e.what());
    }
    if (arg_ == "--backend")
      o.backend = value;
    else if (arg_ == "--precision")
      o.precision = value;
    else if (arg_ == "--comm")
      o.comm = value;
    else if (arg_ == "--input")
      o.input = value;
    else if (arg_ == "--output")
      o.output = value;
    else if (arg_ == "--batch")
      o.batch = parseInteger(arg_, value, 1);
    else if (arg_ == "--seq-len")
      o.seqLen = parseInteger(arg_, value, 1);
    else if (arg_ == "--seed")
      o.seed = static_cast<uint64_t>(parseInteger(arg_, value, 0)), o.seedGiven = true;
    else if (arg_ == "--timeout")
      o.timeoutSeconds = parseInteger(arg_, value, 1), o.timeoutGiven = true;
    else if (arg_ == "--op-times")
      o.opTimes = value;
    else if (arg_ == "--trace")
      o.trace = value;
    else if (arg_ == "--op-times-out")
      o.opTimesOut = value;
    else if (arg_ == "--warmup")
      o.warmup = parseInteger(arg_, value, 0);
    else if (arg_ == "--verbose" || arg_ == "--quiet") {
      const auto level =
          arg_ == "--verbose" ? train::OutputLevel::Verbose : train::OutputLevel::Quiet;
      if (train::outputLevel() != train::OutputLevel::Summary && train::outputLevel() != level)
        throw UsageError("--verbose and --quiet contradict each other: give one");
      train::outputLevel() = level;
    } else if (arg_ == "--host-cores")
      o.hostCores = parseInteger(arg_, value, 1);
    else
      throw UsageError("unknown option " + arg_);
  }
  if (o.plan.empty())
    throw UsageError("missing the plan (a directory holding plan.json, or the JSON file)");
  // What this build lacks is not a fault of the command line: parse-only mode accepts it.
  const bool checkBuild = !tools::parseOnly();
  if (!o.precision.empty() && o.precision != "bf16" && o.precision != "fp32")
    throw UsageError("--precision must be bf16 or fp32 (got \"" + o.precision + "\")");
  if (!o.precision.empty() && o.backend != "cuda")
    throw UsageError("--precision needs --backend cuda (the cpu backend computes in fp32)");
  if (o.backend == "cuda" && checkBuild) // the device probe, before any file is read
    throw UsageError(tools::cudaBackendRefusal());
  if (o.backend != "cpu" && o.backend != "sim" && o.backend != "cuda")
    throw UsageError("unknown backend \"" + o.backend + "\" (expected cpu, cuda or sim)");
  if (o.backend != "sim" && !o.opTimes.empty())
    throw UsageError("--op-times needs --backend sim");
  if (o.backend != "sim" && o.hostCores)
    throw UsageError("--host-cores needs --backend sim");
  if (o.warmup > 0 && (o.backend == "sim" || !o.trace.empty() || !o.opTimesOut.empty()))
    throw UsageError("--warmup runs the cpu forward several times and reports the last run: it "
                     "takes no --backend "
                     "sim, --trace or --op-times-out (those record one run)");
  if (o.backend == "sim" && !o.opTimesOut.empty())
    throw UsageError("--op-times-out times an executed run: it needs --backend cpu");
  if (o.backend == "sim" && (!o.input.empty() || !o.output.empty()))
    throw UsageError("--backend sim replays the plan's schedule: it takes no --input or --output");
  if (o.backend == "sim" && (o.batch || o.seqLen || o.seedGiven || o.timeoutGiven))
    throw UsageError("--backend sim replays the plan's compiled schedule: --batch, --seq-len, "
                     "--seed and --timeout "
                     "do not apply (compile the plan for another shape with disagmoe compile "
                     "--batch/--seq-len)");
  if (o.backend == "sim" && (!o.hf.initWeights.empty() || !o.hf.exportDir.empty()))
    throw UsageError("--backend sim replays the plan's schedule: it reads no weights (no "
                     "--init-weights or --export-hf)");
  try {
    o.hf.check();
  } catch (const std::invalid_argument &e) {
    throw UsageError(e.what());
  }
  if ((o.comm == "mpi" || o.comm == "nccl") && checkBuild)
    throw UsageError("comm \"" + o.comm +
                     "\" is not built in this version (available: local, mpi)");
  if (o.comm != "local" && o.comm != "mpi" && o.comm != "nccl")
    throw UsageError("unknown comm \"" + o.comm + "\" (expected local, mpi or nccl)");
  return o;
}

int run(const Options &o) {
  // Before any work: a run that cannot write its results fails at once.
  if (!o.output.empty())
    tools::checkOutputFile("--output", o.output);
  if (!o.trace.empty())
    tools::checkOutputFile("--trace", o.trace);
  if (!o.opTimesOut.empty())
    tools::checkOutputFile("--op-times-out", o.opTimesOut);
  if (!o.input.empty())
    tools::checkInputFile("--input", o.input);
  if (!o.opTimes.empty())
    tools::checkInputFile("--op-times", o.opTimes);
  const Plan plan = loadPlan(o.plan);
  tools::checkHfNaming(o.hf, plan);
  if (o.backend == "sim")
    return tools::runSimBackend(plan, {o.opTimes, o.trace, o.hostCores}, std::cout);
  int64_t batch = o.batch ? o.batch : plan.model.batch;
  int64_t seqLen = o.seqLen ? o.seqLen : plan.model.seqLen;
  std::vector<int64_t> ids;
  if (!o.input.empty()) {
    std::vector<int64_t> shape;
    ids = readNpyInt64(o.input, shape);
    if (shape.size() != 2)
      throw UsageError(o.input + ": expected token ids of shape [batch, seq], got rank " +
                       std::to_string(shape.size()));
    if ((o.batch && o.batch != shape[0]) || (o.seqLen && o.seqLen != shape[1]))
      throw UsageError(o.input + ": shape [" + std::to_string(shape[0]) + "," +
                       std::to_string(shape[1]) + "] disagrees with --batch/--seq-len");
    batch = shape[0];
    seqLen = shape[1];
  } else {
    try { // before allocating batch * seqLen ids
      validateShape(plan, batch, seqLen);
    } catch (const ExecError &e) {
      throw UsageError("--batch " + std::to_string(batch) + " --seq-len " + std::to_string(seqLen) +
                       ": " + e.what());
    }
    std::mt19937_64 rng(o.seed);
    ids.resize(static_cast<size_t>(batch * seqLen));
    for (int64_t &id : ids)
      id = static_cast<int64_t>(rng() % static_cast<uint64_t>(plan.model.vocabSize));
  }
  try {
    validateInput(plan, ids, batch, seqLen);
  } catch (const ExecError &e) {
    throw UsageError((o.input.empty() ? std::string("generated ids") : o.input) + ": " + e.what());
  }

  ExecutorOptions options;
  options.recvTimeout = std::chrono::seconds(o.timeoutSeconds);
  // Half the receive deadline: a silent rank is named before its peers' receives time out.
  options.heartbeatDeadline = std::chrono::seconds(o.timeoutSeconds) / 2;
  OpProfile profile(plan.placement.worldSize);
  if (!o.trace.empty() || !o.opTimesOut.empty())
    options.profile = &profile;
  // --init-weights: every name, shape and dtype is checked here, before any rank starts.
  const std::unique_ptr<train::HfWeights> hf =
      tools::openInitWeights(o.hf, plan, train::quiet() ? nullptr : &std::cout);
  if (hf)
    options.weights = hf->source();
  // Only now, after every input and weight was checked: a refusal prints nothing else.
  if (o.input.empty())
    train::report() << "no --input: running on random token ids [" << batch << "," << seqLen
                    << "] (seed " << o.seed << ")\n";
  const Executor executor(plan, options);
  int64_t warmupRuns = 0;
  const auto warmupStart = std::chrono::steady_clock::now();
  for (; warmupRuns < o.warmup; ++warmupRuns)
    executor.run(ids, batch, seqLen);
  const double warmupSeconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - warmupStart).count();
  const RunResult result = executor.run(ids, batch, seqLen);

  std::ostream &out = train::report(); // --quiet: the throughput line only
  out << "plan: " << plan.path << " (" << plan.model.family << ", " << plan.model.numLayers
      << " layers, " << plan.model.numExperts << " experts, top-" << plan.model.topK
      << ", world size " << plan.placement.worldSize << ")\n\n";
  if (train::verbose()) {
    out << "placement:\n" << formatPlacement(plan, result) << "\n";
    out << "memory:\n" << formatMemory(plan) << "\n";
    out << "exchange bytes:\n" << formatExchanges(plan, result) << "\n";
    out << "against an expert-parallel all-to-all of the same routing:\n"
        << formatAllToAllComparison(plan, result) << "\n";
  } else {
    out << formatSummary(plan, result) << "\n";
  }
  if (warmupRuns > 0) {
    char seconds[32];
    std::snprintf(seconds, sizeof seconds, "%.3f", warmupSeconds);
    out << "warm-up: " << warmupRuns << " untimed forward run" << (warmupRuns == 1 ? "" : "s")
        << " of the same input in " << seconds << " s before the reported run\n";
  }
  std::cout << formatThroughput(result);
  if (!o.output.empty()) {
    writeNpyFloat32(o.output, result.logits);
    out << "logits [" << batch << "," << seqLen << "," << plan.model.vocabSize << "] written to "
        << o.output << "\n";
  }
  if (!o.opTimesOut.empty()) {
    writeOpTimes(plan, profile, o.opTimesOut);
    out << "measured op times (forward) written to " << o.opTimesOut << "\n";
  }
  if (!o.trace.empty()) {
    writeExecutionTrace(plan, profile, -1, o.trace);
    out << "Chrome trace of the run written to " << o.trace << "\n";
  }
  // The weights this run used, read again from their source one at a time.
  Tensor current;
  tools::exportHfIfAsked(
      o.hf, plan,
      [&](int index) -> const Tensor & {
        current = hf ? hf->read(index) : readWeight(plan.model.weights[static_cast<size_t>(index)]);
        return current;
      },
      out);
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  for (int i = 1; i < argc; ++i)
    if (std::string(argv[i]) == "--version") {
      std::cout << versionLine("disagmoe-run") << "\n";
      return 0;
    }
  // --config RUN.yaml|RUN.json: the file's options first, the command line's after them (they
  // override; runtime/tools/RunConfig.h).
  std::vector<std::string> args;
  try {
    args = tools::expandRunConfig(std::vector<std::string>(argv + 1, argv + argc));
  } catch (const std::exception &e) {
    std::cerr << "disagmoe-run: " << e.what() << "\n";
    return 1;
  }
  std::vector<char *> expanded = {argv[0]};
  for (std::string &a : args)
    expanded.push_back(a.data());
  expanded.push_back(nullptr);
  argc = static_cast<int>(expanded.size()) - 1;
  argv = expanded.data();
  // --train and --comm mpi: runtime/tools/DistributedRun.h.
  if (disagmoe::tools::handlesArgs(argc, argv))
    return disagmoe::tools::distributedMain(argc, argv);
  try {
    const Options o = parseArgs(argc, argv);
    if (tools::parseOnly())
      return 0;
    return run(o);
  } catch (const std::bad_alloc &) { // the shape checks passed, yet a buffer of the run did not fit
    std::cerr << "disagmoe-run: out of host memory running the plan's forward (a buffer of the "
                 "token ids, weights, "
                 "exchanges or logits could not be allocated): try a smaller --batch/--seq-len\n";
  } catch (const std::exception &e) {
    std::cerr << "disagmoe-run: " << tools::withConfigOrigin(e.what()) << "\n";
  } catch (...) {
    std::cerr << "disagmoe-run: unknown error\n";
  }
  return 1;
}
