// disagmoe-run --train --data loop: steps, progress, loss log, checkpoints (TrainingLoop.h).
#include "runtime/train/TrainingLoop.h"
#include "runtime/io/FileKind.h"

#include "runtime/train/Checkpoint.h"
#include "runtime/train/CheckpointDir.h"

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>

namespace disagmoe::train {

void checkFinite(const StepResult &r) {
  if (std::isfinite(r.loss) && std::isfinite(r.gradNorm))
    return;
  const auto name = [](double v) { return std::isnan(v) ? "NaN" : "Inf"; };
  char why[200];
  if (!std::isfinite(r.loss))
    std::snprintf(why, sizeof why, "step %lld: loss is %s (gradient norm %g, lr %g)",
                  static_cast<long long>(r.step), name(r.loss), r.gradNorm, r.lr);
  else
    std::snprintf(why, sizeof why, "step %lld: gradient norm is %s (loss %g, lr %g)",
                  static_cast<long long>(r.step), name(r.gradNorm), r.loss, r.lr);
  const std::string where =
      r.firstNonFinite.layer >= 0
          ? "; the first non-finite value appeared in the output of " + r.firstNonFinite.where
          : std::string();
  throw DivergedError(why + where + "; stopping without writing a checkpoint or weights");
}

CheckpointInfo resumeTraining(const Plan &plan, Trainer &trainer, TokenBatcher *data,
                              const LoopOptions &o) {
  CheckpointInfo info;
  try {
    info = loadCheckpoint(o.resume, plan, trainer);
  } catch (const CheckpointError &e) {
    // CheckpointError reads "FILE: what" (the safetensors reader's, too): name the flag first.
    throw std::invalid_argument("--resume " + std::string(e.what()));
  }
  if (o.checkResumed)
    o.checkResumed(info);
  if (info.step >= o.steps)
    throw std::invalid_argument(
        "--resume " + o.resume + " is at step " + std::to_string(info.step) + " and --steps " +
        std::to_string(o.steps) + " counts the total: nothing left to run (give --steps above " +
        std::to_string(info.step) + ")");
  if (data)
    data->setPosition(info.dataPosition);
  return info;
}

std::string stepLine(const StepResult &r, int64_t steps, int64_t tokens, const TokenBatcher *data) {
  const char *clipped = r.clipCoef < 1 ? " (clipped)" : "";
  char line[400], aux[64] = "";
  if (!data) {
    if (r.auxLoss != 0)
      std::snprintf(aux, sizeof aux, ", aux loss %.9g", r.auxLoss);
    std::snprintf(line, sizeof line,
                  "step %lld: loss %.7f over %lld target tokens (%.4f s), lr %.6g, grad norm "
                  "%.6g%s%s",
                  static_cast<long long>(r.step), r.loss, static_cast<long long>(r.targetTokens),
                  r.wallSeconds, r.lr, r.gradNorm, clipped, aux);
    return line;
  }
  if (r.auxLoss != 0)
    std::snprintf(aux, sizeof aux, " | aux loss %.9g", r.auxLoss);
  const double tokensPerSecond =
      r.wallSeconds > 0 ? static_cast<double>(tokens) / r.wallSeconds : 0.0;
  std::snprintf(line, sizeof line,
                "step %lld/%lld | loss %.7f | %.0f tokens/s | lr %.6g | grad norm %.6g%s | data "
                "position %lld%s",
                static_cast<long long>(r.step), static_cast<long long>(steps), r.loss,
                tokensPerSecond, r.lr, r.gradNorm, clipped,
                static_cast<long long>(data->position()), aux);
  return line;
}

void runTrainingLoop(const Plan &plan, Trainer &trainer, TokenBatcher *data,
                     std::vector<int64_t> ids, std::vector<int64_t> targets, int64_t batch,
                     int64_t seqLen, const LoopOptions &o, std::ostream &out) {
  LoopRuntime local;
  local.step = [&](const std::vector<int64_t> &i, const std::vector<int64_t> &t) {
    return trainer.step(i, t, batch, seqLen);
  };
  local.saveCheckpoint = [&](const std::string &path, const CheckpointInfo &info) {
    saveCheckpoint(path, plan, trainer, info);
  };
  runTrainingLoop(plan, trainer, data, std::move(ids), std::move(targets), batch, seqLen, o, local,
                  out);
}

void runTrainingLoop(const Plan &plan, Trainer &trainer, TokenBatcher *data,
                     std::vector<int64_t> ids, std::vector<int64_t> targets, int64_t batch,
                     int64_t seqLen, const LoopOptions &o, const LoopRuntime &runtime,
                     std::ostream &realOut) {
  // Only the reporting process prints; the others run the same loop silently.
  std::ostream nowhere(nullptr);
  std::ostream &out = runtime.report ? realOut : nowhere;
  std::ostream &out_ = out;
  const bool quietRun = o.output == OutputLevel::Quiet;
  if (!o.resume.empty()) {
    const CheckpointInfo info = o.resumed ? *o.resumed : resumeTraining(plan, trainer, data, o);
    if (o.output != OutputLevel::Quiet)
      out << "resumed from " << o.resume << " at step " << info.step << ", data position "
          << info.dataPosition << "\n";
  }
  StepProgress progress(trainer.steps(), o.steps, out, o.progress && runtime.report && !quietRun);
  std::ofstream log;
  if (!o.lossLog.empty() && runtime.report) {
    // Opening a FIFO for writing blocks until a reader appears, and a symlink would be written
    // through: refuse any existing non-regular file before the open.
    if (const std::string why = outputRefusal(o.lossLog); !why.empty())
      throw DataError(o.lossLog + ": " + why);
    log.open(o.lossLog, o.resume.empty() ? std::ios::trunc : std::ios::app);
    if (!log)
      throw DataError(o.lossLog + ": cannot open the loss log for writing");
  }
  const bool saves = !o.checkpoint.empty() || !o.checkpointDir.empty();
  if (!o.checkpointDir.empty() && runtime.writesCheckpoints) {
    std::error_code ec;
    if (const std::string why = outputDirRefusal(o.checkpointDir); !why.empty())
      throw CheckpointError(o.checkpointDir + ": " + why);
    std::filesystem::create_directory(o.checkpointDir, ec);
    if (ec)
      throw CheckpointError(o.checkpointDir +
                            ": cannot create the checkpoint directory: " + ec.message());
  }
  const auto checkpoint = [&] {
    CheckpointInfo info;
    info.step = trainer.steps();
    info.dataPosition = data ? data->position() : 0;
    info.data = o.dataName;
    info.config = o.config;
    const std::string name = checkpointFileName(info.step);
    const std::string path = o.checkpointDir.empty()
                                 ? o.checkpoint
                                 : (std::filesystem::path(o.checkpointDir) / name).string();
    runtime.saveCheckpoint(path, info);
    progress.clear();
    std::ostream &out = o.output == OutputLevel::Quiet ? nowhere : out_;
    out << "checkpoint at step " << info.step << " written to " << path;
    if (!o.checkpointDir.empty() && runtime.writesCheckpoints) {
      // Only once the file is complete: `latest` names it, then older files go.
      writeLatest(o.checkpointDir, name);
      const std::vector<std::string> removed =
          pruneCheckpoints(o.checkpointDir, o.keepCheckpoints, info.step);
      if (!removed.empty()) {
        out << "; removed";
        for (const std::string &r : removed)
          out << " " << r;
        out << " (keeping the newest " << o.keepCheckpoints << ")";
      }
    }
    out << "\n";
  };
  while (trainer.steps() < o.steps) {
    if (data && data->next(ids, targets) && !quietRun)
      progress.clear(), out << "data: end of " << o.dataName << " reached after " << data->size()
                            << " tokens; wrapping to position 0 "
                            << "(epoch " << data->epoch() << ")\n";
    const StepResult r = runtime.step(ids, targets);
    checkFinite(r);
    const double tokensPerSecond =
        r.wallSeconds > 0 ? static_cast<double>(batch * seqLen) / r.wallSeconds : 0.0;
    const int64_t position = data ? data->position() : 0;
    progress.clear();
    if (!quietRun || r.step == o.steps)
      out << stepLine(r, o.steps, batch * seqLen, data) << "\n";
    char line[400];
    if (o.output == OutputLevel::Verbose)
      out << expertLoadLine(r);
    else if (o.output == OutputLevel::Summary && r.step == o.steps)
      out << expertLoadSummary(r);
    out << std::flush;
    progress.update(r.step);
    if (log.is_open()) {
      std::snprintf(line, sizeof line,
                    "{\"step\": %lld, \"loss\": %.9g, \"lr\": %.9g, \"grad_norm\": %.9g, "
                    "\"clip_coef\": %.9g, "
                    "\"target_tokens\": %lld, \"tokens_per_s\": %.1f, \"seconds\": %.6f, "
                    "\"data_position\": %lld}\n",
                    static_cast<long long>(r.step), r.loss, r.lr, r.gradNorm, r.clipCoef,
                    static_cast<long long>(r.targetTokens), tokensPerSecond, r.wallSeconds,
                    static_cast<long long>(position));
      std::string entry(line);
      // Appended fields: the aux loss and the per-expert load (StepResult).
      entry.pop_back(); // "}\n"
      entry.pop_back();
      char aux[64];
      std::snprintf(aux, sizeof aux, ", \"aux_loss\": %.9g", r.auxLoss);
      log << entry << aux << ", \"expert_load\": " << expertLoadJson(r)
          << ", \"dropped\": " << droppedJson(r) << "}\n"
          << std::flush;
    }
    if (saves && o.checkpointEvery > 0 && r.step % o.checkpointEvery == 0 && r.step < o.steps)
      checkpoint();
  }
  if (saves)
    checkpoint();
}

} // namespace disagmoe::train
