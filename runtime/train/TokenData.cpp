// Reads bytes/uint16/uint32/Megatron token files through read-only mappings and cuts training
// batches (TokenData.h).
#include "runtime/train/TokenData.h"

#include "runtime/io/FileKind.h"
#include "runtime/io/MappedFile.h"

#include <algorithm>
#include <cstring>
#include <filesystem>

namespace disagmoe::train {
namespace {

[[noreturn]] void fail(const std::string &path, const std::string &what) {
  throw DataError(path + ": " + what);
}

MappedFile mapFile(const std::string &path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    fail(path, "is a directory, not a token file");
  // A FIFO would block the read, a device read forever: refuse anything but a regular file.
  if (const std::string why = inputRefusal(path); !why.empty())
    fail(path, why);
  try {
    return MappedFile(path);
  } catch (const MappedFileError &e) {
    throw DataError(e.what());
  }
}

uint64_t le(const unsigned char *p, int n) {
  uint64_t v = 0;
  for (int i = 0; i < n; ++i)
    v |= static_cast<uint64_t>(p[i]) << (8 * i);
  return v;
}

// Megatron dtype codes (indexed_dataset.py's DType): 1 uint8, 2 int8, 3 int16, 4 int32, 5 int64,
// 8 uint16. The raw formats use codes 1 (bytes), 8 (uint16) and kUint32.
constexpr int kUint32 = 100;

int widthOf(int code) {
  switch (code) {
  case 1:
  case 2:
    return 1;
  case 3:
  case 8:
    return 2;
  case 4:
  case kUint32:
    return 4;
  case 5:
    return 8;
  default:
    return 0;
  }
}

// One token of dtype `code` at p, as int64.
int64_t decode(const unsigned char *p, int code) {
  switch (code) {
  case 1:
    return p[0];
  case 2:
    return static_cast<int8_t>(p[0]);
  case 3:
    return static_cast<int16_t>(le(p, 2));
  case 4:
    return static_cast<int32_t>(le(p, 4));
  case 5:
    return static_cast<int64_t>(le(p, 8));
  case kUint32:
    return static_cast<int64_t>(le(p, 4));
  default:
    return static_cast<int64_t>(le(p, 2)); // 8: uint16
  }
}

// Whether every value of dtype `code` lies in [0, vocabSize) (the check can be skipped).
bool alwaysInVocabulary(int code, int64_t vocabSize) {
  switch (code) {
  case 1:
    return vocabSize > 0xff;
  case 8:
    return vocabSize > 0xffff;
  case kUint32:
    return vocabSize > 0xffffffffLL;
  default:
    return false; // signed: negative tokens
  }
}

// The scan's window: its pages are dropped once checked.
constexpr size_t kScanBytes = size_t(8) << 20;

} // namespace

struct TokenFile::Mapped {
  MappedFile bin, idx; // idx: megatron only
  int code = 1;
  int width = 1;
  // Megatron: the stream index where each sequence starts ([S + 1], the last the stream size), and
  // each sequence's byte offset into the .bin; raw formats: empty (the stream is the file).
  std::vector<int64_t> start;
  std::vector<uint64_t> pointer;

  // Copies `count` tokens from .bin byte offset `at` into out.
  void decodeRun(uint64_t at, int64_t count, int64_t *out) const {
    const unsigned char *p = bin.data() + at;
    if (code == 1) {
      for (int64_t i = 0; i < count; ++i)
        out[i] = p[i];
      return;
    }
    for (int64_t i = 0; i < count; ++i)
      out[i] = decode(p + i * width, code);
  }

  // Checks `count` tokens at .bin offset `at` (stream index `first`) against the vocabulary, in
  // windows whose pages are dropped behind the scan.
  void checkRun(uint64_t at, int64_t count, int64_t first, int64_t vocabSize,
                const std::string &where) const {
    std::vector<int64_t> window;
    const int64_t perWindow = static_cast<int64_t>(kScanBytes) / width;
    for (int64_t done = 0; done < count; done += perWindow) {
      const int64_t n = std::min(perWindow, count - done);
      window.resize(static_cast<size_t>(n));
      const uint64_t offset = at + static_cast<uint64_t>(done) * width;
      decodeRun(offset, n, window.data());
      for (int64_t i = 0; i < n; ++i)
        if (window[i] < 0 || window[i] >= vocabSize)
          fail(where, "token " + std::to_string(first + done + i) + " is " +
                          std::to_string(window[i]) + ", outside the model's vocabulary [0, " +
                          std::to_string(vocabSize) + ")");
      bin.release(offset, static_cast<size_t>(n) * width);
    }
  }
};

TokenFormat parseTokenFormat(const std::string &name) {
  if (name == "bytes")
    return TokenFormat::Bytes;
  if (name == "uint16")
    return TokenFormat::Uint16;
  if (name == "uint32")
    return TokenFormat::Uint32;
  if (name == "megatron")
    return TokenFormat::Megatron;
  throw DataError("unknown token format \"" + name +
                  "\" (expected bytes, uint16, uint32 or megatron)");
}

TokenFile::TokenFile(std::vector<int64_t> tokens)
    : memory_(std::move(tokens)), size_(static_cast<int64_t>(memory_.size())) {}

TokenFile TokenFile::open(const std::string &path, TokenFormat format, int64_t vocabSize) {
  auto m = std::make_shared<Mapped>();
  TokenFile f;
  if (format != TokenFormat::Megatron) {
    m->bin = mapFile(path);
    m->code = format == TokenFormat::Bytes ? 1 : format == TokenFormat::Uint16 ? 8 : kUint32;
    m->width = widthOf(m->code);
    if (m->bin.size() % m->width)
      fail(path, "size " + std::to_string(m->bin.size()) +
                     " bytes is not a multiple of the token width " + std::to_string(m->width));
    f.size_ = static_cast<int64_t>(m->bin.size() / m->width);
    if (!alwaysInVocabulary(m->code, vocabSize))
      m->checkRun(0, f.size_, 0, vocabSize, path);
    f.mapped_ = std::move(m);
    return f;
  }
  std::string prefix = path;
  if (prefix.size() > 4 && prefix.compare(prefix.size() - 4, 4, ".bin") == 0)
    prefix.resize(prefix.size() - 4);
  const std::string idxPath = prefix + ".idx", binPath = prefix + ".bin";
  m->idx = mapFile(idxPath);
  const unsigned char *idx = m->idx.data();
  const size_t idxSize = m->idx.size();
  static const unsigned char kMagic[9] = {'M', 'M', 'I', 'D', 'I', 'D', 'X', 0, 0};
  constexpr size_t kFixed = 9 + 8 + 1 + 8 + 8;
  if (idxSize < kFixed)
    fail(idxPath, "shorter than the index header (" + std::to_string(kFixed) + " bytes)");
  if (std::memcmp(idx, kMagic, 9) != 0)
    fail(idxPath, "header: not a Megatron index (magic MMIDIDX)");
  const uint64_t version = le(idx + 9, 8);
  if (version != 1)
    fail(idxPath, "version " + std::to_string(version) + " (only 1 is known)");
  const int code = idx[17];
  if (code < 1 || code > 8 || code == 6 || code == 7)
    fail(idxPath,
         "dtype code " + std::to_string(code) + " is not an integer token type (1-5 or 8)");
  m->code = code;
  m->width = widthOf(code);
  const uint64_t seqs = le(idx + 18, 8), docs = le(idx + 26, 8);
  const uint64_t need = kFixed + seqs * 4 + seqs * 8 + docs * 8;
  if (seqs > idxSize || docs > idxSize || need != idxSize)
    fail(idxPath, "sequence count " + std::to_string(seqs) + " and document count " +
                      std::to_string(docs) + " need " + std::to_string(need) +
                      " bytes, the file has " + std::to_string(idxSize));
  m->bin = mapFile(binPath);
  const uint64_t binSize = m->bin.size();
  const unsigned char *lengths = idx + kFixed;
  const unsigned char *pointers = lengths + seqs * 4;
  m->start.resize(static_cast<size_t>(seqs) + 1);
  m->pointer.resize(static_cast<size_t>(seqs));
  int64_t total = 0;
  for (uint64_t s = 0; s < seqs; ++s) {
    const int64_t len = static_cast<int32_t>(le(lengths + 4 * s, 4));
    const uint64_t ptr = le(pointers + 8 * s, 8);
    if (len < 0 || ptr > binSize || static_cast<uint64_t>(len) * m->width > binSize - ptr)
      fail(idxPath, "sequence " + std::to_string(s) + " (pointer " + std::to_string(ptr) +
                        ", length " + std::to_string(len) + ") lies outside " + binPath + " (" +
                        std::to_string(binSize) + " bytes)");
    m->start[s] = total;
    m->pointer[s] = ptr;
    total += len;
  }
  m->start[seqs] = total;
  f.size_ = total;
  if (!alwaysInVocabulary(m->code, vocabSize))
    for (uint64_t s = 0; s < seqs; ++s)
      m->checkRun(m->pointer[s], m->start[s + 1] - m->start[s], m->start[s], vocabSize, path);
  f.mapped_ = std::move(m);
  return f;
}

void TokenFile::read(int64_t from, int64_t count, int64_t *out) const {
  if (!mapped_) {
    std::copy_n(memory_.begin() + from, count, out);
    return;
  }
  const Mapped &m = *mapped_;
  if (m.start.empty()) {
    m.decodeRun(static_cast<uint64_t>(from) * m.width, count, out);
    return;
  }
  // The sequence holding `from`, then on through the following ones.
  size_t s = static_cast<size_t>(std::upper_bound(m.start.begin(), m.start.end(), from) -
                                 m.start.begin()) -
             1;
  while (count > 0) {
    const int64_t offset = from - m.start[s];
    const int64_t n = std::min(count, m.start[s + 1] - from);
    m.decodeRun(m.pointer[s] + static_cast<uint64_t>(offset) * m.width, n, out);
    out += n;
    from += n;
    count -= n;
    ++s;
  }
}

std::vector<int64_t> loadTokens(const std::string &path, TokenFormat format, int64_t vocabSize) {
  const TokenFile f = TokenFile::open(path, format, vocabSize);
  std::vector<int64_t> tokens(static_cast<size_t>(f.size()));
  f.read(0, f.size(), tokens.data());
  return tokens;
}

TokenBatcher::TokenBatcher(TokenFile tokens, int64_t batch, int64_t seqLen,
                           const std::string &source)
    : tokens_(std::move(tokens)), batch_(batch), seqLen_(seqLen), source_(source) {
  if (size() < batch * seqLen + 1)
    fail(source, std::to_string(size()) + " tokens, a batch [" + std::to_string(batch) + "," +
                     std::to_string(seqLen) + "] needs at least " +
                     std::to_string(batch * seqLen + 1));
}

bool TokenBatcher::next(std::vector<int64_t> &ids, std::vector<int64_t> &targets) {
  const bool wrap = position_ + batch_ * seqLen_ + 1 > size();
  if (wrap) { // a new epoch
    position_ = 0;
    ++epoch_;
  }
  ids.resize(static_cast<size_t>(batch_ * seqLen_));
  targets.resize(ids.size());
  std::vector<int64_t> window(static_cast<size_t>(seqLen_ + 1));
  for (int64_t b = 0; b < batch_; ++b) {
    tokens_.read(position_ + b * seqLen_, seqLen_ + 1, window.data());
    std::copy_n(window.begin(), seqLen_, ids.begin() + b * seqLen_);
    std::copy_n(window.begin() + 1, seqLen_, targets.begin() + b * seqLen_);
  }
  position_ += batch_ * seqLen_;
  return wrap;
}

void TokenBatcher::setPosition(int64_t position) {
  if (position < 0 || position > size())
    fail(source_, "data position " + std::to_string(position) + " is outside the " +
                      std::to_string(size()) + " tokens of the file");
  position_ = position;
}

} // namespace disagmoe::train
