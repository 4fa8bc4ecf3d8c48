// How much disagmoe-run prints (issue 17), and the progress line of training steps.
//
// OutputLevel: Summary (the default) prints a few lines per run: the plan, placement, memory and
// exchange totals per side, the result; one loss line per training step and one expert-load
// summary after the last step. Verbose (--verbose) adds the full tables: placement per layer,
// memory per rank, exchange bytes per layer and rank pair, the all-to-all comparison per layer,
// and the "step N expert load: l0 [...] ..." line of every step. Quiet (--quiet) prints errors and
// the final result line only.
//
// StepProgress: "step 3/10 (30%), 1.2 s elapsed, eta 2.8 s". When stderr is a terminal it is
// redrawn in place there with '\r' (and cleared before any other output line); otherwise it is a
// plain "progress: ..." line on the report stream every tenth of the run, never after the last
// step, so logs and tests see whole lines. Off under Quiet. Header-only (DisagmoeRuntime's
// TrainingLoop.cpp and disagmoe-run's tools use it).
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <iostream>
#include <ostream>
#include <string>
#include <unistd.h>

namespace disagmoe::train {

enum class OutputLevel { Quiet, Summary, Verbose };

/// The process-wide level disagmoe-run's --quiet / --verbose set (Summary by default).
inline OutputLevel &outputLevel() {
  static OutputLevel level = OutputLevel::Summary;
  return level;
}
inline bool verbose() { return outputLevel() == OutputLevel::Verbose; }
inline bool quiet() { return outputLevel() == OutputLevel::Quiet; }

/// std::cout, or a stream that drops everything under --quiet.
inline std::ostream &report() {
  static std::ostream nowhere(nullptr);
  return quiet() ? nowhere : std::cout;
}

class StepProgress {
public:
  /// Steps first+1 .. last are about to run; `plain` takes the non-terminal lines.
  StepProgress(int64_t first, int64_t last, std::ostream &plain, bool enabled = true)
      : first_(first), last_(last), plain_(plain), enabled_(enabled && !quiet() && last > first),
        tty_(isatty(STDERR_FILENO) == 1), start_(std::chrono::steady_clock::now()) {}
  ~StepProgress() { clear(); }

  /// "step 3/10 (30%), 1.2 s elapsed, eta 2.8 s" after `step` of the run finished.
  static std::string text(int64_t step, int64_t first, int64_t last, double elapsed) {
    const int64_t done = step - first, total = last - first;
    const double eta =
        done > 0 ? elapsed / static_cast<double>(done) * static_cast<double>(last - step) : 0.0;
    char line[160];
    std::snprintf(line, sizeof line, "step %lld/%lld (%lld%%), %.1f s elapsed, eta %.1f s",
                  static_cast<long long>(step), static_cast<long long>(last),
                  static_cast<long long>(total > 0 ? 100 * done / total : 100), elapsed, eta);
    return line;
  }

  /// After step `step` finished (and its report lines were printed).
  void update(int64_t step) {
    if (!enabled_)
      return;
    const double elapsed =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    if (tty_) {
      std::fprintf(stderr, "\r%s\033[K", text(step, first_, last_, elapsed).c_str());
      std::fflush(stderr);
      drawn_ = step < last_;
      if (!drawn_)
        clear(true);
      return;
    }
    const int64_t total = last_ - first_, every = total >= 10 ? total / 10 : 1;
    if (step < last_ && (step - first_) % every == 0)
      plain_ << "progress: " << text(step, first_, last_, elapsed) << "\n" << std::flush;
  }

  /// Erases the terminal line before other output (nothing on a non-terminal).
  void clear(bool force = false) {
    if (tty_ && (drawn_ || force)) {
      std::fputs("\r\033[K", stderr);
      std::fflush(stderr);
      drawn_ = false;
    }
  }

private:
  int64_t first_, last_;
  std::ostream &plain_;
  bool enabled_, tty_, drawn_ = false;
  std::chrono::steady_clock::time_point start_;
};

} // namespace disagmoe::train
