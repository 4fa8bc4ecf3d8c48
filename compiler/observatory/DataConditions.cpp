// Observatory token streams: mock, shuffled, remapped and text data conditions (DataConditions.h).
#include "compiler/observatory/DataConditions.h"

#include <algorithm>
#include <fstream>
#include <iterator>
#include <numeric>
#include <random>

namespace disagmoe::observatory {
namespace {
llvm::Error fail(const std::string &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}
} // namespace

const char *toString(DataKind kind) {
  switch (kind) {
  case DataKind::Mock:
    return "mock";
  case DataKind::Shuffled:
    return "shuffled";
  case DataKind::Remapped:
    return "remapped";
  case DataKind::Text:
    return "text";
  }
  return "mock";
}

llvm::Expected<DataSpec> parseDataSpec(const std::string &text) {
  DataSpec spec;
  if (text == "mock") {
    spec.name = "mock";
    return spec;
  }
  const size_t colon = text.find(':');
  const std::string kind = text.substr(0, colon),
                    file = colon == std::string::npos ? "" : text.substr(colon + 1);
  if (kind == "shuffled")
    spec.kind = DataKind::Shuffled;
  else if (kind == "remapped")
    spec.kind = DataKind::Remapped;
  else if (kind == "text")
    spec.kind = DataKind::Text;
  else
    return fail("--data '" + text + "': expected mock, shuffled:FILE, remapped:FILE or text:FILE");
  if (file.empty())
    return fail("--data '" + text + "': " + kind + " needs a file (" + kind + ":FILE)");
  spec.file = file;
  std::string stem = file.substr(file.find_last_of('/') + 1);
  if (const size_t dot = stem.find_last_of('.'); dot != std::string::npos && dot > 0)
    stem = stem.substr(0, dot);
  spec.name = kind + ":" + stem;
  return spec;
}

llvm::Expected<std::vector<int64_t>> buildStream(const DataSpec &spec, int64_t vocab,
                                                 int64_t maxTokens, uint64_t seed) {
  std::vector<int64_t> tokens;
  std::mt19937_64 rng(seed);
  if (spec.kind == DataKind::Mock) {
    std::uniform_int_distribution<int64_t> id(0, vocab - 1);
    tokens.resize(maxTokens);
    for (int64_t &t : tokens)
      t = id(rng);
    return tokens;
  }
  std::ifstream in(spec.file, std::ios::binary);
  if (!in)
    return fail(spec.file + ": cannot read (--data " + spec.name + ")");
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (bytes.empty())
    return fail(spec.file + ": empty file");
  const size_t n = std::min<size_t>(bytes.size(), static_cast<size_t>(maxTokens));
  tokens.resize(n);
  for (size_t i = 0; i < n; ++i) {
    tokens[i] = static_cast<unsigned char>(bytes[i]);
    if (tokens[i] >= vocab)
      return fail(spec.file + ": byte " + std::to_string(tokens[i]) + " at offset " +
                  std::to_string(i) + " is outside the model's vocabulary of " +
                  std::to_string(vocab) + " (tokens are bytes)");
  }
  if (spec.kind == DataKind::Shuffled) {
    for (size_t i = n; i > 1; --i) // Fisher-Yates with the seeded generator
      std::swap(tokens[i - 1], tokens[std::uniform_int_distribution<size_t>(0, i - 1)(rng)]);
  } else if (spec.kind == DataKind::Remapped) {
    std::vector<int64_t> perm(vocab);
    std::iota(perm.begin(), perm.end(), 0);
    for (size_t i = perm.size(); i > 1; --i)
      std::swap(perm[i - 1], perm[std::uniform_int_distribution<size_t>(0, i - 1)(rng)]);
    for (int64_t &t : tokens)
      t = perm[t];
  }
  return tokens;
}

} // namespace disagmoe::observatory
