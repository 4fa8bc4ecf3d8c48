// disagmoe-run's --train and --comm mpi modes: training, one process per rank (DistributedRun.h).
#include "runtime/tools/DistributedRun.h"

#include "runtime/backends/cpu/BackwardKernels.h"
#include "runtime/comm/tcp/LaunchEnv.h"
#include "runtime/comm/tcp/TcpComm.h"
#include "runtime/comm/tcp/TcpRendezvous.h"
#include "runtime/exchange/CountedExchange.h"
#include "runtime/executor/Executor.h"
#include "runtime/executor/Heartbeat.h"
#include "runtime/executor/OpProfile.h"
#include "runtime/executor/RankWorker.h"
#include "runtime/executor/Report.h"
#include "runtime/io/Npy.h"
#include "runtime/plan/Plan.h"
#include "runtime/plan/Weights.h"
#include "runtime/tensor/FreshBuffers.h"
#include "runtime/tools/CudaBackend.h"
#include "runtime/tools/DecimalNumber.h"
#include "runtime/tools/HfFlags.h"
#include "runtime/tools/OutputPath.h"
#include "runtime/tools/ParseOnly.h"
#include "runtime/tools/RunArgs.h"
#include "runtime/tools/RunConfig.h"
#include "runtime/train/Checkpoint.h"
#include "runtime/train/CheckpointDir.h"
#include "runtime/train/Progress.h"
#include "runtime/train/Trainer.h"
#include "runtime/train/TrainingLoop.h"
#ifdef DISAGMOE_HAVE_MPI
#include "runtime/comm/mpi/MpiComm.h"
#endif
#ifdef DISAGMOE_HAVE_NCCL
#include "runtime/comm/nccl/NcclComm.h"
#endif

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <new>
#include <optional>
#include <random>
#include <set>
#include <stdexcept>
#include <string>
#include <tuple>
#include <type_traits>

namespace disagmoe::tools {
namespace {

class UsageError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

struct Options {
  std::string plan, backend = "cpu", comm = "local", input, output;
  std::string precision; // --backend cuda: bf16 (default) or fp32
  int64_t batch = 0, seqLen = 0;
  uint64_t seed = 0;
  int64_t timeoutSeconds = 60;
  bool train = false;
  std::string targets, saveGrads, saveWeights, optimizer = "sgd";
  double lr = -1, weightDecay = -1, beta1 = 0.9, beta2 = 0.999, eps = 1e-8;
  int64_t microBatches = 1, steps = 1;
  int64_t failRank = -1;
  double clipGrad = 0, lrMin = 0;          // --clip-grad, --lr-min
  double auxLossCoef = 0;                  // --aux-loss-coef
  double capacityFactor = 0;               // --capacity-factor (0: dropless)
  double routerBiasRate = 0;               // --router-bias-update-rate (0: none)
  int64_t warmupSteps = 0, totalSteps = 0; // --warmup-steps, --total-steps (LrSchedule.h)
  // The training loop on token files (runtime/train/TrainingLoop.h).
  std::string data, dataFormat, lossLog, checkpoint, checkpointDir, resume;
  int64_t checkpointEvery = 0, keepCheckpoints = 0;
  std::string resumeFile; // the file --resume names (a directory: what its `latest` names)
  // --op-times-out / --trace: measured op medians and a Chrome trace
  // (runtime/executor/OpProfile.h).
  std::string opTimesOut, trace;
  HfFlags hf; // --init-weights, --export-hf (HfFlags.h)
  bool loop() const {
    return !data.empty() || !lossLog.empty() || !checkpoint.empty() || !checkpointDir.empty() ||
           !resume.empty();
  }
};

int64_t parseInteger(const std::string &flag, const std::string &text, int64_t lo) {
  size_t used = 0;
  long long v = 0;
  try {
    if (isDecimalInteger(text)) // not "0x10", "+3" or " 3" (DecimalNumber.h)
      v = std::stoll(text, &used);
  } catch (const std::exception &) {
    used = 0;
  }
  if (used != text.size() || text.empty() || v < lo)
    throw UsageError(flag + ": expected an integer >= " + std::to_string(lo) + ", got \"" + text +
                     "\"");
  return v;
}

double parseReal(const std::string &flag, const std::string &text, double lo) {
  size_t used = 0;
  double v = 0;
  try {
    if (isDecimalReal(text)) // not "0x10" (a hexadecimal float to std::stod) nor "inf"
      v = std::stod(text, &used);
  } catch (const std::exception &) {
    used = 0;
  }
  // Finite only: an infinite learning rate or decay would write non-finite weights.
  if (used != text.size() || text.empty() || !(v >= lo) || !std::isfinite(v))
    throw UsageError(flag + ": expected a finite decimal number >= " + decimalText(lo) +
                     ", got \"" + text + "\"");
  return v;
}

Options parseArgs(int argc, char **argv) {
  Options o;
  // One parser for every disagmoe-run flag (RunArgs.h); the forward-only ones are refused by name.
  const RunArgs args = parseRunArgs(argc, argv, RunMode::Train);
  o.plan = args.plan;
  for (const auto &[name, value] : args.flags) {
    try {
      if (o.hf.take(name, value))
        continue;
    } catch (const std::invalid_argument &e) {
      throw UsageError(e.what());
    }
    if (name == "--train")
      o.train = true;
    else if (name == "--verbose" || name == "--quiet") { // runtime/train/Progress.h
      const auto level =
          name == "--verbose" ? train::OutputLevel::Verbose : train::OutputLevel::Quiet;
      if (train::outputLevel() != train::OutputLevel::Summary && train::outputLevel() != level)
        throw UsageError("--verbose and --quiet contradict each other: give one");
      train::outputLevel() = level;
    } else if (name == "--debug-nan-fill") // runtime/tensor/FreshBuffers.h
      setDebugNanFill(true);
    else if (name == "--backend")
      o.backend = value;
    else if (name == "--precision")
      o.precision = value;
    else if (name == "--comm")
      o.comm = value;
    else if (name == "--input")
      o.input = value;
    else if (name == "--output")
      o.output = value;
    else if (name == "--batch")
      o.batch = parseInteger(name, value, 1);
    else if (name == "--seq-len")
      o.seqLen = parseInteger(name, value, 1);
    else if (name == "--seed")
      o.seed = static_cast<uint64_t>(parseInteger(name, value, 0));
    else if (name == "--timeout")
      o.timeoutSeconds = parseInteger(name, value, 1);
    else if (name == "--targets")
      o.targets = value;
    else if (name == "--optimizer")
      o.optimizer = value;
    else if (name == "--lr")
      o.lr = parseReal(name, value, 0);
    else if (name == "--weight-decay")
      o.weightDecay = parseReal(name, value, 0);
    else if (name == "--beta1")
      o.beta1 = parseReal(name, value, 0);
    else if (name == "--beta2")
      o.beta2 = parseReal(name, value, 0);
    else if (name == "--eps")
      o.eps = parseReal(name, value, 0);
    else if (name == "--micro-batches")
      o.microBatches = parseInteger(name, value, 1);
    else if (name == "--steps")
      o.steps = parseInteger(name, value, 1);
    else if (name == "--save-grads")
      o.saveGrads = value;
    else if (name == "--save-weights")
      o.saveWeights = value;
    else if (name == "--op-times-out")
      o.opTimesOut = value;
    else if (name == "--trace")
      o.trace = value;
    else if (name == "--fail-rank")
      o.failRank = parseInteger(name, value, 0);
    else if (name == "--clip-grad")
      o.clipGrad = parseReal(name, value, 0);
    else if (name == "--aux-loss-coef")
      o.auxLossCoef = parseReal(name, value, 0);
    else if (name == "--capacity-factor")
      o.capacityFactor = parseReal(name, value, 0);
    else if (name == "--router-bias-update-rate")
      o.routerBiasRate = parseReal(name, value, 0);
    else if (name == "--warmup-steps")
      o.warmupSteps = parseInteger(name, value, 0);
    else if (name == "--total-steps")
      o.totalSteps = parseInteger(name, value, 0);
    else if (name == "--lr-min")
      o.lrMin = parseReal(name, value, 0);
    else if (name == "--data")
      o.data = value;
    else if (name == "--data-format")
      o.dataFormat = value;
    else if (name == "--loss-log")
      o.lossLog = value;
    else if (name == "--save-checkpoint")
      o.checkpoint = value;
    else if (name == "--checkpoint-dir")
      o.checkpointDir = value;
    else if (name == "--keep-checkpoints")
      o.keepCheckpoints = parseInteger(name, value, 1);
    else if (name == "--checkpoint-every")
      o.checkpointEvery = parseInteger(name, value, 1);
    else if (name == "--resume")
      o.resume = value;
    else
      throw UsageError("unknown option " + name + " (see --help)");
  }
  if (o.plan.empty())
    throw UsageError("missing the plan (a directory holding plan.json, or the JSON file)");
  // A forward run under --comm mpi/nccl refuses the training flags as a single process does
  // (RunArgs.h), instead of running the forward and ignoring them (--steps, --lr, ...).
  // --fail-rank is a test hook of every one-process-per-rank run.
  if (!o.train)
    for (const auto &flag : args.flags) {
      const RunFlag *f = findRunFlag(flag.first.substr(2));
      if (f && f->mode == RunMode::Train && flag.first != "--fail-rank")
        throw UsageError(trainOnlyRefusal(flag.first));
    }
  if (o.backend == "sim")
    throw UsageError("--backend sim replays the plan's schedule on the simulator: it does not run "
                     "--train or --comm "
                     "mpi (they run on --backend cpu)");
  // What this build lacks is not a fault of the command line: parse-only mode accepts it.
  [[maybe_unused]] const bool checkBuild = !parseOnly();
  if (!o.precision.empty() && o.precision != "bf16" && o.precision != "fp32")
    throw UsageError("--precision must be bf16 or fp32 (got \"" + o.precision + "\")");
  if (!o.precision.empty() && o.backend != "cuda")
    throw UsageError("--precision needs --backend cuda (the cpu backend computes in fp32)");
  if (o.backend == "cuda" && checkBuild) // the device probe, before any file is read
    throw UsageError(cudaBackendRefusal());
  if (o.backend != "cpu" && o.backend != "cuda")
    throw UsageError("unknown backend \"" + o.backend + "\" (expected cpu, cuda or sim)");
#ifndef DISAGMOE_HAVE_NCCL
  if (o.comm == "nccl" && checkBuild)
    throw UsageError("comm \"nccl\" is not built in this version (MPI, the CUDA runtime or NCCL "
                     "was not found at "
                     "build time; available: local, mpi)");
#endif
  if (o.comm != "local" && o.comm != "mpi" && o.comm != "nccl")
    throw UsageError("unknown comm \"" + o.comm + "\" (expected local, mpi or nccl)");
  if ((!o.opTimesOut.empty() || !o.trace.empty()) && (o.comm != "local" || !o.train))
    throw UsageError("--op-times-out and --trace time the ranks of this process: they need --train "
                     "with --comm local");
#ifndef DISAGMOE_HAVE_MPI
  if (o.comm == "mpi" && checkBuild)
    throw UsageError("comm \"mpi\" is not built in this version (MPI was not found at build time)");
#endif
  if (o.optimizer != "sgd" && o.optimizer != "adamw")
    throw UsageError("--optimizer: expected sgd or adamw, got \"" + o.optimizer + "\"");
  if (!o.train) {
    if (!o.targets.empty())
      throw UsageError("--targets needs --train");
    if (!o.saveGrads.empty())
      throw UsageError("--save-grads needs --train");
    if (!o.saveWeights.empty())
      throw UsageError("--save-weights needs --train");
  } else if (!o.output.empty()) {
    throw UsageError("--output writes forward logits; it does not combine with --train");
  }
  if (o.optimizer == "sgd" && o.weightDecay > 0)
    throw UsageError("--weight-decay applies to adamw only");
  if (o.loop() && !o.train)
    throw UsageError(
        "--data, --loss-log, --save-checkpoint, --checkpoint-dir and --resume need --train");
  if (!o.data.empty() && (!o.input.empty() || !o.targets.empty()))
    throw UsageError("--data gives the batches; it does not combine with --input or --targets");
  if (!o.dataFormat.empty() && o.data.empty())
    throw UsageError("--data-format needs --data");
  if (!o.checkpoint.empty() && !o.checkpointDir.empty())
    throw UsageError("--save-checkpoint FILE and --checkpoint-dir DIR both say where checkpoints "
                     "go: give one");
  if (o.checkpointEvery && o.checkpoint.empty() && o.checkpointDir.empty())
    throw UsageError("--checkpoint-every needs --save-checkpoint or --checkpoint-dir");
  if (o.keepCheckpoints && o.checkpointDir.empty())
    throw UsageError(
        "--keep-checkpoints needs --checkpoint-dir (--save-checkpoint keeps one file)");
  if (!o.hf.initWeights.empty() && !o.resume.empty())
    throw UsageError("--init-weights starts a run from Hugging Face weights and --resume continues "
                     "one from its checkpoint: give one");
  if (!o.hf.exportDir.empty() && o.comm == "nccl")
    throw UsageError("--export-hf is not supported under --comm nccl yet (it gathers the weights "
                     "to rank 0 under --comm local and mpi): save a checkpoint and export from it");
  if (!o.hf.exportDir.empty() && o.comm == "mpi" && !o.train)
    throw UsageError("--export-hf under --comm mpi exports the trained weights: it needs --train "
                     "(a forward run's weights are the plan's or --init-weights': export them "
                     "with --comm local)");
  try {
    o.hf.check();
  } catch (const std::invalid_argument &e) {
    throw UsageError(e.what());
  }
  return o;
}

// Every output path, before any work: a run that cannot write its results fails at once.
void checkOutputs(const Options &o) {
  const std::pair<const char *, const std::string *> files[] = {
      {"--output", &o.output},
      {"--trace", &o.trace},
      {"--op-times-out", &o.opTimesOut},
      {"--loss-log", &o.lossLog},
      {"--save-checkpoint", &o.checkpoint}};
  for (const auto &[flag, path] : files)
    if (!path->empty())
      checkOutputFile(flag, *path);
  if (!o.saveGrads.empty())
    checkOutputDir("--save-grads", o.saveGrads);
  if (!o.checkpointDir.empty()) {
    checkOutputDir("--checkpoint-dir", o.checkpointDir);
    // A fresh run's step files would sit beside (or replace) another run's, and its `latest` would
    // name whichever run saved last: only a resumed run continues into a directory that has files.
    std::error_code ec;
    if (o.resume.empty() && std::filesystem::is_directory(o.checkpointDir, ec)) {
      std::vector<std::string> names;
      for (const auto &entry : std::filesystem::directory_iterator(o.checkpointDir, ec))
        names.push_back(entry.path().filename().string());
      std::sort(names.begin(), names.end());
      if (!names.empty())
        throw UsageError("--checkpoint-dir " + o.checkpointDir + ": not empty (" +
                         std::to_string(names.size()) + " entr" +
                         (names.size() == 1 ? "y" : "ies") + ", first " + names.front() +
                         "): continue its run with --resume " + o.checkpointDir +
                         ", or give an empty or new directory for a new run");
    }
  }
  if (!o.saveWeights.empty())
    checkOutputDir("--save-weights", o.saveWeights);
}

// Every input path, before any work: a directory or FIFO is named, not misread (or waited on).
// --resume may name a checkpoint directory: the file its `latest` names is resolved here.
void checkInputs(Options &o) {
  const std::pair<const char *, const std::string *> files[] = {
      {"--input", &o.input}, {"--targets", &o.targets}, {"--data", &o.data}};
  for (const auto &[flag, path] : files)
    if (!path->empty())
      checkInputFile(flag, *path);
  if (o.resume.empty())
    return;
  try {
    o.resumeFile = train::resolveCheckpoint(o.resume);
  } catch (const train::CheckpointError &e) {
    throw UsageError(std::string("--resume: ") + e.what());
  }
  checkInputFile("--resume", o.resumeFile);
}

// The files --save-grads/--save-weights will write (names known once the plan is loaded): an
// existing symlink, FIFO or device among them is refused before the training, not after it.
void checkSaveDirFiles(const Options &o, const Plan &plan) {
  const std::vector<std::string> keys = train::weightKeys(plan.model);
  for (const auto &[flag, dir] : {std::pair<const char *, std::string>{"--save-grads", o.saveGrads},
                                  {"--save-weights", o.saveWeights}}) {
    if (dir.empty())
      continue;
    for (const std::string &key : keys)
      checkNotSpecialFile(flag, dir + "/" + key + ".npy");
    if (std::string(flag) == "--save-weights" && o.routerBiasRate > 0)
      for (int64_t l = 0; l < plan.model.numLayers; ++l)
        checkNotSpecialFile(flag, dir + "/l" + std::to_string(l) + "_router_selection_bias.npy");
  }
}

// The token ids every rank uses: --input, or seeded random ids (identical on every process).
std::vector<int64_t> loadIds(const Options &o, const Plan &plan, int64_t &batch, int64_t &seqLen) {
  batch = o.batch ? o.batch : plan.model.batch;
  seqLen = o.seqLen ? o.seqLen : plan.model.seqLen;
  std::vector<int64_t> ids;
  if (!o.input.empty()) {
    std::vector<int64_t> shape;
    ids = readNpyInt64(o.input, shape);
    if (shape.size() != 2)
      throw UsageError(o.input + ": expected token ids of shape [batch, seq], got rank " +
                       std::to_string(shape.size()));
    if ((o.batch && o.batch != shape[0]) || (o.seqLen && o.seqLen != shape[1]))
      throw UsageError(o.input + ": shape " + shapeToString(shape) +
                       " disagrees with --batch/--seq-len");
    batch = shape[0];
    seqLen = shape[1];
  } else {
    try { // before allocating batch * seqLen ids; the capacity bounds a micro-batch (its largest,
          // at least ceil(batch / M) sequences: the trainer checks its exact split later)
      int64_t total = 0;
      if (__builtin_mul_overflow(batch, seqLen, &total))
        throw ExecError("input [" + std::to_string(batch) + "," + std::to_string(seqLen) +
                        "] has more than 2^63 - 1 tokens");
      validateShape(plan, batch / o.microBatches + (batch % o.microBatches != 0), seqLen);
    } catch (const ExecError &e) {
      throw UsageError("--batch " + std::to_string(batch) + " --seq-len " + std::to_string(seqLen) +
                       (o.microBatches > 1 ? " --micro-batches " + std::to_string(o.microBatches) +
                                                 " (a micro-batch)"
                                           : std::string()) +
                       ": " + e.what());
    }
    std::mt19937_64 rng(o.seed);
    ids.resize(static_cast<size_t>(batch * seqLen));
    for (int64_t &id : ids)
      id = static_cast<int64_t>(rng() % static_cast<uint64_t>(plan.model.vocabSize));
  }
  return ids;
}

std::vector<int64_t> loadTargets(const Options &o, const std::vector<int64_t> &ids, int64_t batch,
                                 int64_t seqLen) {
  std::vector<int64_t> targets(ids.size());
  if (o.targets.empty()) {
    cpu::nextTokenTargets(ids.data(), batch, seqLen, targets.data());
  } else {
    std::vector<int64_t> shape;
    targets = readNpyInt64(o.targets, shape);
    if (shape != std::vector<int64_t>{batch, seqLen})
      throw UsageError(o.targets + ": shape " + shapeToString(shape) + " is not the input's [" +
                       std::to_string(batch) + "," + std::to_string(seqLen) + "]");
  }
  // A step over no target token has no loss and no gradient: refused, not run as a silent no-op
  // (with --data the batches come from the token file, each sequence with its next tokens).
  if (o.data.empty() &&
      std::none_of(targets.begin(), targets.end(), [](int64_t t) { return t >= 0; }))
    throw UsageError((o.targets.empty()
                          ? "batch [" + std::to_string(batch) + "," + std::to_string(seqLen) +
                                "] has no target token (targets are the next token within each "
                                "sequence: a sequence of 1 token has none)"
                          : o.targets + ": every target is ignored (< 0)") +
                     "; nothing to train on");
  return targets;
}

void printPlanLine(const Plan &plan) {
  train::report() << "plan: " << plan.path << " (" << plan.model.family << ", "
                  << plan.model.numLayers << " layers, " << plan.model.numExperts
                  << " experts, top-" << plan.model.topK << ", world size "
                  << plan.placement.worldSize << ")\n";
}

// ---- forward over one process per rank --------------------------------------------------------

class Writer {
public:
  template <typename T> void put(const T &v) {
    static_assert(std::is_trivially_copyable<T>::value, "POD only");
    const size_t at = bytes.size();
    bytes.resize(at + sizeof(T));
    std::memcpy(bytes.data() + at, &v, sizeof(T));
  }
  template <typename T> void putVector(const std::vector<T> &v) {
    put<uint64_t>(v.size());
    const size_t at = bytes.size();
    bytes.resize(at + v.size() * sizeof(T));
    if (!v.empty())
      std::memcpy(bytes.data() + at, v.data(), v.size() * sizeof(T));
  }
  Bytes bytes;
};

class Reader {
public:
  explicit Reader(const Bytes &b) : b_(b) {}
  template <typename T> T get() {
    T v;
    take(&v, sizeof(T));
    return v;
  }
  template <typename T> std::vector<T> getVector() {
    const uint64_t n = get<uint64_t>();
    if (n > (b_.size() - at_) / sizeof(T))
      throw ExecError("malformed result message");
    std::vector<T> v(static_cast<size_t>(n));
    take(v.data(), v.size() * sizeof(T));
    return v;
  }

private:
  void take(void *out, size_t n) {
    if (n > b_.size() - at_)
      throw ExecError("malformed result message");
    if (n)
      std::memcpy(out, b_.data() + at_, n);
    at_ += n;
  }
  const Bytes &b_;
  size_t at_ = 0;
};

Bytes packResult(const RankResult &r) {
  Writer w;
  w.putVector(r.tokenIds);
  w.putVector(r.hidden);
  w.putVector(r.logits);
  w.putVector(r.sent);
  w.putVector(r.experts);
  return std::move(w.bytes);
}

RankResult unpackResult(const Bytes &b) {
  Reader in(b);
  RankResult r;
  r.tokenIds = in.getVector<int64_t>();
  r.hidden = in.getVector<float>();
  r.logits = in.getVector<float>();
  r.sent = in.getVector<ExchangeRecord>();
  r.experts = in.getVector<ExpertRecord>();
  return r;
}

// One process per rank (--comm mpi, nccl): every rank's forward result goes to rank 0, which prints
// the run. On the tag after every exchange tag of the forward (3 L - 1 per layer, 3 L and 3 L + 1
// for an FFN-side embedding and head; exchangeTag).
void gatherForward(const Options &o, const Plan &plan, Comm &comm, RankResult mine, int64_t batch,
                   int64_t seqLen, std::chrono::steady_clock::time_point start,
                   std::chrono::milliseconds timeout);

// A rank that failed, or saw another fail first, prints one line (one write: processes share the
// terminal) and ends the job; CommT is MpiComm, TcpComm or NcclComm (abortJob does not return).
template <typename CommT> [[noreturn]] void abortAfterPeer(CommT &comm, const CommAborted &e) {
  std::cerr << "disagmoe-run: " + std::string(e.what()) + "\n" << std::flush;
  comm.abortJob(e.what());
}

template <typename CommT>
[[noreturn]] void abortAfterFailure(CommT &comm, int me, const std::exception &e) {
  std::string what = e.what();
  if (what.rfind("rank ", 0) != 0)
    what = "rank " + std::to_string(me) + ": " + what;
  std::cerr << "disagmoe-run: " + what + "\n" << std::flush;
  comm.abortJob("rank " + std::to_string(me) + " failed: " + what);
}

// Executor::run's assembly of every rank's result.
RunResult assemble(const Plan &plan, const std::vector<RankResult> &results, int64_t batch,
                   int64_t seqLen, double seconds) {
  RunResult out;
  out.batch = batch;
  out.seqLen = seqLen;
  out.wallSeconds = seconds;
  const int64_t H = plan.model.hiddenSize, V = plan.model.vocabSize;
  out.hidden = Tensor({batch, seqLen, H});
  out.logits = Tensor({batch, seqLen, V});
  for (const RankResult &r : results) {
    if (r.hidden.size() != r.tokenIds.size() * H || r.logits.size() != r.tokenIds.size() * V)
      throw ExecError("malformed result message");
    for (size_t i = 0; i < r.tokenIds.size(); ++i) {
      if (r.tokenIds[i] < 0 || r.tokenIds[i] >= batch * seqLen)
        throw ExecError("malformed result message");
      std::copy_n(r.hidden.begin() + i * H, H, out.hidden.data.begin() + r.tokenIds[i] * H);
      std::copy_n(r.logits.begin() + i * V, V, out.logits.data.begin() + r.tokenIds[i] * V);
    }
    out.exchanges.insert(out.exchanges.end(), r.sent.begin(), r.sent.end());
    out.experts.insert(out.experts.end(), r.experts.begin(), r.experts.end());
  }
  std::sort(out.exchanges.begin(), out.exchanges.end(),
            [](const ExchangeRecord &a, const ExchangeRecord &b) {
              return std::make_tuple(a.layer, static_cast<int>(a.kind), a.src, a.dst) <
                     std::make_tuple(b.layer, static_cast<int>(b.kind), b.src, b.dst);
            });
  std::sort(out.experts.begin(), out.experts.end(),
            [](const ExpertRecord &a, const ExpertRecord &b) {
              return std::make_pair(a.layer, a.expert) < std::make_pair(b.layer, b.expert);
            });
  return out;
}

void printForward(const Options &o, const Plan &plan, const RunResult &result) {
  printPlanLine(plan);
  std::ostream &out = train::report(); // --quiet: the throughput line only
  if (train::verbose()) {
    out << "\nplacement:\n" << formatPlacement(plan, result) << "\n";
    out << "memory:\n" << formatMemory(plan) << "\n";
    out << "exchange bytes:\n" << formatExchanges(plan, result) << "\n";
    out << "against an expert-parallel all-to-all of the same routing:\n"
        << formatAllToAllComparison(plan, result) << "\n";
  } else {
    out << "\n" << formatSummary(plan, result) << "\n";
  }
  std::cout << formatThroughput(result);
  if (!o.output.empty()) {
    writeNpyFloat32(o.output, result.logits);
    out << "logits [" << result.batch << "," << result.seqLen << "," << plan.model.vocabSize
        << "] written to " << o.output << "\n";
  }
}

// The plan of a run with one process per rank: loaded, its --save-weights/--save-grads files
// checked, and its world size equal to mpirun's.
Plan loadProcessPlan(const Options &o, int worldSize, const StoreLaunch *store) {
  Plan plan = loadPlan(o.plan);
  checkSaveDirFiles(o, plan);
  checkHfNaming(o.hf, plan);
  const std::string planRanks = std::to_string(plan.placement.worldSize);
  if (worldSize != plan.placement.worldSize && store)
    throw UsageError(store->worldVar + "=" + std::to_string(worldSize) + " but the plan has " +
                     planRanks + " ranks (start " + planRanks +
                     " processes, e.g. torchrun --nproc-per-node " + planRanks + ")");
  if (worldSize != plan.placement.worldSize)
    throw UsageError("the plan has " + planRanks + " ranks, mpirun started " +
                     std::to_string(worldSize) + " (use mpirun -np " + planRanks + ")");
  return plan;
}

void gatherForward(const Options &o, const Plan &plan, Comm &comm, RankResult mine, int64_t batch,
                   int64_t seqLen, std::chrono::steady_clock::time_point start,
                   std::chrono::milliseconds timeout) {
  const int tag = static_cast<int>(3 * plan.model.numLayers + 2);
  if (comm.rank() != 0) {
    comm.send(0, tag, packResult(mine));
    return;
  }
  std::vector<RankResult> all(static_cast<size_t>(comm.worldSize()));
  all[0] = std::move(mine);
  for (int r = 1; r < comm.worldSize(); ++r)
    all[r] = unpackResult(comm.recv(r, tag, timeout));
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  printForward(o, plan, assemble(plan, all, batch, seqLen, seconds));
}

// ---- training --------------------------------------------------------------------------------

train::TrainOptions trainOptions(const Options &o) {
  train::TrainOptions t;
  t.recvTimeout = std::chrono::seconds(o.timeoutSeconds);
  t.microBatches = o.microBatches;
  t.optimizer.kind = train::parseOptimizerKind(o.optimizer);
  const bool sgd = t.optimizer.kind == train::OptimizerKind::Sgd;
  t.optimizer.lr = o.lr >= 0 ? o.lr : sgd ? 0.1 : 1e-3;
  t.optimizer.weightDecay = o.weightDecay >= 0 ? o.weightDecay : 0.01;
  t.optimizer.beta1 = o.beta1;
  t.optimizer.beta2 = o.beta2;
  t.optimizer.eps = o.eps;
  t.clipGradNorm = o.clipGrad;
  t.auxLossCoef = o.auxLossCoef;
  t.capacityFactor = o.capacityFactor;
  t.routerBiasUpdateRate = o.routerBiasRate;
  t.schedule.warmupSteps = o.warmupSteps;
  t.schedule.totalSteps = o.totalSteps;
  t.schedule.lrMin = o.lrMin;
  return t;
}

// --micro-batches against the batch's sequences, before the header lines (issue 17: the step's
// own check, splitMicroBatches, came after them).
void checkMicroBatches(const Options &o, int64_t batch) {
  if (o.microBatches > batch)
    throw UsageError("--micro-batches " + std::to_string(o.microBatches) + ": cannot split " +
                     std::to_string(batch) + " sequences into " + std::to_string(o.microBatches) +
                     " micro-batches (need 1 <= micro-batches <= batch)");
}

void printTrainHeader(const Options &o, const Plan &plan, const train::TrainOptions &t,
                      int64_t batch, int64_t seqLen) {
  printPlanLine(plan);
  std::ostream &out = train::report();
  out << "training: batch [" << batch << "," << seqLen << "], " << o.microBatches << " micro-batch"
      << (o.microBatches == 1 ? "" : "es") << ", comm " << o.comm << ", optimizer " << o.optimizer
      << " lr " << t.optimizer.lr;
  if (t.optimizer.kind == train::OptimizerKind::AdamW)
    out << " betas (" << t.optimizer.beta1 << ", " << t.optimizer.beta2 << ") eps "
        << t.optimizer.eps << " weight decay " << t.optimizer.weightDecay;
  if (o.warmupSteps || o.totalSteps)
    out << ", warm-up " << o.warmupSteps << " steps, cosine to lr " << o.lrMin << " at step "
        << o.totalSteps;
  if (o.clipGrad > 0)
    out << ", clip grad norm " << o.clipGrad;
  if (o.auxLossCoef > 0)
    out << ", aux loss coef " << o.auxLossCoef;
  if (o.capacityFactor > 0)
    out << ", capacity factor " << o.capacityFactor;
  if (o.routerBiasRate > 0)
    out << ", router bias update rate " << o.routerBiasRate;
  out << "\n";
  if (o.totalSteps > 0 && o.steps > o.totalSteps)
    std::cerr << "disagmoe-run: warning: --steps " << o.steps << " runs past --total-steps "
              << o.totalSteps << ": steps " << o.totalSteps + 1 << "-" << o.steps
              << " use --lr-min " << o.lrMin << "\n";
}

/// Step r's loss line (under --quiet only the last step's), its expert load (--verbose: every
/// step's counts; by default one summary after the last step) and the progress line.
void printStep(const train::StepResult &r, int64_t lastStep, train::StepProgress &progress) {
  progress.clear();
  const bool last = r.step == lastStep;
  if (train::quiet() && !last)
    return;
  std::cout << train::stepLine(r, lastStep, 0, nullptr) << "\n"; // the loop's line too
  if (train::verbose())
    std::cout << train::expertLoadLine(r);
  else if (!train::quiet() && last)
    std::cout << train::expertLoadSummary(r);
  std::cout << std::flush;
  progress.update(r.step);
}

void saveOutputs(const Options &o, const train::Trainer &trainer, bool print) {
  if (!o.saveGrads.empty()) {
    trainer.saveGradients(o.saveGrads);
    if (print)
      train::report() << "gradients of the last step written to " << o.saveGrads << "/\n";
  }
  if (!o.saveWeights.empty()) {
    trainer.saveWeights(o.saveWeights);
    if (print)
      train::report() << "weights after the last step written to " << o.saveWeights << "/\n";
  }
}

// A failure injected by --fail-rank (a test hook).
void maybeFail(const Options &o, int rank) {
  if (o.failRank == rank)
    throw ExecError("rank " + std::to_string(rank) + ": injected failure (--fail-rank)");
}

// --data's format: --data-format, else megatron for a .bin with an .idx beside it.
std::string dataFormat(const Options &o) {
  std::string format = o.dataFormat;
  const bool bin = o.data.size() > 4 && o.data.compare(o.data.size() - 4, 4, ".bin") == 0;
  if (format.empty() && bin && std::ifstream(o.data.substr(0, o.data.size() - 4) + ".idx"))
    format = "megatron";
  if (format.empty())
    throw UsageError("--data " + o.data + ": give --data-format bytes|uint16|uint32|megatron");
  return format;
}

// --data's batches (nullptr without --data); `print`: the "data:" line.
void printData(const Options &o, const train::TokenBatcher &data) {
  train::report() << "data: " << o.data << " (" << dataFormat(o) << ", " << data.size()
                  << " tokens)\n";
}

std::unique_ptr<train::TokenBatcher> loadTokenData(const Options &o, const Plan &plan,
                                                   int64_t batch, int64_t seqLen, bool print) {
  if (o.data.empty())
    return nullptr;
  const std::string format = dataFormat(o);
  train::TokenFormat tokenFormat;
  try {
    tokenFormat = train::parseTokenFormat(format);
  } catch (const train::DataError &e) { // a bad --data-format: the message names the flag
    throw UsageError("--data-format: " + std::string(e.what()));
  }
  auto data = std::make_unique<train::TokenBatcher>(
      train::TokenFile::open(o.data, tokenFormat, plan.model.vocabSize), batch, seqLen, o.data);
  if (print)
    printData(o, *data);
  return data;
}

std::string absolutePath(const std::string &path) {
  std::error_code ec;
  const std::filesystem::path p = std::filesystem::weakly_canonical(path, ec);
  return ec ? path : p.string();
}

// The options that determine a run's bits (docs/training.md, "Run config"), as the JSON object
// every checkpoint records (__metadata__.config) and --resume compares (RunConfig.h). Where outputs
// go, how many steps this invocation runs and how the job is launched are not recorded, so a
// resumed run, an mpi run and a local run write byte-identical checkpoints.
std::string runOptionsJson(const Options &o, const Plan &plan, const train::TrainOptions &t,
                           int64_t batch, int64_t seqLen, const train::TokenBatcher *data) {
  nlohmann::json j = nlohmann::json::object();
  std::ifstream in(plan.path, std::ios::binary);
  const std::string text((std::istreambuf_iterator<char>(in)), {});
  j["plan"] = absolutePath(plan.path);
  j["plan-identity"] = "crc32 " + train::crc32Hex(text.data(), text.size()) + ", " +
                       std::to_string(text.size()) + " bytes";
  j["batch"] = batch;
  j["seq-len"] = seqLen;
  j["micro-batches"] = o.microBatches;
  if (data) {
    j["data"] = absolutePath(o.data);
    j["data-format"] = dataFormat(o);
    j["data-tokens"] = data->size();
  } else if (!o.input.empty()) {
    j["input"] = absolutePath(o.input);
  } else {
    j["seed"] = o.seed;
  }
  if (!o.targets.empty())
    j["targets"] = absolutePath(o.targets);
  j["optimizer"] = o.optimizer;
  j["lr"] = t.optimizer.lr;
  if (t.optimizer.kind == train::OptimizerKind::AdamW) {
    j["weight-decay"] = t.optimizer.weightDecay;
    j["beta1"] = t.optimizer.beta1;
    j["beta2"] = t.optimizer.beta2;
    j["eps"] = t.optimizer.eps;
  }
  j["clip-grad"] = o.clipGrad;
  j["warmup-steps"] = o.warmupSteps;
  j["total-steps"] = o.totalSteps;
  j["lr-min"] = o.lrMin;
  j["aux-loss-coef"] = o.auxLossCoef;
  j["capacity-factor"] = o.capacityFactor;
  j["router-bias-update-rate"] = o.routerBiasRate;
  return j.dump();
}

train::LoopOptions loopOptions(const Options &o, const Plan &plan, const train::TrainOptions &t,
                               int64_t batch, int64_t seqLen, const train::TokenBatcher *data,
                               bool report) {
  train::LoopOptions lo;
  lo.steps = o.steps;
  lo.lossLog = o.lossLog;
  lo.checkpoint = o.checkpoint;
  lo.checkpointDir = o.checkpointDir;
  lo.keepCheckpoints = o.keepCheckpoints;
  lo.checkpointEvery = o.checkpointEvery;
  lo.resume = o.resumeFile;
  lo.dataName = o.data;
  lo.output = train::outputLevel();
  lo.progress = true;
  lo.config = runOptionsJson(o, plan, t, batch, seqLen, data);
  const std::string config = lo.config, resumed = o.resumeFile;
  lo.checkResumed = [config, resumed, report](const train::CheckpointInfo &info) {
    checkResumedConfig(resumed, info.config, config, report ? &std::cerr : nullptr);
  };
  return lo;
}

int runLocalTrain(const Options &o) {
  const Plan plan = loadPlan(o.plan);
  checkSaveDirFiles(o, plan);
  checkHfNaming(o.hf, plan);
  int64_t batch = 0, seqLen = 0;
  const std::vector<int64_t> ids = loadIds(o, plan, batch, seqLen);
  const std::vector<int64_t> targets = loadTargets(o, ids, batch, seqLen);
  checkMicroBatches(o, batch);
  train::TrainOptions t = trainOptions(o);
  OpProfile profile(plan.placement.worldSize);
  if (!o.opTimesOut.empty() || !o.trace.empty())
    t.profile = &profile;
  const std::unique_ptr<train::HfWeights> hf =
      openInitWeights(o.hf, plan, train::quiet() ? nullptr : &std::cout);
  if (hf)
    t.weights = hf->source();
  train::Trainer trainer(plan, t);
  // The token file is opened and checked before the header lines (issue 17: a too-short or
  // unrecognised --data file used to fail after them).
  std::unique_ptr<train::TokenBatcher> data =
      o.loop() ? loadTokenData(o, plan, batch, seqLen, false) : nullptr;
  // --resume is loaded and checked before the header lines too: a bad checkpoint fails alone.
  train::LoopOptions lo;
  train::CheckpointInfo resumed;
  if (o.loop()) {
    lo = loopOptions(o, plan, t, batch, seqLen, data.get(), true);
    if (!lo.resume.empty()) {
      resumed = train::resumeTraining(plan, trainer, data.get(), lo);
      lo.resumed = &resumed;
    }
  }
  printTrainHeader(o, plan, t, batch, seqLen);
  if (data)
    printData(o, *data);
  const auto exportHf = [&] {
    exportHfIfAsked(
        o.hf, plan, [&](int index) -> const Tensor & { return trainer.weight(index); },
        train::report()); // --quiet: no export line
  };
  if (o.failRank >= 0)
    throw ExecError("--fail-rank needs --comm mpi");
  // After the run: the op medians over every step, the trace of the last step.
  const auto writeProfile = [&] {
    if (!o.opTimesOut.empty()) {
      writeOpTimes(plan, profile, o.opTimesOut);
      train::report() << "measured op times (medians over " << profile.step << " steps) written to "
                      << o.opTimesOut << "\n";
    }
    if (!o.trace.empty()) {
      writeExecutionTrace(plan, profile, profile.step - 1, o.trace);
      train::report() << "Chrome trace of step " << profile.step << " written to " << o.trace
                      << "\n";
    }
  };
  if (o.loop()) {
    train::runTrainingLoop(plan, trainer, data.get(), ids, targets, batch, seqLen, lo, std::cout);
    saveOutputs(o, trainer, true);
    exportHf();
    writeProfile();
    return 0;
  }
  train::StepProgress progress(0, o.steps, std::cout);
  for (int64_t s = 0; s < o.steps; ++s) {
    const train::StepResult r = trainer.step(ids, targets, batch, seqLen);
    printStep(r, o.steps, progress);
    train::checkFinite(r);
  }
  saveOutputs(o, trainer, true);
  exportHf();
  writeProfile();
  return 0;
}

// The heartbeat under mpi (Heartbeat.h, MpiComm.h): half the receive deadline, as on the local
// comm.
std::chrono::milliseconds heartbeatDeadline(const Options &o) {
  return std::chrono::seconds(o.timeoutSeconds) / 2;
}

// One process per rank on the CPU (--comm mpi): under mpirun or srun CommT is MpiComm, under a
// torchrun-style launch TcpComm (LaunchEnv.h); the rank's work is the same.
template <typename CommT> int runProcessRank(const Options &o, std::unique_ptr<CommT> comm) {
  const int me = comm->rank();
  // This process's own rank stops beating during a step (a worker stuck outside any receive): it
  // names itself and ends the job. DISAGMOE_FAULT_INJECT (tests) injects such faults.
  const FaultInjection fault = FaultInjection::fromEnvironment();
  const auto watched = [&] {
    return std::make_unique<RankWatch>(*comm, heartbeatDeadline(o), fault,
                                       [&](const std::string &why) {
                                         std::cerr << "disagmoe-run: " + why + "\n" << std::flush;
                                         comm->abortJob(why);
                                       });
  };
  try {
    const Plan plan = loadProcessPlan(o, comm->worldSize(), nullptr);
    int64_t batch = 0, seqLen = 0;
    const std::vector<int64_t> ids = loadIds(o, plan, batch, seqLen);
    const std::chrono::milliseconds timeout = std::chrono::seconds(o.timeoutSeconds);
    if (o.train) {
      const std::vector<int64_t> targets = loadTargets(o, ids, batch, seqLen);
      checkMicroBatches(o, batch);
      train::TrainOptions t = trainOptions(o);
      t.onlyRank = me;
      const std::unique_ptr<train::HfWeights> hf =
          openInitWeights(o.hf, plan, me == 0 && !train::quiet() ? &std::cout : nullptr);
      if (hf)
        t.weights = hf->source();
      train::Trainer trainer(plan, t);
      // Before the header lines: a refused --data file fails first (issue 17).
      std::unique_ptr<train::TokenBatcher> data =
          o.loop() ? loadTokenData(o, plan, batch, seqLen, false) : nullptr;
      // Every rank loads --resume before the header lines (a bad checkpoint fails alone).
      train::LoopOptions lo;
      train::CheckpointInfo resumed;
      if (o.loop()) {
        lo = loopOptions(o, plan, t, batch, seqLen, data.get(), me == 0);
        if (!lo.resume.empty()) {
          resumed = train::resumeTraining(plan, trainer, data.get(), lo);
          lo.resumed = &resumed;
        }
      }
      if (me == 0) {
        printTrainHeader(o, plan, t, batch, seqLen);
        if (data)
          printData(o, *data);
      }
      maybeFail(o, me);
      const auto step = [&](const std::vector<int64_t> &i, const std::vector<int64_t> &t) {
        const auto watch = watched();
        return trainer.stepRank(watch->comm(), i, t, batch, seqLen);
      };
      if (o.loop()) {
        // Every process reads the token file and the checkpoint; rank 0 prints, logs and writes the
        // checkpoint gathered from every rank (Checkpoint.h), on the tag after the step's last ones
        // (TrainStep.cpp: the bias load tags end at 9 L + W + 1).
        const int checkpointTag = static_cast<int>(
            9 * plan.model.numLayers + static_cast<int64_t>(plan.model.weights.size()) + 2);
        train::LoopRuntime runtime;
        runtime.step = step;
        runtime.saveCheckpoint = [&](const std::string &path, const train::CheckpointInfo &info) {
          train::saveCheckpointGathered(path, plan, trainer, info, *comm, checkpointTag, timeout);
        };
        runtime.report = me == 0;
        runtime.writesCheckpoints = me == 0;
        train::runTrainingLoop(plan, trainer, data.get(), ids, targets, batch, seqLen, lo, runtime,
                               std::cout);
      } else {
        train::StepProgress progress(0, o.steps, std::cout, me == 0);
        for (int64_t s = 0; s < o.steps; ++s) {
          const train::StepResult r = step(ids, targets);
          if (me == 0)
            printStep(r, o.steps, progress);
          train::checkFinite(
              r); // the loss and the norm are global: every rank stops at the same step
        }
      }
      saveOutputs(o, trainer, me == 0);
      if (!o.hf.exportDir.empty()) {
        // Rank 0 writes the export from every rank's weights, gathered on the tag after the
        // checkpoint's.
        const int exportTag = static_cast<int>(9 * plan.model.numLayers +
                                               static_cast<int64_t>(plan.model.weights.size()) + 3);
        const std::vector<Tensor> all =
            train::gatherWeights(plan, trainer, *comm, exportTag, timeout);
        if (me == 0)
          exportHfIfAsked(
              o.hf, plan, [&](int index) -> const Tensor & { return all[index]; }, train::report());
      }
    } else {
      validateInput(plan, ids, batch, seqLen); // what Executor::run checks
      const std::unique_ptr<train::HfWeights> hf =
          openInitWeights(o.hf, plan, me == 0 && !train::quiet() ? &std::cout : nullptr);
      const RankWeights weights(plan, me, hf ? hf->source() : WeightSource());
      maybeFail(o, me);
      const auto start = std::chrono::steady_clock::now();
      RankResult mine;
      {
        const auto watch = watched();
        mine = runRank(plan, weights, watch->comm(), ids, batch, seqLen, timeout);
      }
      gatherForward(o, plan, *comm, std::move(mine), batch, seqLen, start, timeout);
    }
    std::cout << std::flush;
    comm->finish();
    return 0;
  } catch (const CommAborted &e) {
    abortAfterPeer(*comm, e);
  } catch (const std::exception &e) {
    abortAfterFailure(*comm, me, e);
  }
}

// A torchrun-style launch: the plan's rank count is checked against WORLD_SIZE before the
// rendezvous, so a wrong launch is refused at once instead of waiting for ranks never started.
// `joined` is set once the rendezvous begins: a failure before it is reported through it
// (distributedMain, tcp::reportFailure).
int runStoreLaunch(const Options &o, const StoreLaunch &launch, bool &joined) {
  loadProcessPlan(o, launch.worldSize, &launch);
  joined = true;
  return runProcessRank(o, TcpComm::start(launch, std::chrono::seconds(o.timeoutSeconds)));
}

#ifdef DISAGMOE_HAVE_MPI
int runMpi(const Options &o) {
  // A peer process whose heartbeat notes stop: the comm thread reports it, then ends the job.
  return runProcessRank(o, MpiComm::start(heartbeatDeadline(o), [](const std::string &why) {
                          std::cerr << "disagmoe-run: " + why + "\n"
                                    << std::flush; // one write: processes share the terminal
                        }));
}
#endif

#ifdef DISAGMOE_HAVE_NCCL
// The rank sets of the training step's DP all-reduce (TrainStep.cpp, allReduce): the holders of
// each replicated weight, in one order on every rank (NcclComm::connect splits one communicator
// each).
std::vector<std::vector<int>> reduceGroups(const Plan &plan) {
  std::set<std::vector<int>> sets;
  for (const WeightSpec &w : plan.model.weights)
    if (w.ranks.size() > 1)
      sets.insert(w.ranks);
  return {sets.begin(), sets.end()};
}

// --comm nccl: one process and one CUDA device per rank (NcclComm.h); the rank's work is the one
// of --comm mpi, and a failing rank ends the job the same way.
// `store`: a torchrun-style launch (the control plane over TCP; the plan checked against
// WORLD_SIZE before the rendezvous, as runStoreLaunch does), else mpirun's (MPI).
int runNccl(const Options &o, const StoreLaunch *store, bool &joined) {
  if (o.loop())
    throw UsageError("--data, --loss-log, --save-checkpoint, --checkpoint-dir and --resume do not "
                     "run on --comm nccl in this version");
  if (store)
    loadProcessPlan(o, store->worldSize, store);
  joined = true;
  std::unique_ptr<NcclComm> comm =
      store ? NcclComm::start(*store, std::chrono::seconds(o.timeoutSeconds)) : NcclComm::start();
  const int me = comm->rank();
  try {
    const Plan plan = loadProcessPlan(o, comm->worldSize(), store);
    const std::chrono::milliseconds timeout = std::chrono::seconds(o.timeoutSeconds);
    comm->connect(reduceGroups(plan), timeout);
    if (me == 0)
      std::cout << "nccl: " << comm->worldSize()
                << " ranks, one CUDA device each (rank 0 on device " << comm->device() << ")\n";
    int64_t batch = 0, seqLen = 0;
    const std::vector<int64_t> ids = loadIds(o, plan, batch, seqLen);
    if (o.train) {
      const std::vector<int64_t> targets = loadTargets(o, ids, batch, seqLen);
      checkMicroBatches(o, batch);
      train::TrainOptions t = trainOptions(o);
      t.onlyRank = me;
      const std::unique_ptr<train::HfWeights> hf =
          openInitWeights(o.hf, plan, me == 0 && !train::quiet() ? &std::cout : nullptr);
      if (hf)
        t.weights = hf->source();
      train::Trainer trainer(plan, t);
      if (me == 0)
        printTrainHeader(o, plan, t, batch, seqLen);
      maybeFail(o, me);
      train::StepProgress progress(0, o.steps, std::cout, me == 0);
      for (int64_t s = 0; s < o.steps; ++s) {
        const train::StepResult r = trainer.stepRank(*comm, ids, targets, batch, seqLen);
        if (me == 0)
          printStep(r, o.steps, progress);
        train::checkFinite(r);
      }
      saveOutputs(o, trainer, me == 0);
    } else {
      validateInput(plan, ids, batch, seqLen); // what Executor::run checks
      const std::unique_ptr<train::HfWeights> hf =
          openInitWeights(o.hf, plan, me == 0 && !train::quiet() ? &std::cout : nullptr);
      const RankWeights weights(plan, me, hf ? hf->source() : WeightSource());
      maybeFail(o, me);
      const auto start = std::chrono::steady_clock::now();
      RankResult mine = runRank(plan, weights, *comm, ids, batch, seqLen, timeout);
      gatherForward(o, plan, *comm, std::move(mine), batch, seqLen, start, timeout);
    }
    std::cout << std::flush;
    comm->finish();
    return 0;
  } catch (const CommAborted &e) {
    abortAfterPeer(*comm, e);
  } catch (const std::exception &e) {
    abortAfterFailure(*comm, me, e);
  }
}
#endif

} // namespace

bool handlesArgs(int argc, char **argv) {
  for (int i = 1; i < argc; ++i)
    if (std::string(argv[i]) == "--help" || std::string(argv[i]) == "-h")
      return false; // disagmoe-run's help
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--train" || a == "--comm=mpi" || a == "--comm=nccl" ||
        (a == "--comm" && i + 1 < argc &&
         (std::string(argv[i + 1]) == "mpi" || std::string(argv[i + 1]) == "nccl")))
      return true;
  }
  return false;
}

const char *distributedUsage() {
  return "       disagmoe-run PLAN_DIR_OR_JSON --train [--config RUN.yaml|RUN.json] [--targets "
         "targets.npy]\n"
         "                    [--optimizer sgd|adamw]\n"
         "                    [--lr X] [--weight-decay X] [--beta1 X] [--beta2 X] [--eps X]\n"
         "                    [--micro-batches M] [--steps N] [--save-grads DIR] [--save-weights "
         "DIR]\n"
         "                    [--clip-grad NORM] [--warmup-steps W] [--total-steps T] [--lr-min "
         "X]\n"
         "                    [--aux-loss-coef ALPHA] [--capacity-factor C] [--op-times-out FILE] "
         "[--trace FILE]\n"
         "                    [--router-bias-update-rate U]\n"
         "                    [--debug-nan-fill] [--data FILE --data-format F] [--loss-log FILE]\n"
         "                    [--save-checkpoint FILE | --checkpoint-dir DIR [--keep-checkpoints "
         "N]]\n"
         "                    [--checkpoint-every N] [--resume FILE|DIR]\n"
         "                    [--init-weights HF.safetensors|index.json|DIR] [--export-hf DIR\n"
         "                    [--export-dtype fp32|bf16] [--export-shard-bytes N]]\n"
         "                    [--input ids.npy | --batch B --seq-len S --seed N] [--comm "
         "local|mpi]\n"
         "       mpirun -np WORLD disagmoe-run PLAN_DIR_OR_JSON --comm mpi [--train ...] [--output "
         "logits.npy]\n"
         "       mpirun -np WORLD disagmoe-run PLAN_DIR_OR_JSON --comm nccl [--train ...] "
         "[--output logits.npy]\n"
         "         (one CUDA device per rank: local rank mod device count; messages over NCCL, "
         "announced over\n"
         "         MPI, or over TCP when started torchrun-style; the DP all-reduce is "
         "ncclAllReduce, so results\n"
         "         match --comm local to rounding only; docs/deploy.md)\n"
         "\n"
         "--train runs training steps (docs/training.md): forward, causal LM loss (mean "
         "cross-entropy over\n"
         "the target tokens; targets default to the next token within each sequence; targets.npy "
         "is int64\n"
         "[batch, seq], negative for none), backward through the exchanges in reverse, all-reduce "
         "of the\n"
         "attention groups' gradients in ascending rank order, then one optimizer step on fp32 "
         "master\n"
         "weights: sgd (default; lr 0.1) or adamw (lr 1e-3, betas 0.9/0.999, eps 1e-8, weight "
         "decay 0.01\n"
         "unless given). --micro-batches splits the batch's sequences (gradients accumulate, "
         "scaled by the\n"
         "global target count). --save-grads/--save-weights write DIR/<key>.npy (embed, l0_q, "
         "l0_router,\n"
         "l0_expert3_w1, final_norm, head, ...) after the last step.\n"
         "--clip-grad clips the gradients to that global L2 norm over all ranks (torch's "
         "clip_grad_norm_);\n"
         "0 (the default) means no clipping.\n"
         "--aux-loss-coef ALPHA adds the Switch load-balancing loss ALPHA * E * sum_i f_i P_i per "
         "MoE layer\n"
         "(f_i: share of the top-k assignments, P_i: mean router probability); printed as 'aux "
         "loss', not\n"
         "in 'loss'. Every step also prints the per-expert load (top-k assignments per layer).\n"
         "--capacity-factor C caps each expert at ceil(C * tokens * k / E) assignments per "
         "micro-batch and\n"
         "layer (first choices in token order first, then second choices); the rest are dropped "
         "(zero expert\n"
         "output) and counted per layer in the load line. Default (and 0): dropless, no cap.\n"
         "--router-bias-update-rate U: DeepSeek-V3's auxiliary-loss-free balancing; each router "
         "ranks the\n"
         "experts by score + b (gates from the unbiased score) and after each step b_i += U * "
         "sign(mean\n"
         "load - load_i); --save-weights also writes l{l}_router_selection_bias.npy.\n"
         "--warmup-steps W / --total-steps T / --lr-min X: lr rises linearly over W steps "
         "(lr*s/W), then\n"
         "decays as a cosine to X at step T (T = 0: no decay) and stays there.\n"
         "--debug-nan-fill (or DISAGMOE_DEBUG_NAN_FILL=1, which also covers the forward run) fills "
         "every\n"
         "fresh activation and gradient buffer with NaN, so a read of an unwritten element shows "
         "as NaN.\n"
         "--data trains on a token file (format bytes, uint16, uint32, or megatron for PREFIX.bin "
         "+\n"
         "PREFIX.idx; --data-format is needed except for a .bin with its .idx beside it): each "
         "step takes\n"
         "batch windows of seq-len + 1 consecutive tokens, wrapping at the end (a 'data:' line "
         "says so).\n"
         "--steps N then counts to N in total (a resumed run continues to N). --loss-log writes "
         "one JSON\n"
         "line per step; --save-checkpoint writes a safetensors checkpoint (weights, AdamW "
         "moments, step,\n"
         "data position) atomically after the last step and every --checkpoint-every steps; "
         "--resume\n"
         "continues from one bit-identically (every tensor checked against its CRC-32 in the "
         "metadata;\n"
         "--checkpoint-dir DIR writes DIR/step-<N>.safetensors instead, then DIR/latest naming it "
         "(atomically),\n"
         "then deletes the step files beyond the newest --keep-checkpoints N; --resume DIR "
         "continues from\n"
         "what DIR/latest names;\n"
         "under --comm mpi rank 0 writes the checkpoint gathered from every rank, and prints and "
         "logs).\n"
         "In every --train run a NaN or Inf loss or gradient norm stops the run (exit 1)\n"
         "naming the step, before anything is saved.\n"
         "--config RUN.yaml|RUN.json gives options by their flag names without -- (plan: for the "
         "plan,\n"
         "train: true); a flag on the command line overrides the file. Checkpoints record the "
         "run's\n"
         "options; --resume refuses another plan, data, batch shape or schedule and warns on "
         "another lr.\n"
         "--comm mpi runs one rank per process under mpirun (rank from MPI; OMPI_COMM_WORLD_RANK,\n"
         "SLURM_PROCID or RANK must agree), or started torchrun-style without mpirun\n"
         "(RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT, LOCAL_RANK: the ranks meet at "
         "MASTER_ADDR:MASTER_PORT within\n"
         "--timeout and talk over TCP; docs/deploy.md); results are bit-identical to --comm "
         "local. A failing rank ends\n"
         "the job naming itself (--fail-rank R injects such a failure, for tests); a rank silent "
         "for\n"
         "--timeout / 2 (no message operation while not waiting, or no heartbeat note from its "
         "process)\n"
         "is named and the job ends.\n"
         "--op-times-out FILE (--comm local) writes the measured per-op medians (seconds) in the "
         "format\n"
         "--backend sim --op-times reads; --trace FILE a Chrome trace of the last step (one track "
         "per rank).\n";
}

namespace {

// The torchrun-style launch of a command line that failed to parse: its --comm is read from argv
// (mpi or nccl), the launch from the environment; none when either is missing or malformed.
std::optional<StoreLaunch> launchOfUnparsed(int argc, char **argv) {
  bool perProcess = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const std::string next = i + 1 < argc ? argv[i + 1] : "";
    perProcess = perProcess || a == "--comm=mpi" || a == "--comm=nccl" ||
                 (a == "--comm" && (next == "mpi" || next == "nccl"));
  }
  if (!perProcess)
    return std::nullopt;
  try {
    return storeLaunchFromEnvironment();
  } catch (const std::exception &) {
    return std::nullopt; // the bad variable is not this failure
  }
}

} // namespace

int distributedMain(int argc, char **argv) {
  // A rank of a torchrun-style launch that fails before the rendezvous (a refused option, a bad
  // plan or input) still takes part in it, so that its peers end at once naming it and its reason
  // instead of waiting for it until --timeout (TcpRendezvous.h, reportFailure).
  std::optional<StoreLaunch> store;
  bool parsed = false, joined = false;
  int64_t timeoutSeconds = Options().timeoutSeconds;
  const auto tellPeers = [&](const std::string &why) {
    if (!parsed)
      store = launchOfUnparsed(argc, argv);
    // At most 10 s: the others start with this rank, and a rank run alone should not linger.
    if (store && !joined)
      tcp::reportFailure(*store, why,
                         tcp::Clock::now() +
                             std::chrono::seconds(std::min<int64_t>(timeoutSeconds, 10)));
  };
  try {
    Options o = parseArgs(argc, argv);
    if (parseOnly())
      return 0;
    parsed = true;
    timeoutSeconds = o.timeoutSeconds;
    // RANK/WORLD_SIZE/MASTER_ADDR without mpirun (torchrun, or srun with MASTER_ADDR): checked
    // before any output; a bad value is refused naming its variable.
    store = o.comm == "mpi" || o.comm == "nccl" ? storeLaunchFromEnvironment() : std::nullopt;
    checkOutputs(o);
    checkInputs(o);
#ifdef DISAGMOE_HAVE_NCCL
    if (store && o.comm == "nccl")
      return runNccl(o, &*store, joined);
#endif
    if (store)
      return runStoreLaunch(o, *store, joined);
#ifdef DISAGMOE_HAVE_MPI
    if (o.comm == "mpi") {
      if (rankFromEnvironment() < 0)
        throw UsageError("comm \"mpi\" runs one process per rank: launch it as mpirun -np WORLD "
                         "disagmoe-run PLAN "
                         "--comm mpi (none of OMPI_COMM_WORLD_RANK, SLURM_PROCID, RANK is set)");
      return runMpi(o);
    }
#endif
#ifdef DISAGMOE_HAVE_NCCL
    if (o.comm == "nccl") {
      if (rankFromEnvironment() < 0)
        throw UsageError("comm \"nccl\" runs one process per rank and CUDA device: launch it as "
                         "mpirun -np WORLD "
                         "disagmoe-run PLAN --comm nccl (none of OMPI_COMM_WORLD_RANK, "
                         "SLURM_PROCID, RANK is set)");
      return runNccl(o, nullptr, joined);
    }
#endif
    return runLocalTrain(o);
  } catch (
      const std::bad_alloc &) { // the shape checks passed, yet a buffer of the step did not fit
    const std::string why =
        "out of host memory running the plan (a buffer of the token ids, weights, gradients, "
        "exchanges or activations could not be allocated): try a smaller --batch/--seq-len";
    std::cerr << "disagmoe-run: " << why << "\n" << std::flush;
    tellPeers(why);
  } catch (const LaunchEnvError &e) { // no launch to tell
    std::cerr << "disagmoe-run: " << e.what() << "\n";
  } catch (const std::exception &e) {
    const std::string why = withConfigOrigin(e.what());
    std::cerr << "disagmoe-run: " << why << "\n" << std::flush;
    tellPeers(why);
  }
  return 1;
}

} // namespace disagmoe::tools
