// The plan's schema, written once (docs/plan-format.md): the JSON spelling of every enum and a
// table of fields per record, read by parsePlan (Plan.cpp) and written by writePlan
// (PlanWriter.cpp). A new scalar field is one row in PlanSchema.cpp (and its member in Plan.h);
// both directions follow, and the round-trip test (tests/unit/compiler/PlanRoundTripTest.cpp)
// fails if they disagree.
//
// Internal to runtime/plan: it exposes nlohmann-json, which Plan.h keeps private.
#pragma once

#include "runtime/plan/Plan.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace disagmoe::schema {

using json = nlohmann::json;

// JSON spellings of the enums of Plan.h, in enum order.
extern const char *const kComponentKinds[8];
extern const char *const kNormRoles[4];
extern const char *const kGroupRoles[2];
extern const char *const kStreams[3];
extern const char *const kExchangeKinds[5];
extern const char *const kOpCodes[18];
extern const char *const kDenseFfnRoles[2];
extern const char *const kActivations[6];
extern const char *const kScorings[5];

/// A JSON value with its field path ("model.weights[3].shape"), so every error names the field.
/// Every failure throws PlanError "<file>: <path>: <problem>".
class Node {
public:
  Node(const std::string &file, const json &value, std::string path)
      : file_(file), value_(value), path_(std::move(path)) {}

  const std::string &path() const { return path_; }
  const json &raw() const { return value_; }
  [[noreturn]] void fail(const std::string &message) const;
  bool has(const char *key) const { return value_.is_object() && value_.contains(key); }
  Node operator[](const char *key) const; ///< fails "missing" when absent
  size_t size() const;                    ///< fails unless an array
  Node operator[](size_t i) const;
  int64_t integer(int64_t lo, int64_t hi) const;
  double positiveNumber() const; ///< > 0 and <= 1e30
  double nonNegativeNumber() const;
  std::string string() const;
  bool boolean() const;
  /// One of `names` (the JSON spellings of enum values 0..n-1).
  template <typename Enum, size_t N> Enum choice(const char *const (&names)[N]) const {
    return static_cast<Enum>(choiceIndex(names, N));
  }
  std::string describe() const;

private:
  size_t choiceIndex(const char *const *names, size_t n) const;
  std::string child(const char *key) const { return path_.empty() ? key : path_ + "." + key; }

  const std::string &file_;
  const json &value_;
  std::string path_;
};

/// One scalar field of record S. `applies` (null: always) decides, from the fields read before
/// it, whether the field exists for this record (a component's kind, an activation); a field that
/// applies is read when `required` or present, and written when `write` returns a value.
template <class S> struct Field {
  const char *key;
  bool required;
  bool (*applies)(const S &);
  void (*read)(const Node &field, S &record);
  std::optional<json> (*write)(const S &record);
};

/// The scalar hyper-parameters of `model` (ModelSpec), in reading order.
const std::vector<Field<ModelSpec>> &modelFields();
/// The scalar fields of a component, after `kind` (and `layer`), for every kind (rows check
/// `kind` in `applies`).
const std::vector<Field<Component>> &componentFields();
/// The fields of a weight manifest entry, except `ranks` (checked against the placement).
const std::vector<Field<WeightSpec>> &weightFields();
/// The fields of an exchange, except the groups (checked against the placement).
const std::vector<Field<ExchangeSpec>> &exchangeFields();

/// Reads every row of `fields` that applies from object `n` into `record`.
template <class S> void readFields(const Node &n, const std::vector<Field<S>> &fields, S &record) {
  for (const Field<S> &f : fields) {
    if (f.applies && !f.applies(record))
      continue;
    if (f.required || n.has(f.key))
      f.read(n[f.key], record);
  }
}

/// Writes every row of `fields` that applies and has a value into `out`.
template <class S>
void writeFields(const std::vector<Field<S>> &fields, const S &record, json &out) {
  for (const Field<S> &f : fields) {
    if (f.applies && !f.applies(record))
      continue;
    if (std::optional<json> v = f.write(record))
      out[f.key] = std::move(*v);
  }
}

/// Component fields that name a weight (index into ModelSpec::weights, -1 when absent): their
/// shapes are checked by the parser, which knows each kind's geometry.
struct WeightRef {
  const char *key;
  int Component::*member;
  ComponentKind kind;
};
const std::vector<WeightRef> &componentWeightRefs();
/// The same for one expert's weights.
struct ExpertWeightRef {
  const char *key;
  int ExpertWeights::*member;
};
const std::vector<ExpertWeightRef> &expertWeightRefs();

} // namespace disagmoe::schema
