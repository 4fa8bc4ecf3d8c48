//===- InputBinding.cpp - graph inputs and outputs at the compiled shape ----------===//
#include "compiler/pipeline/InputBinding.h"

#include "llvm/ADT/STLExtras.h"

#include <cstring>
#include <regex>
#include <vector>

namespace disagmoe {
using onnxfe::ElemType;

namespace {
std::string dimsText(const std::vector<int64_t> &dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i)
    s += (i ? ", " : "") + (dims[i] < 0 ? std::string("?") : std::to_string(dims[i]));
  return s + "]";
}

/// Element k of `value` set to `x` in its element type (bool: x != 0).
void store(onnxfe::TensorData &value, int64_t k, int64_t x) {
  char *p = value.bytes.data() + k * onnxfe::elemTypeSize(value.type);
  switch (value.type) {
  case ElemType::Int64:
    std::memcpy(p, &x, 8);
    break;
  case ElemType::Int32: {
    auto v = static_cast<int32_t>(x);
    std::memcpy(p, &v, 4);
    break;
  }
  case ElemType::Float: {
    auto v = static_cast<float>(x);
    std::memcpy(p, &v, 4);
    break;
  }
  default: // Bool, UInt8, Int8: one byte
    *p = static_cast<char>(x);
  }
}
const std::regex kPastInput(R"(past_key_values\.[0-9]+\.(key|value))");
const std::regex kPresentOutput(R"(present\.[0-9]+\.(key|value))");

/// An empty KV cache [batch, kv_heads, 0, head_dim] for `declared` (past_key_values.*).
bool bindEmptyCache(const std::string &what, const onnxfe::ValueInfo &declared, int64_t batch,
                    onnxfe::TensorData &value, std::string &note, std::string &error) {
  const std::vector<int64_t> &d = declared.dims;
  const bool shapeOk = declared.hasShape && d.size() == 4 && d[1] > 0 && d[3] > 0 &&
                       (d[0] < 0 || d[0] == batch) && d[2] <= 0;
  if (!shapeOk) {
    error = what + " is declared " + (declared.hasShape ? dimsText(d) : std::string("unranked")) +
            ", but a KV-cache input is bound to an empty cache [batch = " + std::to_string(batch) +
            ", kv_heads, past = 0, head_dim], which needs kv_heads and head_dim static and the "
            "past length dynamic or 0";
    return false;
  }
  const ElemType t = declared.type;
  if (t != ElemType::Float && t != ElemType::Float16 && t != ElemType::BFloat16) {
    error = what + ": element type " + onnxfe::elemTypeName(t) +
            " is not supported for a KV cache (float, float16 or bfloat16)";
    return false;
  }
  value.type = t;
  value.dims = {batch, d[1], 0, d[3]};
  value.bytes.clear();
  note = "graph input '" + declared.name + "' " + dimsText(value.dims) +
         " bound to an empty KV cache (past length 0: training runs every sequence from its "
         "first token)";
  return true;
}
} // namespace

bool dropKvCacheOutputs(const std::string &path, std::vector<onnxfe::ValueInfo> &outputs,
                        std::string &note, std::string &error) {
  auto quoted = [](const std::vector<onnxfe::ValueInfo> &values) {
    std::string names;
    for (const onnxfe::ValueInfo &v : values)
      names += (names.empty() ? "'" : ", '") + v.name + "'";
    return names;
  };
  std::vector<onnxfe::ValueInfo> dropped;
  llvm::erase_if(outputs, [&](const onnxfe::ValueInfo &out) {
    if (!std::regex_match(out.name, kPresentOutput))
      return false;
    dropped.push_back(out);
    return true;
  });
  note.clear();
  if (outputs.empty() && !dropped.empty()) {
    error = path + ": every graph output is a KV cache (present.*): there are no logits";
    return false;
  }
  if (outputs.size() > 1) {
    error = path + ": graph outputs " + quoted(outputs) +
            ": a plan computes one output, the logits (a KV cache's outputs are dropped only when "
            "named present.<layer>.key|value, as optimum names them)";
    return false;
  }
  if (!dropped.empty())
    note = "graph output" + std::string(dropped.size() > 1 ? "s " : " ") + quoted(dropped) +
           " dropped: a training plan computes the logits and keeps no KV cache";
  return true;
}

bool bindExtraInput(const std::string &path, const onnxfe::ValueInfo &declared,
                    const std::vector<int64_t> &tokenDims, onnxfe::TensorData &value,
                    std::string &note, std::string &error) {
  const std::string what = path + ": graph input '" + declared.name + "'";
  if (tokenDims.size() != 2) {
    error = what + ": an input besides the token ids needs the compiled [batch, seq]";
    return false;
  }
  const int64_t batch = tokenDims[0], seq = tokenDims[1];
  if (std::regex_match(declared.name, kPastInput))
    return bindEmptyCache(what, declared, batch, value, note, error);
  const bool isMask = declared.name == "attention_mask", isPos = declared.name == "position_ids";
  if (!isMask && !isPos) {
    error = what + ": the plan's only runtime input is the token ids; of the other inputs, only "
                   "attention_mask (bound to ones), position_ids (0..seq-1) and "
                   "past_key_values.<layer>.key|value (an empty KV cache) are bound";
    return false;
  }
  const std::vector<int64_t> &d = declared.dims;
  auto fits = [](int64_t declaredDim, int64_t want) {
    return declaredDim < 0 || declaredDim == want;
  };
  std::vector<int64_t> dims;
  if (declared.hasShape && d.size() == 2 && fits(d[1], seq) &&
      (fits(d[0], batch) || (isPos && d[0] == 1)))
    dims = {d[0] == 1 && isPos ? 1 : batch, seq};
  else if (isPos && declared.hasShape && d.size() == 1 && fits(d[0], seq))
    dims = {seq};
  if (dims.empty()) {
    error = what + " is declared " + (declared.hasShape ? dimsText(d) : std::string("unranked")) +
            ", but the plan runs [batch = " + std::to_string(batch) +
            ", seq = " + std::to_string(seq) + "] token ids with no padding, " +
            (isMask ? "binding attention_mask to ones of [batch, seq]: a padded, longer or 4-D "
                      "mask is not supported"
                    : "binding position_ids to 0..seq-1 of [1 or batch, seq]");
    return false;
  }
  const ElemType t = declared.type;
  const bool maskType = t == ElemType::Int64 || t == ElemType::Int32 || t == ElemType::Bool ||
                        t == ElemType::Float || t == ElemType::UInt8 || t == ElemType::Int8;
  if ((isMask && !maskType) || (isPos && t != ElemType::Int64 && t != ElemType::Int32)) {
    error = what + ": element type " + onnxfe::elemTypeName(t) + " is not supported (" +
            (isMask ? "int64, int32, int8, uint8, bool or float" : "int64 or int32") + ")";
    return false;
  }
  value.type = t;
  value.dims = dims;
  int64_t count = 1;
  for (int64_t x : dims)
    count *= x;
  value.bytes.assign(static_cast<size_t>(count * onnxfe::elemTypeSize(t)), 0);
  for (int64_t k = 0; k < count; ++k)
    store(value, k, isMask ? 1 : k % seq);
  note = "graph input '" + declared.name + "' " + dimsText(dims) + " bound to " +
         (isMask ? "all ones (the plan runs every sequence at its full " + std::to_string(seq) +
                       " tokens: no padding)"
                 : "0.." + std::to_string(seq - 1) + " (no padding, no KV cache)");
  return true;
}

} // namespace disagmoe
