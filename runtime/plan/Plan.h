// The plan (`plan.json`, schema "disagmoe-plan" version 1; docs/plan-format.md): what
// `disagmoe compile` builds and writes (writePlan) and the executor runs. loadPlan parses AND
// validates it completely, so the executor never meets an inconsistent plan. The schema (keys,
// enum spellings, scalar fields) is defined once, in PlanSchema.cpp, for both directions.
//
// Errors: every problem is a PlanError with one line "<plan path>: <json.field.path>: <problem>",
// e.g. "plan.json: model.weights[12].length: 4096 does not match shape [64,128] float32 (32768
// bytes)".
#pragma once

#include "runtime/plan/PlanFormat.h"
#include "runtime/plan/RouterScoring.h"
#include "runtime/plan/Schedule.h"

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace disagmoe {

class PlanError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

enum class ComponentKind {
  Embedding,
  RmsNorm,
  Attention,
  Router,
  Experts,
  Head,
  DenseFfn,
  MlaAttention
};
/// What a `dense_ffn` component is: the whole FFN of a dense layer, or a layer's shared experts.
enum class DenseFfnRole { Dense, Shared };
/// The experts' activation: SwiGLU, GPT-OSS's clamped SwiGLU (limit, alpha, up + 1), or one of the
/// non-gated forms of onnxruntime's com.microsoft.MoE (w1 -> act -> w2, no w3): relu, gelu_tanh
/// (tanh-approximated GELU), silu, identity (runtime/backends/cpu/FamilyKernels.h).
enum class ExpertActivation { Swiglu, SwigluOai, Relu, GeluTanh, Silu, Identity };
/// True for the gated forms (Swiglu, SwigluOai), which have a w3 (or a fused gate/up w1).
inline bool isGated(ExpertActivation a) {
  return a == ExpertActivation::Swiglu || a == ExpertActivation::SwigluOai;
}
enum class NormRole { None, AttnNorm, FfnNorm, FinalNorm };
enum class GroupRole { Attention, Ffn };
enum class Stream { Forward, Backward, Comm };
/// Embedding / Head: x_0 from the embedding's FFN group to the A-ranks, x_L from the A-ranks to the
/// head's FFN group (only with placement.embedding_side / head_side "ffn").
enum class ExchangeKind { M2n, N2m, Residual, Embedding, Head };
enum class OpCode {
  // attention role
  Embed,
  RmsNorm,
  Attention,
  ResidualAdd,
  Router,
  M2nSend,
  ResidualSend,
  ResidualRecv,
  N2mRecv,
  Head,
  // ffn role
  M2nRecv,
  Experts,
  N2mSend,
  // model families: FFN(ffn_norm output) of a dense layer or shared experts; in the attention
  // program it adds onto h, in the ffn program (side "ffn") onto the N2M vectors
  DenseFfn,
  // FFN-side embedding and head (placement.embedding_side / head_side "ffn"): the F-ranks send
  // x_0 (embed_send) to the A-ranks (embed_recv); the A-ranks send x_L (head_send) to them
  // (head_recv)
  EmbedSend,
  EmbedRecv,
  HeadSend,
  HeadRecv,
};

/// The JSON spellings ("rms_norm", "ffn_norm", "m2n", ...).
const char *toString(ComponentKind kind);
const char *toString(NormRole role);
const char *toString(GroupRole role);
const char *toString(ExchangeKind kind);
const char *toString(OpCode op);
const char *toString(DenseFfnRole role);

/// Bytes per element of a weight dtype of the plan format: 4 for "float32", 2 for "float16" (IEEE
/// 754 binary16) and "bfloat16" (the high half of a float32); 0 for any other name.
inline uint64_t weightDtypeBytes(const std::string &dtype) {
  if (dtype == "float32")
    return 4;
  return dtype == "float16" || dtype == "bfloat16" ? 2 : 0;
}

/// One entry of `model.weights`: where a weight's bytes are and which ranks hold it.
struct WeightSpec {
  std::string name;
  std::string dtype;          ///< "float32", "float16" or "bfloat16" (converted to fp32 on load)
  std::vector<int64_t> shape; ///< logical shape; linear weights are [in, out]
  bool transposed = false;    ///< bytes on disk are the 2-D transpose of `shape` ([out, in])
  std::string file;           ///< as written in plan.json
  std::string path;           ///< `file` resolved against the plan's directory
  uint64_t offset = 0;        ///< bytes into `path`
  uint64_t length = 0;        ///< bytes; == numel(shape) * weightDtypeBytes(dtype)
  uint64_t rowStride = 0;     ///< 0: dense; else a 2-D window, row r at offset + r * rowStride
  std::vector<int> ranks;     ///< global ranks holding it, ascending
};

/// One expert's weights, as indices into ModelSpec::weights.
struct ExpertWeights {
  int64_t expert = 0;
  int w1 = -1, w3 = -1,
      w2 = -1; ///< w3 is -1 with fusedGateUp (w1 then holds [hidden, 2*expert_hidden])
  int b1 = -1, b3 = -1, b2 = -1; ///< optional biases
};

/// One entry of `model.components`. Weight fields are indices into ModelSpec::weights; unused ones
/// are -1.
struct Component {
  ComponentKind kind = ComponentKind::Embedding;
  int64_t layer = -1; ///< -1 for embedding, final norm and head
  NormRole role = NormRole::None;
  float eps = 0;   ///< rms_norm only
  int weight = -1; ///< embedding [vocab,hidden], rms_norm [hidden], router [hidden,experts], head
                   ///< [hidden,vocab]
  int wq = -1, wk = -1, wv = -1, wo = -1; ///< attention
  std::vector<ExpertWeights> experts;     ///< experts: all num_experts, ascending expert id

  // Optional parts of the model families (docs/plan-format.md); -1 / 0 when absent.
  int bq = -1, bk = -1, bv = -1, bo = -1; ///< attention projection biases
  int qNorm = -1, kNorm = -1;             ///< attention: per-head q/k RMSNorm weights [head_dim]
  float qkNormEps = 0;
  int sinks = -1;            ///< attention: per-head sink logits [heads]
  int64_t slidingWindow = 0; ///< attention: 0 = full causal
  int bias = -1;             ///< router: logits bias [experts]
  /// router: DeepSeek-V3's e_score_correction_bias [experts], added to the scores for the choice
  /// only; a buffer, not trained (no gradient, no optimizer step)
  int correctionBias = -1;
  std::optional<float> routedScalingFactor; ///< router: gates multiplied by this (DeepSeek)
  ExpertActivation activation = ExpertActivation::Swiglu; ///< experts
  float swigluLimit = 0, swigluAlpha = 0;                 ///< experts, SwigluOai
  bool fusedGateUp = false;                     ///< experts: w1 = interleaved [gate|up] columns
  DenseFfnRole denseRole = DenseFfnRole::Dense; ///< dense_ffn
  int64_t ffnHidden = 0;                        ///< dense_ffn: inner width
  int w1 = -1, w3 = -1, w2 = -1;                ///< dense_ffn weights
  /// dense_ffn `side`: false (attention, default) runs it on the A-ranks of the layer's attention
  /// group; true ("ffn") on the F-ranks of its FFN group, each token on F-rank (sequence mod D_F).
  bool onFfnSide = false;
  // mla_attention (DeepSeek-V2): wq as above, wo [heads*v_head_dim, hidden]
  int wkvA = -1, kvNorm = -1, wkvB = -1;
  float kvNormEps = 0, softmaxScale = 0;
  /// attention, mla_attention: RoPE rotates GPT-J's pairs (2i, 2i+1), not the halves
  /// (runtime/tensor/RopePairs.h)
  bool ropeInterleaved = false;
};

/// Component indices of one layer (into ModelSpec::components).
struct LayerComponents {
  int attnNorm = -1, attention = -1, ffnNorm = -1, router = -1, experts = -1;
  int denseFfn = -1;  ///< dense layers: the dense FFN (no router, experts or M2N/N2M)
  int sharedFfn = -1; ///< MoE layers with shared experts
  bool dense = false; ///< listed in model.dense_layers
  /// The dense FFN / shared experts run on the FFN side (their dense_ffn has side "ffn").
  bool denseOnFfn = false, sharedOnFfn = false;
  /// Whether the layer has an FFN stage, hence M2N/N2M and ffn-role instructions: every MoE layer,
  /// and a dense layer whose FFN runs on the FFN side.
  bool hasFfnStage() const { return !dense || denseOnFfn; }
};

struct ModelSpec {
  std::string family;
  int64_t vocabSize = 0, hiddenSize = 0, numLayers = 0;
  int64_t numHeads = 0, numKvHeads = 0, headDim = 0;
  double ropeTheta = 0;
  /// Scaled RoPE (YaRN, linear / NTK scaling): the head_dim/2 frequencies, used instead of
  /// theta^(-2i/head_dim) when not empty, and YaRN's attention factor on cos and sin.
  std::vector<float> ropeInvFreq;
  float ropeAttentionFactor = 1.0f;
  float rmsNormEps = 0;
  int64_t numExperts = 0, topK = 0, expertHidden = 0;
  RouterScoring routerScoring = RouterScoring::SoftmaxTopkRenorm;
  RouterGroups routerGroups;     ///< `n_group`, `topk_group` (sigmoid_group_topk scorings)
  int64_t batch = 0, seqLen = 0; ///< the compiled shape
  int64_t numSharedExperts = 0;  ///< informational: shared experts per MoE layer
  /// Multi-head latent attention (optional model fields; 0 when the model has no MLA).
  int64_t qkNopeHeadDim = 0, qkRopeHeadDim = 0, vHeadDim = 0, kvLoraRank = 0;
  std::vector<Component> components;
  std::vector<WeightSpec> weights;

  // Lookups filled by validation (indices into `components`).
  int embedding = -1, finalNorm = -1, head = -1;
  std::vector<LayerComponents> layers; ///< [numLayers]
};

struct Group {
  GroupRole role = GroupRole::Attention;
  int64_t index = 0; ///< 0..n-1 within its role
  std::vector<int>
      ranks; ///< global ranks, strictly ascending; a rank's position is its index in the group
  std::vector<int64_t> layers; ///< layers whose attention (or FFN) part this group runs
};

struct Placement {
  int worldSize = 0;
  std::vector<Group> groups;                  ///< as listed in plan.json
  std::vector<std::vector<int>> expertToRank; ///< [numLayers][numExperts] global F-rank
  int64_t embeddingGroup = 0, headGroup = 0;  ///< group indices of the embedding's / head's side
  /// embedding_side / head_side "ffn": the embedding / final norm and head run on FFN group
  /// embeddingGroup / headGroup (docs/plan-format.md, "FFN-side embedding and head").
  bool embeddingOnFfn = false, headOnFfn = false;

  // Lookups filled by validation (positions in `groups`).
  std::vector<int> attentionGroups, ffnGroups; ///< by group index
  std::vector<int> layerAttention, layerFfn;   ///< [numLayers]: the group running layer l
  std::vector<int> groupOfRank;                ///< [worldSize]

  /// D_A: the size shared by all attention groups.
  int64_t attentionSize() const;
  const Group &attentionGroupOfLayer(int64_t layer) const { return groups[layerAttention[layer]]; }
  const Group &ffnGroupOfLayer(int64_t layer) const { return groups[layerFfn[layer]]; }
  /// The attention group that receives layer `layer`'s output (residual and N2M): the group running
  /// layer+1, or after the last layer the head group (head on the FFN side: the attention group
  /// running layer 0, which sends x_L on). With interleaved layers that is (layer+1) mod p.
  const Group &nextAttentionGroup(int64_t layer) const;
  /// The groups that run the embedding and the final norm + head (either side).
  const Group &embeddingRunner() const {
    return groups[(embeddingOnFfn ? ffnGroups : attentionGroups)[embeddingGroup]];
  }
  const Group &headRunner() const {
    return groups[(headOnFfn ? ffnGroups : attentionGroups)[headGroup]];
  }
  const Group &groupOf(int rank) const { return groups[groupOfRank[rank]]; }
  /// Position of `rank` within its group.
  int64_t indexInGroup(int rank) const;
};

/// One instruction of a role's program. `layer` is -1 for embed, final norm and head.
struct Instruction {
  OpCode op = OpCode::Embed;
  int64_t layer = -1;
  NormRole role = NormRole::None; ///< rms_norm only
  Stream stream = Stream::Forward;
};

struct Programs {
  std::vector<Instruction> attention, ffn;
};

/// One entry of `exchanges`: the capacity bound of one message kind of one layer.
struct ExchangeSpec {
  std::string id;
  ExchangeKind kind = ExchangeKind::M2n;
  int64_t layer = 0;
  int64_t srcGroup = 0,
          dstGroup = 0;       ///< group indices (m2n: attention -> ffn; n2m: ffn -> attention)
  int64_t capacityTokens = 0; ///< most tokens in any one message of this exchange
  int64_t bytesPerToken = 0;  ///< most payload bytes per token (see bytesPerTokenOf)
  /// F-ranks a token reaches on average under uniform routing (m2n; exchange-volume).
  std::optional<double> expectedDestinationsPerToken;
};

/// `memory.ranks`: per global rank, the stated weight bytes (checked against the manifest) and the
/// compiler's activation estimate at the compiled shape (optional; printed, not checked).
struct MemorySpec {
  std::vector<uint64_t> weightBytes;                    ///< [worldSize]
  std::vector<std::optional<uint64_t>> activationBytes; ///< [worldSize]
};

/// One entry of `files`: a weight file as the compiler saw it, so that a model overwritten after
/// compiling is refused at load.
struct WeightFileStamp {
  std::string path;    ///< as written (absolute from the compiler)
  int64_t size = 0;    ///< bytes
  int64_t mtimeNs = 0; ///< modification time, ns since the Unix epoch
};

struct Plan {
  std::string path; ///< the plan.json path as given (not written)
  std::string dir;  ///< its directory, against which weight files resolve (not written)
  std::string source;
  /// The compiler that wrote the plan, "disagmoe 0.6.0 (commit abc1234)" (versionLine of
  /// runtime/version/Version.h); empty in plans written before it was recorded. planToJson writes
  /// the running binary's line when empty.
  std::string producer;
  std::vector<WeightFileStamp> files;
  ModelSpec model;
  Placement placement;
  Programs programs;
  std::vector<ExchangeSpec> exchanges;
  MemorySpec memory;
  /// The optional `schedule` section (AF-Pipe training schedule), verified at load
  /// (PlanSchedule.h).
  std::optional<sched::Schedule> schedule;

  /// The exchange of `kind` for `layer` (validation guarantees exactly one).
  const ExchangeSpec &exchange(ExchangeKind kind, int64_t layer) const;
};

/// Bytes per token the messages of an exchange carry besides their 8-byte count:
/// m2n: 8 (token id) + 4*hidden (x) + 8 (n_local) + top_k * 12 (expert id, gate);
/// n2m, residual, embedding and head: 8 (token id) + 4*hidden.
int64_t bytesPerTokenOf(ExchangeKind kind, int64_t hiddenSize, int64_t topK);

/// Loads `planDirOrJson` (a directory holding plan.json, or the JSON file itself), validates every
/// field, checks that each weight's file exists and holds offset+length bytes, and that
/// memory.weight_bytes matches the manifest. Throws PlanError.
Plan loadPlan(const std::string &planDirOrJson);

/// Same, from JSON text; `planPath` names the plan in messages and anchors relative weight files.
Plan parsePlan(const std::string &jsonText, const std::string &planPath);

/// The JSON text of `plan` (PlanWriter.cpp): every field parsePlan reads, keys sorted, two-space
/// indent, a final newline; the model's informational summary (family flags, dense and shared
/// widths, sliding-window layers, ...) derived from the components. parsePlan(planToJson(p)) gives
/// a plan whose planToJson is byte-identical. Never throws except std::bad_alloc.
std::string planToJson(const Plan &plan);

/// Writes planToJson(plan) to `<dir>/plan.json` atomically (a temporary file in `dir`, then
/// rename), creating `dir` when missing. On failure returns one line naming the path and the
/// reason, and leaves no temporary file and no directory it created; on success returns "".
/// Refuses to replace a plan.json that is not a regular file (a link, a device). Never throws.
std::string writePlan(const Plan &plan, const std::string &dir) noexcept;

} // namespace disagmoe
