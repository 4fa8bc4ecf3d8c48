// Token files for the training loop and the batches cut from them (docs/training.md, "Training on
// token files").
//
// Files are memory-mapped (runtime/io/MappedFile.h: read-only, MAP_PRIVATE) and decoded as the
// batches read them, so resident memory holds the pages the batches touched, not the file (plus
// 16 bytes per Megatron sequence). Opening checks every token against the vocabulary in one pass
// whose pages are dropped behind it (skipped where the token type cannot exceed the vocabulary:
// bytes for a vocabulary of 256 or more).
//
// Formats (each token must be < the model's vocabulary):
//   bytes      any file, one token per byte (byte-level tokens: a UTF-8 text file as it is)
//   uint16     raw little-endian uint16 tokens, no header (numpy's tofile)
//   uint32     raw little-endian uint32 tokens, no header
//   megatron   Megatron-LM's indexed dataset PREFIX.bin + PREFIX.idx (megatron/core/datasets/
//              indexed_dataset.py, _IndexWriter): the .idx is "MMIDIDX\0\0", u64 version 1, u8
//              dtype code (1 uint8, 2 int8, 3 int16, 4 int32, 5 int64, 8 uint16), u64 sequence
//              count S, u64 document count D, int32 lengths[S], int64 byte pointers into .bin[S],
//              int64 document indices[D]; the tokens are the sequences concatenated in index order.
//
// Batches (TokenBatcher): the file is one token stream; a batch of B sequences of S tokens takes B
// consecutive windows of S + 1 tokens starting at the data position p (window b starts at p + b S):
// ids = window[0, S), targets = window[1, S] (every position has a target), and p advances by B S.
// When the next batch would run past the end, p wraps to 0 (a new epoch) first.
#pragma once

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace disagmoe::train {

class DataError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

enum class TokenFormat { Bytes, Uint16, Uint32, Megatron };

/// "bytes", "uint16", "uint32", "megatron"; throws DataError otherwise.
TokenFormat parseTokenFormat(const std::string &name);

/// One token stream: a memory-mapped token file, or tokens held in memory.
class TokenFile {
public:
  /// Maps `path` (for megatron: PATH.bin and PATH.idx, PATH given with or without the .bin suffix)
  /// and checks it. Throws DataError naming the file and the field (a directory or other
  /// non-regular file, size not a multiple of the token width, bad magic/version/dtype, counts
  /// that disagree with the .idx size, a sequence outside the .bin, "token I is V, outside the
  /// model's vocabulary [0, vocabSize)" with I the token's index in the stream).
  static TokenFile open(const std::string &path, TokenFormat format, int64_t vocabSize);
  /// The stream `tokens` (no file).
  explicit TokenFile(std::vector<int64_t> tokens);

  int64_t size() const { return size_; } ///< tokens in the stream
  /// Copies tokens [from, from + count) of the stream to `out`; 0 <= from, from + count <= size().
  void read(int64_t from, int64_t count, int64_t *out) const;

private:
  struct Mapped; // the mappings and the Megatron sequence table (TokenData.cpp)
  TokenFile() = default;
  std::shared_ptr<const Mapped> mapped_;
  std::vector<int64_t> memory_;
  int64_t size_ = 0;
};

/// Every token of `path` in memory (TokenFile::open, then read whole); the same errors.
std::vector<int64_t> loadTokens(const std::string &path, TokenFormat format, int64_t vocabSize);

class TokenBatcher {
public:
  /// Throws DataError when the stream has fewer than batch * seqLen + 1 tokens.
  TokenBatcher(TokenFile tokens, int64_t batch, int64_t seqLen, const std::string &source);
  TokenBatcher(std::vector<int64_t> tokens, int64_t batch, int64_t seqLen,
               const std::string &source)
      : TokenBatcher(TokenFile(std::move(tokens)), batch, seqLen, source) {}

  /// The batch at the current position (wrapping first if needed): ids and targets [batch*seqLen];
  /// then advances the position. Returns true when it wrapped to position 0 first.
  bool next(std::vector<int64_t> &ids, std::vector<int64_t> &targets);

  int64_t position() const { return position_; }
  /// 1 + the wraps since this batcher started (or since setPosition).
  int64_t epoch() const { return epoch_; }
  /// Restores a position (from a checkpoint); throws DataError when outside the stream.
  void setPosition(int64_t position);
  int64_t size() const { return tokens_.size(); }

private:
  TokenFile tokens_;
  int64_t batch_, seqLen_, position_ = 0, epoch_ = 1;
  std::string source_;
};

} // namespace disagmoe::train
