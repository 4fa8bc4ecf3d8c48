// The plan's schema tables (PlanSchema.h): enum spellings and scalar fields, read by parsePlan and
// written by writePlan. Add a scalar field here, once.
#include "runtime/plan/PlanSchema.h"

namespace disagmoe::schema {

const char *const kComponentKinds[8] = {"embedding", "rms_norm", "attention", "router",
                                        "experts",   "head",     "dense_ffn", "mla_attention"};
const char *const kNormRoles[4] = {"none", "attn_norm", "ffn_norm", "final_norm"};
const char *const kGroupRoles[2] = {"attention", "ffn"};
const char *const kStreams[3] = {"forward", "backward", "comm"};
const char *const kExchangeKinds[5] = {"m2n", "n2m", "residual", "embedding", "head"};
const char *const kOpCodes[18] = {
    "embed",         "rms_norm",      "attention",  "residual_add", "router",    "m2n_send",
    "residual_send", "residual_recv", "n2m_recv",   "head",         "m2n_recv",  "experts",
    "n2m_send",      "dense_ffn",     "embed_send", "embed_recv",   "head_send", "head_recv"};
const char *const kDenseFfnRoles[2] = {"dense", "shared"};
const char *const kActivations[6] = {"swiglu",    "swiglu_oai", "relu",
                                     "gelu_tanh", "silu",       "identity"};
const char *const kScorings[5] = {"softmax_topk_renorm", "softmax_topk", "topk_softmax",
                                  "sigmoid_group_topk_renorm", "sigmoid_group_topk"};

// ---- Node -----------------------------------------------------------------------------------

void Node::fail(const std::string &message) const {
  throw PlanError(file_ + ": " + (path_.empty() ? std::string("(top level)") : path_) + ": " +
                  message);
}

Node Node::operator[](const char *key) const {
  if (!value_.is_object())
    fail("expected an object, got " + describe());
  auto it = value_.find(key);
  if (it == value_.end())
    Node(file_, value_, child(key)).fail("missing");
  return Node(file_, *it, child(key));
}

size_t Node::size() const {
  if (!value_.is_array())
    fail("expected an array, got " + describe());
  return value_.size();
}

Node Node::operator[](size_t i) const {
  return Node(file_, value_.at(i), path_ + "[" + std::to_string(i) + "]");
}

int64_t Node::integer(int64_t lo, int64_t hi) const {
  if (!value_.is_number_integer())
    fail("expected an integer, got " + describe());
  if (value_.is_number_unsigned() && value_.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX))
    fail(describe() + " is out of range [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
  int64_t v = value_.get<int64_t>();
  if (v < lo || v > hi)
    fail(std::to_string(v) + " is out of range [" + std::to_string(lo) + ", " + std::to_string(hi) +
         "]");
  return v;
}

double Node::positiveNumber() const {
  if (!value_.is_number())
    fail("expected a number, got " + describe());
  double v = value_.get<double>();
  if (!(v > 0) || v > 1e30)
    fail(describe() + " must be a positive number");
  return v;
}

double Node::nonNegativeNumber() const {
  if (!value_.is_number())
    fail("expected a number, got " + describe());
  double v = value_.get<double>();
  if (!(v >= 0) || v > 1e30)
    fail(describe() + " must be a number >= 0");
  return v;
}

std::string Node::string() const {
  if (!value_.is_string())
    fail("expected a string, got " + describe());
  return value_.get<std::string>();
}

bool Node::boolean() const {
  if (!value_.is_boolean())
    fail("expected true or false, got " + describe());
  return value_.get<bool>();
}

size_t Node::choiceIndex(const char *const *names, size_t n) const {
  std::string s = string();
  for (size_t i = 0; i < n; ++i)
    if (s == names[i])
      return i;
  std::string expected;
  for (size_t i = 0; i < n; ++i)
    expected += (i ? ", " : "") + std::string(names[i]);
  fail("\"" + s + "\" is not one of " + expected);
}

std::string Node::describe() const {
  std::string kind = value_.is_null()      ? "null"
                     : value_.is_string()  ? "string"
                     : value_.is_boolean() ? "boolean"
                     : value_.is_number()  ? "number"
                     : value_.is_array()   ? "array"
                                           : "object";
  std::string text = value_.dump();
  if (text.size() > 40)
    text = text.substr(0, 37) + "...";
  return kind + " " + text;
}

// ---- field tables -----------------------------------------------------------------------------

namespace {
constexpr int64_t kMaxDim = int64_t{1} << 30;
using Opt = std::optional<json>;
} // namespace

// Row builders. `s` names the record in `lo`/`hi`/conditions, so a bound may depend on a field read
// before it (top_k <= num_experts).
#define DM_REQUIRED_INT(key, member, lo, hi)                                                       \
  {key, true, nullptr, [](const Node &f, S &s) { s.member = f.integer(lo, hi); },                  \
   [](const S &s) -> Opt { return s.member; }}
#define DM_POSITIVE(key, member, type)                                                             \
  {key, true, nullptr,                                                                             \
   [](const Node &f, S &s) { s.member = static_cast<type>(f.positiveNumber()); },                  \
   [](const S &s) -> Opt { return s.member; }}

const std::vector<Field<ModelSpec>> &modelFields() {
  using S = ModelSpec;
  static const std::vector<Field<S>> fields = {
      {"family", true, nullptr, [](const Node &f, S &s) { s.family = f.string(); },
       [](const S &s) -> Opt { return s.family; }},
      DM_REQUIRED_INT("vocab_size", vocabSize, 1, kMaxDim),
      DM_REQUIRED_INT("hidden_size", hiddenSize, 1, 1 << 20),
      DM_REQUIRED_INT("num_layers", numLayers, 1, 1 << 16),
      DM_REQUIRED_INT("num_heads", numHeads, 1, 1 << 12),
      {"num_kv_heads", true, nullptr,
       [](const Node &f, S &s) {
         s.numKvHeads = f.integer(1, s.numHeads);
         if (s.numHeads % s.numKvHeads != 0)
           f.fail(std::to_string(s.numKvHeads) + " does not divide num_heads " +
                  std::to_string(s.numHeads));
       },
       [](const S &s) -> Opt { return s.numKvHeads; }},
      {"head_dim", true, nullptr,
       [](const Node &f, S &s) {
         s.headDim = f.integer(2, 1 << 12);
         if (s.headDim % 2 != 0)
           f.fail(std::to_string(s.headDim) + " must be even (rotate-half RoPE)");
       },
       [](const S &s) -> Opt { return s.headDim; }},
      DM_POSITIVE("rope_theta", ropeTheta, double),
      DM_POSITIVE("rms_norm_eps", rmsNormEps, float),
      DM_REQUIRED_INT("num_experts", numExperts, 1, 1 << 16),
      DM_REQUIRED_INT("top_k", topK, 1, s.numExperts),
      DM_REQUIRED_INT("expert_hidden", expertHidden, 1, 1 << 20),
      {"router_scoring", true, nullptr,
       [](const Node &f, S &s) { s.routerScoring = f.choice<RouterScoring>(kScorings); },
       [](const S &s) -> Opt { return kScorings[static_cast<int>(s.routerScoring)]; }},
      // DeepSeek-V3's group-limited choice (RouterScoring.h RouterGroups); absent: 1, no groups.
      {"n_group", false, nullptr,
       [](const Node &f, S &s) {
         s.routerGroups.nGroup = f.integer(1, s.numExperts);
         if (s.routerGroups.nGroup > 1 && !isSigmoidScoring(s.routerScoring))
           f.fail("group-limited routing is defined for the sigmoid_group_topk scorings only, "
                  "not " +
                  std::string(kScorings[static_cast<int>(s.routerScoring)]));
         if (s.numExperts % s.routerGroups.nGroup != 0)
           f.fail(std::to_string(s.routerGroups.nGroup) + " does not divide num_experts " +
                  std::to_string(s.numExperts));
         if (s.routerGroups.nGroup > 1 && s.numExperts / s.routerGroups.nGroup < 2)
           f.fail("groups of " + std::to_string(s.numExperts / s.routerGroups.nGroup) +
                  " expert: a group's score is the sum of its top 2");
       },
       [](const S &s) -> Opt {
         return s.routerGroups.nGroup > 1 ? Opt(s.routerGroups.nGroup) : std::nullopt;
       }},
      {"topk_group", true, [](const S &s) { return s.routerGroups.nGroup > 1; },
       [](const Node &f, S &s) {
         s.routerGroups.topkGroup = f.integer(1, s.routerGroups.nGroup);
         const int64_t reach = s.routerGroups.topkGroup * (s.numExperts / s.routerGroups.nGroup);
         if (s.topK > reach)
           f.fail("top_k " + std::to_string(s.topK) + " exceeds the " + std::to_string(reach) +
                  " experts of the " + std::to_string(s.routerGroups.topkGroup) +
                  " kept group(s) of " + std::to_string(s.numExperts / s.routerGroups.nGroup));
       },
       [](const S &s) -> Opt { return s.routerGroups.topkGroup; }},
      DM_REQUIRED_INT("batch", batch, 1, kMaxDim),
      DM_REQUIRED_INT("seq_len", seqLen, 1, kMaxDim),
      // Informational (the dense_ffn components carry the width): shared experts per MoE layer.
      {"num_shared_experts", false, nullptr,
       [](const Node &f, S &s) { s.numSharedExperts = f.integer(0, 1 << 16); },
       [](const S &s) -> Opt { return s.numSharedExperts; }},
      // Multi-head latent attention sizes (DeepSeek-V2), present together, required by
      // mla_attention components.
      {"kv_lora_rank", false, nullptr,
       [](const Node &f, S &s) { s.kvLoraRank = f.integer(1, 1 << 20); },
       [](const S &s) -> Opt { return s.kvLoraRank > 0 ? Opt(s.kvLoraRank) : std::nullopt; }},
      {"qk_nope_head_dim", true, [](const S &s) { return s.kvLoraRank > 0; },
       [](const Node &f, S &s) { s.qkNopeHeadDim = f.integer(1, 1 << 12); },
       [](const S &s) -> Opt { return s.qkNopeHeadDim; }},
      {"qk_rope_head_dim", true, [](const S &s) { return s.kvLoraRank > 0; },
       [](const Node &f, S &s) {
         s.qkRopeHeadDim = f.integer(2, 1 << 12);
         if (s.qkRopeHeadDim % 2 != 0)
           f.fail("must be even (rotate-half RoPE)");
       },
       [](const S &s) -> Opt { return s.qkRopeHeadDim; }},
      {"v_head_dim", true, [](const S &s) { return s.kvLoraRank > 0; },
       [](const Node &f, S &s) { s.vHeadDim = f.integer(1, 1 << 12); },
       [](const S &s) -> Opt { return s.vHeadDim; }},
      // Scaled RoPE (YaRN, linear / NTK scaling): the frequencies one by one, head_dim/2 of them
      // (rope_theta stays informational), and YaRN's attention factor on cos and sin.
      {"rope_inv_freq", false, nullptr,
       [](const Node &f, S &s) {
         if (s.kvLoraRank > 0)
           f.fail("scaled RoPE frequencies with multi-head latent attention are not supported");
         if (static_cast<int64_t>(f.size()) != s.headDim / 2)
           f.fail(std::to_string(f.size()) +
                  " frequencies, expected head_dim / 2 = " + std::to_string(s.headDim / 2));
         s.ropeInvFreq.clear();
         for (size_t i = 0; i < f.size(); ++i)
           s.ropeInvFreq.push_back(static_cast<float>(f[i].positiveNumber()));
       },
       [](const S &s) -> Opt {
         return s.ropeInvFreq.empty() ? std::nullopt : Opt(json(s.ropeInvFreq));
       }},
      {"rope_attention_factor", false, nullptr,
       [](const Node &f, S &s) { s.ropeAttentionFactor = static_cast<float>(f.positiveNumber()); },
       [](const S &s) -> Opt {
         return s.ropeAttentionFactor == 1.0f ? std::nullopt : Opt(s.ropeAttentionFactor);
       }},
  };
  return fields;
}

namespace {
bool is(const Component &c, ComponentKind kind) { return c.kind == kind; }
} // namespace

const std::vector<Field<Component>> &componentFields() {
  using S = Component;
  using K = ComponentKind;
  static const std::vector<Field<S>> fields = {
      {"role", true, [](const S &s) { return is(s, K::RmsNorm); },
       [](const Node &f, S &s) {
         s.role = f.choice<NormRole>(kNormRoles);
         if (s.role == NormRole::None)
           f.fail("an rms_norm needs a role (attn_norm, ffn_norm, final_norm)");
       },
       [](const S &s) -> Opt { return kNormRoles[static_cast<int>(s.role)]; }},
      {"eps", true, [](const S &s) { return is(s, K::RmsNorm); },
       [](const Node &f, S &s) { s.eps = static_cast<float>(f.positiveNumber()); },
       [](const S &s) -> Opt { return s.eps; }},
      {"role", true, [](const S &s) { return is(s, K::DenseFfn); },
       [](const Node &f, S &s) { s.denseRole = f.choice<DenseFfnRole>(kDenseFfnRoles); },
       [](const S &s) -> Opt { return kDenseFfnRoles[static_cast<int>(s.denseRole)]; }},
      {"ffn_hidden", true, [](const S &s) { return is(s, K::DenseFfn); },
       [](const Node &f, S &s) { s.ffnHidden = f.integer(1, 1 << 20); },
       [](const S &s) -> Opt { return s.ffnHidden; }},
      // side "ffn": every F-rank of the layer's FFN group holds the weights (each runs its tokens).
      {"side", false, [](const S &s) { return is(s, K::DenseFfn); },
       [](const Node &f, S &s) {
         s.onFfnSide = f.choice<GroupRole>(kGroupRoles) == GroupRole::Ffn;
       },
       [](const S &s) -> Opt { return s.onFfnSide ? Opt("ffn") : std::nullopt; }},
      {"qk_norm_eps", false, [](const S &s) { return is(s, K::Attention); },
       [](const Node &f, S &s) { s.qkNormEps = static_cast<float>(f.positiveNumber()); },
       [](const S &s) -> Opt { return s.qNorm >= 0 ? Opt(s.qkNormEps) : std::nullopt; }},
      {"sliding_window", false, [](const S &s) { return is(s, K::Attention); },
       [](const Node &f, S &s) { s.slidingWindow = f.integer(1, kMaxDim); },
       [](const S &s) -> Opt { return s.slidingWindow > 0 ? Opt(s.slidingWindow) : std::nullopt; }},
      {"routed_scaling_factor", false, [](const S &s) { return is(s, K::Router); },
       [](const Node &f, S &s) { s.routedScalingFactor = static_cast<float>(f.positiveNumber()); },
       [](const S &s) -> Opt {
         return s.routedScalingFactor ? Opt(*s.routedScalingFactor) : std::nullopt;
       }},
      {"activation", false, [](const S &s) { return is(s, K::Experts); },
       [](const Node &f, S &s) { s.activation = f.choice<ExpertActivation>(kActivations); },
       [](const S &s) -> Opt {
         return s.activation != ExpertActivation::Swiglu
                    ? Opt(kActivations[static_cast<int>(s.activation)])
                    : std::nullopt;
       }},
      {"swiglu_limit", true,
       [](const S &s) { return is(s, K::Experts) && s.activation == ExpertActivation::SwigluOai; },
       [](const Node &f, S &s) { s.swigluLimit = static_cast<float>(f.positiveNumber()); },
       [](const S &s) -> Opt { return s.swigluLimit; }},
      {"swiglu_alpha", true,
       [](const S &s) { return is(s, K::Experts) && s.activation == ExpertActivation::SwigluOai; },
       [](const Node &f, S &s) { s.swigluAlpha = static_cast<float>(f.positiveNumber()); },
       [](const S &s) -> Opt { return s.swigluAlpha; }},
      {"fused_gate_up", false, [](const S &s) { return is(s, K::Experts); },
       [](const Node &f, S &s) {
         s.fusedGateUp = f.boolean();
         if (s.fusedGateUp && !isGated(s.activation))
           f.fail("a non-gated activation has no gate/up pair to fuse");
       },
       [](const S &s) -> Opt { return s.fusedGateUp ? Opt(true) : std::nullopt; }},
      {"kv_norm_eps", true, [](const S &s) { return is(s, K::MlaAttention); },
       [](const Node &f, S &s) { s.kvNormEps = static_cast<float>(f.positiveNumber()); },
       [](const S &s) -> Opt { return s.kvNormEps; }},
      {"softmax_scale", true, [](const S &s) { return is(s, K::MlaAttention); },
       [](const Node &f, S &s) { s.softmaxScale = static_cast<float>(f.positiveNumber()); },
       [](const S &s) -> Opt { return s.softmaxScale; }},
      // GPT-J's RoPE pairs: MLA writes it always, standard attention only where it is set.
      {"rope_interleaved", false,
       [](const S &s) { return is(s, K::MlaAttention) || is(s, K::Attention); },
       [](const Node &f, S &s) { s.ropeInterleaved = f.boolean(); },
       [](const S &s) -> Opt {
         if (is(s, K::Attention) && !s.ropeInterleaved)
           return std::nullopt;
         return s.ropeInterleaved;
       }},
  };
  return fields;
}

const std::vector<Field<WeightSpec>> &weightFields() {
  using S = WeightSpec;
  static const std::vector<Field<S>> fields = {
      {"name", true, nullptr,
       [](const Node &f, S &s) {
         s.name = f.string();
         if (s.name.empty())
           f.fail("empty name");
       },
       [](const S &s) -> Opt { return s.name; }},
      {"dtype", true, nullptr,
       [](const Node &f, S &s) {
         s.dtype = f.string();
         if (weightDtypeBytes(s.dtype) == 0)
           f.fail("\"" + s.dtype +
                  "\" is not supported (version 1 reads float32, float16 or bfloat16)");
       },
       [](const S &s) -> Opt { return s.dtype; }},
      {"shape", true, nullptr,
       [](const Node &f, S &s) {
         if (f.size() == 0)
           f.fail("a weight needs at least one dimension");
         for (size_t d = 0; d < f.size(); ++d)
           s.shape.push_back(f[d].integer(1, kMaxDim));
       },
       [](const S &s) -> Opt { return s.shape; }},
      {"transposed", false, nullptr,
       [](const Node &f, S &s) {
         s.transposed = f.boolean();
         if (s.transposed && s.shape.size() != 2)
           f.fail("only 2-D weights can be transposed; shape has " +
                  std::to_string(s.shape.size()) + " dimensions");
       },
       [](const S &s) -> Opt { return s.transposed; }},
      {"file", true, nullptr,
       [](const Node &f, S &s) {
         s.file = f.string();
         if (s.file.empty())
           f.fail("empty file name");
       },
       [](const S &s) -> Opt { return s.file; }},
      {"offset", true, nullptr,
       [](const Node &f, S &s) { s.offset = static_cast<uint64_t>(f.integer(0, INT64_MAX)); },
       [](const S &s) -> Opt { return s.offset; }},
      {"length", true, nullptr,
       [](const Node &f, S &s) { s.length = static_cast<uint64_t>(f.integer(0, INT64_MAX)); },
       [](const S &s) -> Opt { return s.length; }},
      {"row_stride", false, nullptr,
       [](const Node &f, S &s) {
         s.rowStride = static_cast<uint64_t>(f.integer(1, INT64_MAX));
         if (s.shape.size() != 2 || s.transposed)
           f.fail("only a 2-D weight read as stored can have a row stride");
         const uint64_t row = static_cast<uint64_t>(s.shape[1]) * weightDtypeBytes(s.dtype);
         if (s.rowStride < row)
           f.fail(std::to_string(s.rowStride) + " bytes is less than a row's " +
                  std::to_string(row));
       },
       [](const S &s) -> Opt { return s.rowStride ? Opt(s.rowStride) : std::nullopt; }},
  };
  return fields;
}

const std::vector<Field<ExchangeSpec>> &exchangeFields() {
  using S = ExchangeSpec;
  static const std::vector<Field<S>> fields = {
      {"id", true, nullptr, [](const Node &f, S &s) { s.id = f.string(); },
       [](const S &s) -> Opt { return s.id; }},
      {"kind", true, nullptr,
       [](const Node &f, S &s) { s.kind = f.choice<ExchangeKind>(kExchangeKinds); },
       [](const S &s) -> Opt { return kExchangeKinds[static_cast<int>(s.kind)]; }},
      DM_REQUIRED_INT("capacity_tokens", capacityTokens, 1, kMaxDim),
      DM_REQUIRED_INT("bytes_per_token", bytesPerToken, 1, INT64_MAX),
      // Expected F-ranks a token reaches under uniform routing (exchange-volume; the simulator's).
      {"expected_destinations_per_token", false, nullptr,
       [](const Node &f, S &s) { s.expectedDestinationsPerToken = f.nonNegativeNumber(); },
       [](const S &s) -> Opt {
         return s.expectedDestinationsPerToken ? Opt(*s.expectedDestinationsPerToken)
                                               : std::nullopt;
       }},
  };
  return fields;
}

#undef DM_REQUIRED_INT
#undef DM_POSITIVE

const std::vector<WeightRef> &componentWeightRefs() {
  using C = Component;
  using K = ComponentKind;
  static const std::vector<WeightRef> refs = {
      {"weight", &C::weight, K::Embedding},
      {"weight", &C::weight, K::RmsNorm},
      {"weight", &C::weight, K::Router},
      {"bias", &C::bias, K::Router},
      {"correction_bias", &C::correctionBias, K::Router},
      {"weight", &C::weight, K::Head},
      {"wq", &C::wq, K::Attention},
      {"wk", &C::wk, K::Attention},
      {"wv", &C::wv, K::Attention},
      {"wo", &C::wo, K::Attention},
      {"bq", &C::bq, K::Attention},
      {"bk", &C::bk, K::Attention},
      {"bv", &C::bv, K::Attention},
      {"bo", &C::bo, K::Attention},
      {"q_norm", &C::qNorm, K::Attention},
      {"k_norm", &C::kNorm, K::Attention},
      {"sinks", &C::sinks, K::Attention},
      {"w1", &C::w1, K::DenseFfn},
      {"w3", &C::w3, K::DenseFfn},
      {"w2", &C::w2, K::DenseFfn},
      {"wq", &C::wq, K::MlaAttention},
      {"wkv_a", &C::wkvA, K::MlaAttention},
      {"kv_norm", &C::kvNorm, K::MlaAttention},
      {"wkv_b", &C::wkvB, K::MlaAttention},
      {"wo", &C::wo, K::MlaAttention},
  };
  return refs;
}

const std::vector<ExpertWeightRef> &expertWeightRefs() {
  using E = ExpertWeights;
  static const std::vector<ExpertWeightRef> refs = {{"w1", &E::w1}, {"w3", &E::w3}, {"w2", &E::w2},
                                                    {"b1", &E::b1}, {"b3", &E::b3}, {"b2", &E::b2}};
  return refs;
}

} // namespace disagmoe::schema
