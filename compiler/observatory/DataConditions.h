// Token streams of the routing observatory's data conditions, built as in DODOCO
// (docs/observatory.md, "Data conditions"):
//   mock            uniform random token ids in [0, vocab)
//   shuffled:FILE   FILE's tokens, globally permuted (unigram frequencies kept, sequence destroyed)
//   remapped:FILE   FILE's tokens in order through a fixed random permutation of the vocabulary
//                   (sequence structure kept, learned embeddings destroyed)
//   text:FILE       FILE's tokens in order (real text)
// A FILE's tokens are its bytes (byte-level vocabulary of 256, the samples' tokenizer).
// Plain C++17, no MLIR; functions report errors through llvm::Error (LLVMSupport), never by
// exception.
#pragma once

#include "llvm/Support/Error.h"

#include <cstdint>
#include <string>
#include <vector>

namespace disagmoe::observatory {

enum class DataKind { Mock, Shuffled, Remapped, Text };

struct DataSpec {
  DataKind kind = DataKind::Mock;
  std::string file; ///< empty for mock
  std::string name; ///< "mock", "shuffled:kjv_ot", "text:kjv_nt" (file stem)
};

/// Parses "mock", "shuffled:FILE", "remapped:FILE" or "text:FILE". Fails with one line naming the
/// --data value otherwise (an unknown kind, or a kind without its FILE).
llvm::Expected<DataSpec> parseDataSpec(const std::string &text);
const char *toString(DataKind kind);

/// The first `maxTokens` tokens of the condition (fewer when FILE is shorter; mock gives exactly
/// maxTokens). `seed` fixes mock's ids, the shuffle and the remapping permutation. Fails with one
/// line naming FILE when it cannot be read, is empty, or holds a byte >= vocab (and its offset).
llvm::Expected<std::vector<int64_t>> buildStream(const DataSpec &spec, int64_t vocab,
                                                 int64_t maxTokens, uint64_t seed);

} // namespace disagmoe::observatory
