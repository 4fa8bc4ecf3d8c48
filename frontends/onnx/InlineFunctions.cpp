//===- InlineFunctions.cpp - model-local functions inlined at load --------===//
#include "frontends/onnx/InlineFunctions.h"

#include <google/protobuf/unknown_field_set.h>

#include <map>
#include <unordered_map>
#include <utility>
#include <vector>

namespace disagmoe::onnxfe {
namespace {

/// FunctionProto.attribute_proto (field 11, ONNX IR 9): attribute defaults, which libonnx 1.12's
/// generated code does not know and keeps as unknown fields.
constexpr int kAttributeProtoField = 11;
/// Nested calls deeper than this are taken for recursion.
constexpr int kMaxDepth = 32;

using FunctionKey = std::pair<std::string, std::string>; // (domain, name)

struct Function {
  const onnx::FunctionProto *proto = nullptr;
  std::unordered_map<std::string, onnx::AttributeProto> defaults;
};

std::string domainOf(const std::string &d) { return d == "ai.onnx" ? "" : d; }

std::string qualified(const FunctionKey &k) {
  return k.first.empty() ? k.second : k.first + "." + k.second;
}

class Inliner {
public:
  explicit Inliner(onnx::ModelProto &model) : model_(model) {}

  std::string run() {
    if (model_.functions_size() == 0)
      return "";
    for (const auto &os : model_.opset_import())
      opsets_[domainOf(os.domain())] = os.version();
    for (const auto &fn : model_.functions()) {
      FunctionKey key{domainOf(fn.domain()), fn.name()};
      if (functions_.count(key))
        return "function '" + qualified(key) + "': defined twice (overloads are not imported)";
      Function f;
      f.proto = &fn;
      const auto &unknown = fn.GetReflection()->GetUnknownFields(fn);
      for (int i = 0; i < unknown.field_count(); ++i) {
        const auto &field = unknown.field(i);
        if (field.number() != kAttributeProtoField ||
            field.type() != google::protobuf::UnknownField::TYPE_LENGTH_DELIMITED)
          continue;
        onnx::AttributeProto a;
        if (!a.ParseFromString(field.length_delimited()))
          return "function '" + qualified(key) + "': an unreadable attribute default";
        f.defaults[a.name()] = std::move(a);
      }
      functions_.emplace(key, std::move(f));
    }
    std::vector<onnx::NodeProto> flat;
    const onnx::GraphProto &g = model_.graph();
    for (int k = 0; k < g.node_size(); ++k) {
      const onnx::NodeProto &node = g.node(k);
      const std::string label = node.name().empty() ? "#" + std::to_string(k) : node.name();
      if (std::string err = emit(node, label, {}, "", 0, flat); !err.empty())
        return err;
    }
    onnx::GraphProto *mg = model_.mutable_graph();
    mg->clear_node();
    for (auto &n : flat)
      *mg->add_node() = std::move(n);
    model_.clear_functions();
    return "";
  }

private:
  /// Appends `node` (or, for a call, its function's body) to `out`, with value names mapped by
  /// `rename` (names not in it get `prefix`) and attribute references resolved from `caller`.
  std::string emit(const onnx::NodeProto &node, const std::string &label,
                   const std::unordered_map<std::string, std::string> &rename,
                   const std::string &prefix, int depth, std::vector<onnx::NodeProto> &out,
                   const onnx::NodeProto *caller = nullptr, const Function *callerFn = nullptr) {
    onnx::NodeProto n = node;
    auto mapped = [&](const std::string &v) {
      if (v.empty())
        return v;
      auto it = rename.find(v);
      return it != rename.end() ? it->second : prefix + v;
    };
    for (auto &v : *n.mutable_input())
      v = mapped(v);
    for (auto &v : *n.mutable_output())
      v = mapped(v);
    if (caller) {
      n.set_name(prefix + node.name());
      std::string err;
      if (!resolveAttributes(n, *caller, *callerFn, err))
        return err;
    }
    auto it = functions_.find({domainOf(n.domain()), n.op_type()});
    if (it == functions_.end()) {
      out.push_back(std::move(n));
      return "";
    }
    const FunctionKey &key = it->first;
    const Function &fn = it->second;
    const std::string where = "function '" + qualified(key) + "' called by node '" + label + "'";
    if (depth >= kMaxDepth)
      return where + ": calls nest deeper than " + std::to_string(kMaxDepth) + " (recursive?)";
    for (const auto &os : fn.proto->opset_import()) {
      const std::string d = domainOf(os.domain());
      auto have = opsets_.find(d);
      if (have == opsets_.end()) {
        auto *added = model_.add_opset_import();
        added->set_domain(d);
        added->set_version(os.version());
        opsets_[d] = os.version();
      } else if (have->second != os.version()) {
        return where + ": imports opset " + std::to_string(os.version()) + " of domain '" +
               (d.empty() ? "ai.onnx" : d) + "', the model " + std::to_string(have->second);
      }
    }
    if (n.input_size() > fn.proto->input_size() || n.output_size() > fn.proto->output_size())
      return where + ": " + std::to_string(n.input_size()) + " inputs and " +
             std::to_string(n.output_size()) + " outputs, the function declares " +
             std::to_string(fn.proto->input_size()) + " and " +
             std::to_string(fn.proto->output_size());
    std::unordered_map<std::string, std::string> inner;
    for (int i = 0; i < fn.proto->input_size(); ++i)
      inner[fn.proto->input(i)] = i < n.input_size() ? n.input(i) : "";
    const std::string innerPrefix = (n.name().empty() ? label : n.name()) + "/";
    // An output the call does not bind stays an internal value of the body.
    for (int i = 0; i < fn.proto->output_size(); ++i)
      inner[fn.proto->output(i)] = i < n.output_size() && !n.output(i).empty()
                                       ? n.output(i)
                                       : innerPrefix + fn.proto->output(i);
    for (int k = 0; k < fn.proto->node_size(); ++k) {
      const onnx::NodeProto &body = fn.proto->node(k);
      for (const auto &a : body.attribute())
        if (a.has_g() || a.graphs_size() > 0)
          return where + ": node '" + body.name() + "' (" + body.op_type() +
                 ") has a graph attribute, which is not inlined";
      const std::string bodyLabel =
          innerPrefix + (body.name().empty() ? "#" + std::to_string(k) : body.name());
      if (std::string err = emit(body, bodyLabel, inner, innerPrefix, depth + 1, out, &n, &fn);
          !err.empty())
        return err;
    }
    return "";
  }

  /// Replaces each attribute reference of `n` (a node of `fn`'s body) with the caller's attribute
  /// of that name, else the function's default; drops it if neither has one.
  static bool resolveAttributes(onnx::NodeProto &n, const onnx::NodeProto &caller,
                                const Function &fn, std::string &err) {
    google::protobuf::RepeatedPtrField<onnx::AttributeProto> resolved;
    for (const auto &a : n.attribute()) {
      if (a.ref_attr_name().empty()) {
        *resolved.Add() = a;
        continue;
      }
      const onnx::AttributeProto *value = nullptr;
      for (const auto &c : caller.attribute())
        if (c.name() == a.ref_attr_name())
          value = &c;
      if (!value)
        if (auto it = fn.defaults.find(a.ref_attr_name()); it != fn.defaults.end())
          value = &it->second;
      if (!value)
        continue;
      onnx::AttributeProto *r = resolved.Add();
      *r = *value;
      r->set_name(a.name());
      if (r->type() != a.type() && a.type() != onnx::AttributeProto::UNDEFINED) {
        err = "node '" + n.name() + "' (" + n.op_type() + "): attribute '" + a.name() +
              "' refers to '" + a.ref_attr_name() + "' of another type";
        return false;
      }
    }
    n.mutable_attribute()->Swap(&resolved);
    return true;
  }

  onnx::ModelProto &model_;
  std::map<FunctionKey, Function> functions_;
  std::map<std::string, int64_t> opsets_;
};

} // namespace

std::string inlineLocalFunctions(onnx::ModelProto &model) { return Inliner(model).run(); }

} // namespace disagmoe::onnxfe
