//===- NewerOpsets.cpp - opsets 18-23 beside a libonnx that knows 17 -------===//
#include "frontends/onnx/NewerOpsets.h"

#include <onnx/defs/schema.h>

#include <algorithm>
#include <climits>
#include <initializer_list>

namespace disagmoe::onnxfe {
namespace {

/// A newer-opset signature the frontend imports (the normalize patterns rewrite the node into
/// the opset-13..17 form the matchers read).
struct Signature {
  const char *op;
  int64_t since; // first default-domain opset with this signature
  int minInputs, maxInputs, minOutputs, maxOutputs;
  std::initializer_list<const char *> attributes;
};

constexpr int kMany = INT_MAX;

// Opset 18: every Reduce* but ReduceSum (an input since 13) takes its axes as an optional input;
// Split gains num_outputs. Opset 23: RMSNormalization. onnxruntime's SimplifiedLayerNormalization
// lives in the ONNX domain from version 1 (onnxruntime's contrib_defs.cc), unknown to libonnx.
const Signature kImported[] = {
    {"ReduceMean", 18, 1, 2, 1, 1, {"keepdims", "noop_with_empty_axes"}},
    {"ReduceMax", 18, 1, 2, 1, 1, {"keepdims", "noop_with_empty_axes"}},
    {"ReduceMin", 18, 1, 2, 1, 1, {"keepdims", "noop_with_empty_axes"}},
    {"ReduceProd", 18, 1, 2, 1, 1, {"keepdims", "noop_with_empty_axes"}},
    {"ReduceSumSquare", 18, 1, 2, 1, 1, {"keepdims", "noop_with_empty_axes"}},
    {"ReduceL1", 18, 1, 2, 1, 1, {"keepdims", "noop_with_empty_axes"}},
    {"ReduceL2", 18, 1, 2, 1, 1, {"keepdims", "noop_with_empty_axes"}},
    {"ReduceLogSum", 18, 1, 2, 1, 1, {"keepdims", "noop_with_empty_axes"}},
    {"ReduceLogSumExp", 18, 1, 2, 1, 1, {"keepdims", "noop_with_empty_axes"}},
    {"Split", 18, 1, 2, 1, kMany, {"axis", "num_outputs"}},
    {"RMSNormalization", 23, 2, 2, 1, 1, {"axis", "epsilon", "stash_type"}},
    {"SimplifiedLayerNormalization", 1, 2, 2, 1, 2, {"axis", "epsilon", "stash_type"}},
    {"Attention",
     23,
     3,
     6,
     1,
     4,
     {"is_causal", "kv_num_heads", "q_num_heads", "qk_matmul_output_mode", "scale", "softcap",
      "softmax_precision"}},
    {"RotaryEmbedding", 23, 3, 4, 1, 1, {"interleaved", "num_heads", "rotary_embedding_dim"}},
};

/// What of Attention-23 moe.attention does not represent (passes/raise/normalize/
/// DecomposeAttention.cpp reads the rest): a KV cache, the extra outputs, softcap, 3-D inputs.
std::string attentionProblem(const onnx::NodeProto &node) {
  for (int i = 4; i < node.input_size(); ++i)
    if (!node.input(i).empty())
      return std::string(i == 4 ? "past_key" : "past_value") +
             " input (a KV cache) is not imported: training runs whole sequences";
  for (int i = 1; i < node.output_size(); ++i)
    if (!node.output(i).empty())
      return "output " + std::to_string(i) + " ('" + node.output(i) +
             "': present_key, present_value or qk_matmul_output) is not imported";
  for (const auto &a : node.attribute()) {
    if (a.name() == "softcap" && a.f() != 0.0f)
      return "attribute softcap = " + std::to_string(a.f()) +
             " is not imported (no softcap "
             "in moe.attention)";
    if (a.name() == "q_num_heads" || a.name() == "kv_num_heads")
      return "attribute " + a.name() + " = " + std::to_string(a.i()) +
             ": 3-D q/k/v are not imported (the dynamo exporter writes 4-D [batch, heads, seq, "
             "head_dim])";
  }
  return "";
}

// Operators of opsets 18..23 that libonnx 1.12 does not know and the frontend does not import
// yet, with the opset that introduced them (so the refusal can say which form it is).
struct Unimported {
  const char *op;
  int64_t since;
};
const Unimported kNotYet[] = {
    {"Gelu", 20},          {"GroupNormalization", 18}, {"Mish", 18},       {"Col2Im", 18},
    {"BitwiseAnd", 18},    {"BitwiseOr", 18},          {"BitwiseXor", 18}, {"BitwiseNot", 18},
    {"CenterCropPad", 18}, {"DeformConv", 19},         {"AffineGrid", 20}, {"TensorScatter", 24},
    {"Swish", 24},
};

std::string range(int lo, int hi) {
  if (hi == kMany)
    return "at least " + std::to_string(lo);
  return lo == hi ? std::to_string(lo) : std::to_string(lo) + ".." + std::to_string(hi);
}

/// Counts inputs/outputs as ONNX does: trailing empty names are absent optional ones.
int presentCount(const google::protobuf::RepeatedPtrField<std::string> &names) {
  int n = names.size();
  while (n > 0 && names.Get(n - 1).empty())
    --n;
  return n;
}

std::string checkSignature(const onnx::NodeProto &node, const Signature &s) {
  const std::string at = std::string(node.op_type()) + "-" + std::to_string(s.since);
  const int ins = presentCount(node.input()), outs = presentCount(node.output());
  if (ins < s.minInputs || ins > s.maxInputs)
    return std::to_string(ins) + " inputs; " + at + " takes " + range(s.minInputs, s.maxInputs);
  if (outs < s.minOutputs || outs > s.maxOutputs)
    return std::to_string(outs) + " outputs; " + at + " has " + range(s.minOutputs, s.maxOutputs);
  for (const auto &a : node.attribute())
    if (std::none_of(s.attributes.begin(), s.attributes.end(),
                     [&](const char *name) { return a.name() == name; }))
      return "attribute '" + a.name() + "' is not an attribute of " + at;
  return "";
}

} // namespace

std::string newerOpsetProblem(const onnx::NodeProto &node, int64_t opset, bool &checkedHere) {
  checkedHere = false;
  if (!(node.domain().empty() || node.domain() == "ai.onnx"))
    return ""; // other domains: the checker skips them; the importer's patterns judge them
  const std::string &op = node.op_type();
  for (const Signature &s : kImported)
    if (op == s.op && opset >= s.since &&
        (s.since > kCheckerOpset || !onnx::OpSchemaRegistry::Schema(op, kCheckerOpset, ""))) {
      checkedHere = true;
      std::string why = checkSignature(node, s);
      if (why.empty() && op == "Attention")
        why = attentionProblem(node);
      return why;
    }
  if (opset <= kCheckerOpset)
    return ""; // libonnx knows every schema of these opsets: its checker decides
  for (const Unimported &u : kNotYet)
    if (op == u.op && opset >= u.since)
      return "an opset-" + std::to_string(u.since) + " operator the frontend does not import";
  const onnx::OpSchema *schema = onnx::OpSchemaRegistry::Schema(op, kCheckerOpset, "");
  if (!schema)
    return "not an operator of opsets " + std::to_string(kMinOpset) + ".." +
           std::to_string(kMaxOpset) + " that the frontend imports";
  // The checker will check this node against its newest opset <= 17 schema; a node that uses a
  // later signature (an input, output or attribute added after 17) is one this frontend does not
  // read.
  const std::string older = op + "-" + std::to_string(schema->since_version());
  const int ins = presentCount(node.input()), outs = presentCount(node.output());
  if (ins > schema->max_input() || outs > schema->max_output())
    return "written with the signature of a later opset (" + std::to_string(ins) + " inputs, " +
           std::to_string(outs) + " outputs; " + older + " has at most " +
           std::to_string(schema->max_input()) + " and " + std::to_string(schema->max_output()) +
           "), which the frontend does not import";
  for (const auto &a : node.attribute())
    if (!schema->attributes().count(a.name()))
      return "attribute '" + a.name() + "' is from a later opset than " + older +
             ", which the frontend does not import";
  return "";
}

} // namespace disagmoe::onnxfe
