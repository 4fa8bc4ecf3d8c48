// disagmoe-run's run config (docs/training.md, "Run config"): `--config RUN.yaml` or
// `--config RUN.json` gives options by their flag names without "--" (every flag of RunFlags.h,
// and `plan` for the positional plan), a flag on the command line overriding the file; and the
// comparison of a resumed checkpoint's recorded options with the run's.
//
//   # RUN.yaml                       // RUN.json
//   plan: /tmp/demo                  {"plan": "/tmp/demo", "train": true,
//   train: true                       "data": "kjv.txt", "data-format": "bytes",
//   data: samples/data/kjv_ot.txt     "lr": 3e-3, "steps": 30}
//   data-format: bytes
//   lr: 3e-3
//   steps: 30
//
// Values: a string or number for a flag that takes one (given to the flag as written: YAML's text,
// JSON's number as nlohmann prints it), true or false for the switches train and debug-nan-fill.
// Relative paths are relative to the working directory, as on the command line.
// Errors: ConfigError, one line "FILE: <what>" naming the key.
#pragma once

#include <ostream>
#include <stdexcept>
#include <string>
#include <vector>

namespace disagmoe::tools {

class ConfigError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

/// `args` (argv[1..]) with every "--config FILE" / "--config=FILE" removed and FILE's options put
/// first, as "--key=value" (a switch as "--key" when true, nothing when false; `plan` as the
/// positional argument unless the command line gives one), so that the command line's own flags,
/// which every parser of disagmoe-run takes last-wins, override the file. Throws ConfigError
/// "FILE: unknown key \"lr_min\" (did you mean \"lr-min\"?)", "FILE: key \"lr\": expected a number
/// or a string, got a list", "FILE: key \"train\": expected true or false, got \"x\"", "FILE: key
/// \"config\": a run config cannot include another", "FILE: line L, column C: <YAML error>",
/// "FILE: expected a .yaml, .yml or .json file", "--config needs a value", or when FILE cannot be
/// read.
/// It also remembers, for withConfigOrigin, which file gave each flag the command line does not.
std::vector<std::string> expandRunConfig(const std::vector<std::string> &args);

/// A flag's error as the run config's: "--lr: expected ..." becomes "RUN.yaml: key \"lr\":
/// expected ..." when the last expandRunConfig took --lr from RUN.yaml (and the command line did
/// not give it); any other message is returned unchanged.
std::string withConfigOrigin(const std::string &message);

/// A resumed run against the options its checkpoint records (both JSON objects as text, keys
/// the flag names, plus "plan-identity"; `saved` "" for a checkpoint that records none, which is
/// then not compared). Refuses (ConfigError) a changed plan, data, batch shape or schedule:
///   "--resume CKPT: --batch is 2 here, 4 in the checkpoint (a resumed run keeps the checkpoint's
///   plan, data, batch shape and schedule; start a new run to change them)"
/// (keys plan-identity, data, data-format, data-tokens, input, targets, seed, batch, seq-len,
/// micro-batches, warmup-steps, total-steps, lr-min, optimizer); writes one warning line to `warn`
/// (when not null) for each changed optimizer setting, and continues:
///   "disagmoe-run: warning: --resume CKPT: --lr is 0.001 here, 0.003 in the checkpoint;
///   continuing with 0.001"
/// (lr, weight-decay, beta1, beta2, eps, clip-grad, aux-loss-coef, capacity-factor,
/// router-bias-update-rate). Other keys are not compared.
void checkResumedConfig(const std::string &checkpoint, const std::string &saved,
                        const std::string &current, std::ostream *warn);

} // namespace disagmoe::tools
