// Step-numbered checkpoint files, the `latest` pointer and keep-last-N pruning (CheckpointDir.h).
#include "runtime/train/CheckpointDir.h"

#include "runtime/io/AtomicFile.h"
#include "runtime/io/FileKind.h"
#include "runtime/train/Checkpoint.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

namespace disagmoe::train {
namespace {

namespace fs = std::filesystem;

const char *kLatest = "latest";
const std::string kPrefix = "step-", kSuffix = ".safetensors";

[[noreturn]] void fail(const std::string &path, const std::string &what) {
  throw CheckpointError(path + ": " + what);
}

// The step of "step-<digits>.safetensors", or -1 for any other name.
int64_t stepOf(const std::string &name) {
  if (name.size() <= kPrefix.size() + kSuffix.size() || name.compare(0, kPrefix.size(), kPrefix) ||
      name.compare(name.size() - kSuffix.size(), kSuffix.size(), kSuffix))
    return -1;
  const std::string digits =
      name.substr(kPrefix.size(), name.size() - kPrefix.size() - kSuffix.size());
  if (digits.size() > 18 ||
      !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return -1;
  return std::stoll(digits);
}

} // namespace

std::string checkpointFileName(int64_t step) {
  char name[64];
  std::snprintf(name, sizeof name, "step-%08lld.safetensors", static_cast<long long>(step));
  return name;
}

void writeLatest(const std::string &dir, const std::string &fileName) {
  const std::string path = (fs::path(dir) / kLatest).string();
  const std::string why =
      writeFileAtomically(path, [&](std::ostream &out) { out << fileName << "\n"; });
  if (!why.empty())
    fail(path, why);
}

std::string resolveCheckpoint(const std::string &path) {
  std::error_code ec;
  if (!fs::is_directory(path, ec))
    return path;
  const std::string latest = (fs::path(path) / kLatest).string();
  if (!fs::exists(fs::symlink_status(latest, ec)))
    fail(latest, "missing (" + path + " holds no complete checkpoint)");
  if (const std::string why = inputRefusal(latest); !why.empty())
    fail(latest, why);
  std::ifstream in(latest);
  if (!in)
    fail(latest, std::string("cannot open: ") + std::strerror(errno));
  std::string name;
  std::getline(in, name);
  std::string rest;
  if (std::getline(in, rest) && !rest.empty())
    fail(latest, "has more than one line (expected one checkpoint file name)");
  if (name.empty() || name == "." || name == ".." || name.find('/') != std::string::npos)
    fail(latest, "names \"" + name + "\", not a file name in " + path);
  const std::string file = (fs::path(path) / name).string();
  if (!fs::exists(file, ec))
    fail(latest, "names " + name + ", which does not exist");
  return file;
}

std::vector<std::string> pruneCheckpoints(const std::string &dir, int64_t keep,
                                          int64_t newestStep) {
  if (keep <= 0)
    return {};
  std::vector<std::pair<int64_t, std::string>> older;
  std::error_code ec;
  for (const fs::directory_entry &e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    const int64_t step = stepOf(name);
    if (step >= 0 && step < newestStep && e.is_regular_file(ec))
      older.push_back({step, name});
  }
  if (ec)
    fail(dir, "cannot list the checkpoint directory: " + ec.message());
  std::sort(older.begin(), older.end());
  std::vector<std::string> removed;
  const size_t kept = static_cast<size_t>(keep - 1);
  for (size_t i = 0; i + kept < older.size(); ++i) {
    const std::string file = (fs::path(dir) / older[i].second).string();
    if (std::remove(file.c_str()) != 0)
      fail(file, std::string("cannot delete an old checkpoint: ") + std::strerror(errno));
    removed.push_back(older[i].second);
  }
  return removed;
}

} // namespace disagmoe::train
