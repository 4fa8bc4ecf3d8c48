// Pack/unpack of the token exchanges' count and payload messages, and their tags (Messages.h).
#include "runtime/exchange/Messages.h"

#include <cstring>
#include <string>

namespace disagmoe {
namespace {

class Writer {
public:
  explicit Writer(size_t reserve) { bytes_.reserve(reserve); }
  template <typename T> void put(T value) { putArray(&value, 1); }
  template <typename T> void putArray(const T *values, size_t n) {
    const size_t at = bytes_.size();
    bytes_.resize(at + n * sizeof(T));
    if (n)
      std::memcpy(bytes_.data() + at, values, n * sizeof(T));
  }
  Bytes take() { return std::move(bytes_); }

private:
  Bytes bytes_;
};

class Reader {
public:
  Reader(const Bytes &bytes, const char *kind) : bytes_(bytes), kind_(kind) {}
  template <typename T> T get() {
    T value;
    getArray(&value, 1);
    return value;
  }
  template <typename T> void getArray(T *out, size_t n) {
    if (n > (bytes_.size() - at_) / sizeof(T))
      fail("truncated at byte " + std::to_string(at_) + " of " + std::to_string(bytes_.size()));
    if (n)
      std::memcpy(out, bytes_.data() + at_, n * sizeof(T));
    at_ += n * sizeof(T);
  }
  size_t remaining() const { return bytes_.size() - at_; }
  void expectEnd() {
    if (at_ != bytes_.size())
      fail(std::to_string(bytes_.size() - at_) + " trailing bytes after " + std::to_string(at_));
  }
  [[noreturn]] void fail(const std::string &what) {
    throw MessageError(std::string(kind_) + " message: " + what);
  }

private:
  const Bytes &bytes_;
  const char *kind_;
  size_t at_ = 0;
};

// `count` ids (count from the count message), checked against the bytes left before allocating.
std::vector<int64_t> readTokenIds(Reader &in, int64_t count) {
  if (count < 0 || static_cast<uint64_t>(count) > in.remaining() / sizeof(int64_t))
    in.fail("token count " + std::to_string(count) + " does not fit the message");
  std::vector<int64_t> ids(static_cast<size_t>(count));
  in.getArray(ids.data(), ids.size());
  for (size_t i = 0; i < ids.size(); ++i)
    if (ids[i] < 0 || (i > 0 && ids[i] <= ids[i - 1]))
      in.fail("token ids are not non-negative and strictly ascending");
  return ids;
}

void checkRows(size_t count, size_t values, int64_t hidden, const char *kind) {
  if (values != count * static_cast<size_t>(hidden))
    throw MessageError(std::string(kind) + " message: " + std::to_string(values) + " values for " +
                       std::to_string(count) + " tokens of hidden size " + std::to_string(hidden));
}

// The count + payload concatenation of packM2n / packRows, split back.
int64_t splitCount(const Bytes &bytes, Bytes &payload, const char *kind) {
  if (bytes.size() < sizeof(int64_t))
    throw MessageError(std::string(kind) + " message: truncated at byte 0 of " +
                       std::to_string(bytes.size()));
  payload.assign(bytes.begin() + sizeof(int64_t), bytes.end());
  return unpackCount(Bytes(bytes.begin(), bytes.begin() + sizeof(int64_t)));
}

Bytes concat(Bytes head, const Bytes &tail) {
  head.insert(head.end(), tail.begin(), tail.end());
  return head;
}

} // namespace

Bytes packCount(int64_t count) {
  if (count < 0)
    throw MessageError("count message: negative count " + std::to_string(count));
  Writer out(sizeof(int64_t));
  out.put<int64_t>(count);
  return out.take();
}

int64_t unpackCount(const Bytes &bytes) {
  if (bytes.size() != sizeof(int64_t))
    throw MessageError("count message: " + std::to_string(bytes.size()) + " bytes, expected 8");
  int64_t count;
  std::memcpy(&count, bytes.data(), sizeof(count));
  return count;
}

Bytes packM2nPayload(const M2nMessage &message, int64_t hidden) {
  const size_t count = message.tokenIds.size();
  checkRows(count, message.x.size(), hidden, "M2N");
  if (message.routes.size() != count)
    throw MessageError("M2N message: routes do not match the token count");
  Writer out(count * (16 + 4 * hidden));
  out.putArray(message.tokenIds.data(), count);
  out.putArray(message.x.data(), message.x.size());
  for (const auto &route : message.routes) {
    out.put<int64_t>(static_cast<int64_t>(route.size()));
    for (const ExpertGate &eg : route) {
      out.put<int64_t>(eg.expert);
      out.put<float>(eg.gate);
    }
  }
  return out.take();
}

M2nMessage unpackM2nPayload(const Bytes &bytes, int64_t count, int64_t hidden) {
  Reader in(bytes, "M2N");
  M2nMessage message;
  message.tokenIds = readTokenIds(in, count);
  const size_t n = message.tokenIds.size();
  if (n > in.remaining() / (4 * static_cast<size_t>(hidden)))
    in.fail("too short for " + std::to_string(n) + " tokens");
  message.x.resize(n * static_cast<size_t>(hidden));
  in.getArray(message.x.data(), message.x.size());
  message.routes.resize(n);
  for (auto &route : message.routes) {
    const int64_t nLocal = in.get<int64_t>();
    if (nLocal < 0 || static_cast<uint64_t>(nLocal) > in.remaining() / 12)
      in.fail("bad n_local " + std::to_string(nLocal));
    route.resize(static_cast<size_t>(nLocal));
    for (size_t i = 0; i < route.size(); ++i) {
      route[i].expert = in.get<int64_t>();
      route[i].gate = in.get<float>();
      if (i > 0 && route[i].expert <= route[i - 1].expert)
        in.fail("expert ids of a token are not strictly ascending");
    }
  }
  in.expectEnd();
  return message;
}

Bytes packRowsPayload(const RowsMessage &message, int64_t hidden) {
  const size_t count = message.tokenIds.size();
  checkRows(count, message.rows.size(), hidden, "N2M");
  Writer out(count * (8 + 4 * hidden));
  out.putArray(message.tokenIds.data(), count);
  out.putArray(message.rows.data(), message.rows.size());
  return out.take();
}

RowsMessage unpackRowsPayload(const Bytes &bytes, int64_t count, int64_t hidden) {
  Reader in(bytes, "N2M");
  RowsMessage message;
  message.tokenIds = readTokenIds(in, count);
  if (message.tokenIds.size() > in.remaining() / (4 * static_cast<size_t>(hidden)))
    in.fail("too short for " + std::to_string(message.tokenIds.size()) + " tokens");
  message.rows.resize(message.tokenIds.size() * static_cast<size_t>(hidden));
  in.getArray(message.rows.data(), message.rows.size());
  in.expectEnd();
  return message;
}

Bytes packM2n(const M2nMessage &message, int64_t hidden) {
  Bytes payload = packM2nPayload(message, hidden); // checks the message first
  return concat(packCount(static_cast<int64_t>(message.tokenIds.size())), payload);
}

M2nMessage unpackM2n(const Bytes &bytes, int64_t hidden) {
  Bytes payload;
  const int64_t count = splitCount(bytes, payload, "M2N");
  return unpackM2nPayload(payload, count, hidden);
}

Bytes packRows(const RowsMessage &message, int64_t hidden) {
  Bytes payload = packRowsPayload(message, hidden);
  return concat(packCount(static_cast<int64_t>(message.tokenIds.size())), payload);
}

RowsMessage unpackRows(const Bytes &bytes, int64_t hidden) {
  Bytes payload;
  const int64_t count = splitCount(bytes, payload, "N2M");
  return unpackRowsPayload(payload, count, hidden);
}

int exchangeTag(ExchangeKind kind, int64_t layer) {
  // Embedding and head messages are sent with layer = num_layers: tags 3L and 3L + 1.
  const int k = kind == ExchangeKind::Embedding ? 0
                : kind == ExchangeKind::Head    ? 1
                                                : static_cast<int>(kind);
  return static_cast<int>(layer * 3 + k);
}

} // namespace disagmoe
