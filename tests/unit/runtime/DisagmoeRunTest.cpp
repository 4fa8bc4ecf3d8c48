// The disagmoe-run command line: a full run with --input/--output, and one-line errors with exit 1.
#include "TestSupport.h"

#include "runtime/executor/Executor.h"
#ifdef DISAGMOE_HAVE_CUDA
#include "runtime/backends/cuda/DeviceProbe.h"
#endif
#include "runtime/io/Npy.h"

#include <algorithm>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <sys/wait.h>

using namespace disagmoe;
using namespace disagmoe::test;

namespace {

struct Outcome {
  int exitCode = -1;
  std::string out, err;
};

std::string slurp(const std::string &path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

Outcome runTool(const std::string &args) {
  const std::string dir = makeTempDir("cli_out");
  const std::string command =
      std::string(DISAGMOE_RUN_PATH) + " " + args + " >" + dir + "/out 2>" + dir + "/err";
  const int status = std::system(command.c_str());
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, slurp(dir + "/out"), slurp(dir + "/err")};
}

std::string tinyPlanPath() {
  TinyPlacement p;
  p.attentionGroups = {{0, 1}};
  p.ffnGroups = {{2, 3}};
  p.expertToRank = {{2, 2, 2, 2, 3, 3, 3, 3}};
  return writePlan(tinyPlan(p), "cli_plan");
}

} // namespace

TEST(DisagmoeRun, RunsAPlanAndWritesLogitsAtomically) {
  const std::string plan = tinyPlanPath();
  const std::string outDir = makeTempDir("cli_logits");
  const Outcome o = runTool(std::filesystem::path(plan).parent_path().string() +
                            " --backend cpu --comm local --input " + goldenPath("ids_b2_s8.npy") +
                            " --output " + outDir + "/logits.npy --verbose");
  ASSERT_EQ(o.exitCode, 0) << o.err;
  EXPECT_EQ(o.err, "");
  EXPECT_NE(o.out.find("layer 0 attention: group A0 ranks 0,1"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("layer 0 experts 0-3 -> rank 2, 4-7 -> rank 3"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("residual  0->0"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("tokens/s"), std::string::npos) << o.out;

  // The file holds what the executor computes, and nothing else is left in the directory.
  const Tensor logits = readNpyFloat32(outDir + "/logits.npy");
  EXPECT_EQ(logits.shape, (std::vector<int64_t>{2, 8, 256}));
  std::vector<int64_t> shape;
  const Plan loaded = loadPlan(plan);
  const RunResult r = Executor(loaded).run(loadGoldenIds("ids_b2_s8.npy", shape), 2, 8);
  EXPECT_EQ(logits.data, r.logits.data);
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(outDir),
                          std::filesystem::directory_iterator()),
            1);
}

// Issue 17: a few summary lines by default, the full tables under --verbose, the result line alone
// under --quiet; training prints one expert-load summary instead of an E x L line per step.
TEST(DisagmoeRun, OutputLevelsSummaryVerboseQuiet) {
  const std::string plan = tinyPlanPath();
  const auto lines = [](const std::string &s) { return std::count(s.begin(), s.end(), '\n'); };
  const Outcome summary = runTool(plan);
  ASSERT_EQ(summary.exitCode, 0) << summary.err;
  EXPECT_NE(summary.out.find(
                "attention side: 1 group of 2 ranks (A0 ranks 0,1), layer 0, embedding and head"),
            std::string::npos)
      << summary.out;
  EXPECT_NE(summary.out.find(
                "ffn side: 1 group of 2 ranks (F0 ranks 2,3), 8 experts x 1 MoE layer, 4 per rank"),
            std::string::npos)
      << summary.out;
  EXPECT_NE(summary.out.find("exchange bytes: m2n "), std::string::npos) << summary.out;
  EXPECT_EQ(summary.out.find("residual  0->0"), std::string::npos) << summary.out;
  EXPECT_LE(lines(summary.out), 12) << summary.out;
  const Outcome verbose = runTool(plan + " --verbose");
  ASSERT_EQ(verbose.exitCode, 0) << verbose.err;
  EXPECT_NE(verbose.out.find("residual  0->0"), std::string::npos) << verbose.out;
  EXPECT_GT(lines(verbose.out), 30) << verbose.out;
  const Outcome quiet = runTool(plan + " --quiet");
  ASSERT_EQ(quiet.exitCode, 0) << quiet.err;
  EXPECT_EQ(lines(quiet.out), 1) << quiet.out;
  EXPECT_NE(quiet.out.find("tokens/s"), std::string::npos) << quiet.out;

  const Outcome train = runTool(plan + " --train --steps 3");
  ASSERT_EQ(train.exitCode, 0) << train.err;
  EXPECT_EQ(train.out.find("step 1 expert load:"), std::string::npos) << train.out;
  EXPECT_NE(train.out.find("step 3 expert load (1 layer x 8 experts): tokens per expert"),
            std::string::npos)
      << train.out;
  // Not a terminal: the progress is a plain line, never after the last step.
  EXPECT_NE(train.out.find("progress: step 1/3 (33%)"), std::string::npos) << train.out;
  EXPECT_EQ(train.out.find("progress: step 3/3"), std::string::npos) << train.out;
  const Outcome trainVerbose = runTool(plan + " --train --steps 2 --verbose");
  EXPECT_NE(trainVerbose.out.find("step 2 expert load: l0 ["), std::string::npos)
      << trainVerbose.out;
  const Outcome trainQuiet = runTool(plan + " --train --steps 2 --quiet");
  ASSERT_EQ(trainQuiet.exitCode, 0) << trainQuiet.err;
  EXPECT_EQ(lines(trainQuiet.out), 1) << trainQuiet.out;
  EXPECT_EQ(trainQuiet.out.rfind("step 2: loss ", 0), 0u) << trainQuiet.out;
  const Outcome both = runTool(plan + " --verbose --quiet");
  EXPECT_EQ(both.exitCode, 1);
  EXPECT_EQ(both.err, "disagmoe-run: --verbose and --quiet contradict each other: give one\n");
}

TEST(DisagmoeRun, RandomIdsFromASeedAreReproducible) {
  const std::string plan = tinyPlanPath();
  const std::string dir = makeTempDir("cli_seed");
  ASSERT_EQ(runTool(plan + " --batch 3 --seq-len 5 --seed 7 --output " + dir + "/a.npy").exitCode,
            0);
  ASSERT_EQ(runTool(plan + " --batch 3 --seq-len 5 --seed 7 --output " + dir + "/b.npy").exitCode,
            0);
  const Tensor a = readNpyFloat32(dir + "/a.npy");
  EXPECT_EQ(a.shape, (std::vector<int64_t>{3, 5, 256}));
  EXPECT_EQ(a.data, readNpyFloat32(dir + "/b.npy").data);
}

TEST(DisagmoeRun, ErrorsAreOneLineWithExitCodeOne) {
  const std::string plan = tinyPlanPath();
  const std::vector<std::pair<std::string, std::string>> cases = {
#ifndef DISAGMOE_HAVE_CUDA // built with the cuda backend: DisagmoeRun.CudaBackendProbesTheDevice
      {plan + " --backend cuda",
       "disagmoe-run: backend \"cuda\" is not built in this version (available: cpu, sim)\n"},
#endif
      // The tiny plan has no schedule section for the sim backend to replay.
      {plan + " --backend sim",
       "disagmoe-run: " + plan +
           ": schedule: missing (the sim backend replays the plan's "
           "schedule section; compile the plan with this version of disagmoe compile)\n"},
      {plan + " --backend sim --input ids.npy", "disagmoe-run: --backend sim replays the plan's "
                                                "schedule: it takes no --input or --output\n"},
      {plan + " --op-times t.json", "disagmoe-run: --op-times needs --backend sim\n"},
      {plan + " --backend sim --op-times-out t.json",
       "disagmoe-run: --op-times-out times an executed run: it needs --backend cpu\n"},
      {plan + " --backend tpu",
       "disagmoe-run: unknown backend \"tpu\" (expected cpu, cuda or sim)\n"},
      {plan + " --comm mpi",
       "disagmoe-run: comm \"mpi\" runs one process per rank: launch it as mpirun -np WORLD "
       "disagmoe-run PLAN --comm mpi (none of OMPI_COMM_WORLD_RANK, SLURM_PROCID, RANK is set)\n"},
#ifdef DISAGMOE_HAVE_NCCL
      {plan + " --comm nccl",
       "disagmoe-run: comm \"nccl\" runs one process per rank and CUDA device: launch it as "
       "mpirun -np WORLD disagmoe-run PLAN --comm nccl (none of OMPI_COMM_WORLD_RANK, "
       "SLURM_PROCID, RANK is set)\n"},
#else
      {plan + " --comm nccl",
       "disagmoe-run: comm \"nccl\" is not built in this version (MPI, the CUDA runtime or "
       "NCCL was not found at build time; available: local, mpi)\n"},
#endif
      {plan + " --comm tcp", "disagmoe-run: unknown comm \"tcp\" (expected local, mpi or nccl)\n"},
      {plan + " --batch x", "disagmoe-run: --batch: expected an integer >= 1, got \"x\"\n"},
      {plan + " --frobnicate 1", "disagmoe-run: unknown option --frobnicate (see --help)\n"},
      {"", "disagmoe-run: missing the plan (a directory holding plan.json, or the JSON file)\n"},
      {"/no/such/plan.json",
       "disagmoe-run: /no/such/plan.json: cannot open: No such file or directory\n"},
      {plan + " --input /no/such/ids.npy",
       "disagmoe-run: /no/such/ids.npy: cannot open: No such file or directory\n"},
      {plan + " --batch 17 --seq-len 8",
       "disagmoe-run: --batch 17 --seq-len 8: input [17,8] puts 72 tokens on an attention rank, "
       "above capacity_tokens 64 of "
       "exchange \"residual.0\" (compile the plan for this shape with --batch/--seq-len)\n"},
      {plan + " --output=", "disagmoe-run: --output: empty value\n"},
      // One parser (CLI11, runtime/tools/RunArgs.h) for both kinds of run: the nearest flag,
      // flags of the other kind named, a missing value, a second positional argument.
      {plan + " --lr-mn 3", "disagmoe-run: unknown option --lr-mn (did you mean --lr-min? see "
                            "--help)\n"},
      {plan + " --train --chekpoint-every=2",
       "disagmoe-run: unknown option --chekpoint-every (did you mean --checkpoint-every? see "
       "--help)\n"},
      {plan + " --lr 0.1", "disagmoe-run: --lr needs --train (see --help)\n"},
      // The same under --comm mpi (a forward run per process): not run with --steps ignored.
      {plan + " --comm mpi --steps 3", "disagmoe-run: --steps needs --train (see --help)\n"},
      {plan + " --comm mpi --lr 0.1 --input x.npy",
       "disagmoe-run: --lr needs --train (see --help)\n"},
      {plan + " --train --warmup 2", "disagmoe-run: --warmup applies to the forward run only (not "
                                     "to --train or --comm mpi runs)\n"},
      {plan + " --batch", "disagmoe-run: --batch needs a value\n"},
      {plan + " --train --steps", "disagmoe-run: --steps needs a value\n"},
      {plan + " extra",
       "disagmoe-run: unexpected argument \"extra\" (the plan is \"" + plan + "\")\n"},
      {plan + " --train --keep-checkpoints 2",
       "disagmoe-run: --keep-checkpoints needs --checkpoint-dir (--save-checkpoint keeps one "
       "file)\n"},
      {plan + " --train --save-checkpoint c.safetensors --checkpoint-dir d",
       "disagmoe-run: --save-checkpoint FILE and --checkpoint-dir DIR both say where checkpoints "
       "go: give one\n"},
      {plan + " --train --checkpoint-every 2",
       "disagmoe-run: --checkpoint-every needs --save-checkpoint or --checkpoint-dir\n"},
      {plan + " --output /dev/null",
       "disagmoe-run: --output /dev/null: exists and is not a regular file (a device): "
       "refusing to replace it\n"},
  };
  for (const auto &[args, expected] : cases) {
    const Outcome o = runTool(args);
    EXPECT_EQ(o.exitCode, 1) << args;
    EXPECT_EQ(o.err, expected) << args;
  }
}

#ifdef DISAGMOE_HAVE_CUDA
// Built with the cuda backend (issue 14): --backend cuda probes the device at argument parsing,
// before the plan is read (a missing plan is not what is reported), for the forward and for
// --train; with no device it names cudaGetDeviceCount's answer, with one it says that running
// plans on the cuda backend is not implemented. Both one line, exit code 1.
TEST(DisagmoeRun, CudaBackendProbesTheDevice) {
  const std::string plan = tinyPlanPath();
  const cuda::DeviceCount probe = cuda::probeDevices();
  for (const std::string &args :
       {plan + " --backend cuda", plan + " --train --steps 1 --backend cuda",
        std::string("/no/such/plan.json --backend cuda")}) {
    const Outcome o = runTool(args);
    EXPECT_EQ(o.exitCode, 1) << args;
    EXPECT_EQ(o.out, "") << args;
    if (!probe.usable()) {
      EXPECT_EQ(o.err, "disagmoe-run: --backend cuda: " + cuda::noDeviceReason(probe) + "\n")
          << args;
    } else {
      EXPECT_EQ(o.err.rfind("disagmoe-run: --backend cuda: running plans on the cuda backend is "
                            "not implemented in this version (",
                            0),
                0u)
          << args << ": " << o.err;
      EXPECT_EQ(std::count(o.err.begin(), o.err.end(), '\n'), 1) << o.err;
    }
  }
}
#endif

// A flag given twice takes its last value (what lets the command line override a run config).
TEST(DisagmoeRun, ARepeatedFlagTakesItsLastValue) {
  const std::string plan = tinyPlanPath();
  const std::string dir = makeTempDir("cli_last");
  ASSERT_EQ(runTool(plan + " --batch 3 --seq-len 5 --seed 7 --output " + dir + "/a.npy").exitCode,
            0);
  ASSERT_EQ(runTool(plan + " --batch 3 --seq-len 5 --seed 1 --seed=7 --output " + dir + "/b.npy")
                .exitCode,
            0);
  EXPECT_EQ(readNpyFloat32(dir + "/a.npy").data, readNpyFloat32(dir + "/b.npy").data);
}

// --config (runtime/tools/RunConfig.h): a YAML or JSON file gives the options by their flag names;
// the command line overrides it. The oracle is the same run given by flags alone.
TEST(DisagmoeRun, RunConfigGivesOptionsAndTheCommandLineOverrides) {
  const std::string plan = tinyPlanPath();
  const std::string dir = makeTempDir("cli_config");
  ASSERT_EQ(
      runTool(plan + " --batch 3 --seq-len 5 --seed 7 --output " + dir + "/flags.npy").exitCode, 0);
  std::ofstream(dir + "/run.yaml") << "plan: " << plan << "\nbatch: 3\nseq-len: 5\nseed: 8\n";
  std::ofstream(dir + "/run.json") << "{\"batch\": 3, \"seq-len\": 5, \"seed\": 7}";
  const Outcome yaml = runTool("--config " + dir + "/run.yaml --seed 7 --output " + dir + "/y.npy");
  ASSERT_EQ(yaml.exitCode, 0) << yaml.err;
  const Outcome json = runTool(plan + " --config=" + dir + "/run.json --output " + dir + "/j.npy");
  ASSERT_EQ(json.exitCode, 0) << json.err;
  const Tensor flags = readNpyFloat32(dir + "/flags.npy");
  EXPECT_EQ(flags.shape, (std::vector<int64_t>{3, 5, 256}));
  EXPECT_EQ(readNpyFloat32(dir + "/y.npy").data, flags.data); // --seed 7 overrode the file's 8
  EXPECT_EQ(readNpyFloat32(dir + "/j.npy").data, flags.data);
}

// A config value its flag refuses names the file and the key, unless the command line gave the
// flag again (issue 17: it used to say "--lr: ..." with no file).
TEST(DisagmoeRun, RunConfigBadValuesNameTheFile) {
  const std::string plan = tinyPlanPath();
  const std::string dir = makeTempDir("cli_config_values");
  std::ofstream(dir + "/lr.yaml") << "train: true\nlr: abc\n";
  std::ofstream(dir + "/seed.json") << "{\"seed\": \"x\"}";
  Outcome o = runTool(plan + " --config " + dir + "/lr.yaml");
  EXPECT_EQ(o.exitCode, 1);
  EXPECT_EQ(o.err,
            "disagmoe-run: " + dir +
                "/lr.yaml: key \"lr\": expected a finite decimal number >= 0, got \"abc\"\n");
  o = runTool(plan + " --config " + dir + "/seed.json"); // a forward run: the other parser
  EXPECT_EQ(o.exitCode, 1);
  EXPECT_EQ(o.err, "disagmoe-run: " + dir +
                       "/seed.json: key \"seed\": expected an integer >= 0, got \"x\"\n");
  o = runTool(plan + " --config " + dir + "/lr.yaml --lr=-1");
  EXPECT_EQ(o.exitCode, 1);
  EXPECT_EQ(o.err, "disagmoe-run: --lr: expected a finite decimal number >= 0, got \"-1\"\n");
}

TEST(DisagmoeRun, RunConfigErrorsNameTheFileAndTheKey) {
  const std::string plan = tinyPlanPath();
  const std::string dir = makeTempDir("cli_config_bad");
  const std::vector<std::pair<std::string, std::string>> files = {
      {"typo.yaml", "train: true\nlr_min: 0.1\n"},
      {"far.yaml", "frobnicate: 1\n"},
      {"list.yaml", "lr: [1, 2]\n"},
      {"switch.json", "{\"train\": \"yes please\"}"},
      {"yes.yaml", "train: yes\n"},
      {"on.yaml", "train: on\n"},
      {"y.yml", "train: y\n"},
      {"off.yaml", "train: off\n"},
      {"nested.json", "{\"config\": \"other.json\"}"},
      {"broken.yaml", "lr: 1\n  steps: 2\n"},
      {"top.json", "[1, 2]"},
      {"run.toml", "lr = 1"},
  };
  for (const auto &[name, text] : files)
    std::ofstream(dir + "/" + name) << text;
  const std::string d = dir + "/";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"typo.yaml", d + "typo.yaml: unknown key \"lr_min\" (did you mean \"lr-min\"?)"},
      {"far.yaml",
       d + "far.yaml: unknown key \"frobnicate\" (keys are disagmoe-run's flags without --)"},
      {"list.yaml", d + "list.yaml: key \"lr\": expected a number or a string, got a list"},
      {"switch.json", d + "switch.json: key \"train\": expected true or false, got \"yes please\""},
      // YAML 1.2's core schema (issue 17): YAML 1.1's yes/on/y/off are not switches.
      {"yes.yaml", d + "yes.yaml: key \"train\": expected true or false, got \"yes\""},
      {"on.yaml", d + "on.yaml: key \"train\": expected true or false, got \"on\""},
      {"y.yml", d + "y.yml: key \"train\": expected true or false, got \"y\""},
      {"off.yaml", d + "off.yaml: key \"train\": expected true or false, got \"off\""},
      {"nested.json", d + "nested.json: key \"config\": a run config cannot include another"},
      {"broken.yaml", d + "broken.yaml: line 2, column 8: illegal map value"},
      {"top.json",
       d + "top.json: expected an object of options ({\"key\": value}) at the top level"},
      {"run.toml",
       d + "run.toml: expected a .yaml, .yml or .json file (the format follows the extension)"},
      {"missing.yaml", d + "missing.yaml: cannot open: No such file or directory"},
  };
  for (const auto &[name, expected] : cases) {
    const Outcome o = runTool(plan + " --config " + d + name);
    EXPECT_EQ(o.exitCode, 1) << name;
    EXPECT_EQ(o.err, "disagmoe-run: " + expected + "\n") << name;
  }
}
