// loadPlan: parses and fully validates plan.json, one-line PlanErrors (Plan.h).
#include "runtime/plan/Plan.h"
#include "runtime/io/JsonError.h"
#include "runtime/plan/PlanSchedule.h"
#include "runtime/plan/PlanSchema.h"

#include "runtime/tensor/Tensor.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <sys/stat.h>

namespace disagmoe {

using json = nlohmann::json;

const char *toString(ComponentKind kind) { return schema::kComponentKinds[static_cast<int>(kind)]; }
const char *toString(NormRole role) { return schema::kNormRoles[static_cast<int>(role)]; }
const char *toString(GroupRole role) { return schema::kGroupRoles[static_cast<int>(role)]; }
const char *toString(ExchangeKind kind) { return schema::kExchangeKinds[static_cast<int>(kind)]; }
const char *toString(OpCode op) { return schema::kOpCodes[static_cast<int>(op)]; }
const char *toString(DenseFfnRole role) { return schema::kDenseFfnRoles[static_cast<int>(role)]; }

int64_t Placement::attentionSize() const {
  return static_cast<int64_t>(groups[attentionGroups[0]].ranks.size());
}

const Group &Placement::nextAttentionGroup(int64_t layer) const {
  if (layer + 1 < static_cast<int64_t>(layerAttention.size()))
    return groups[layerAttention[layer + 1]];
  return headOnFfn ? groups[layerAttention[0]] : groups[attentionGroups[headGroup]];
}

int64_t Placement::indexInGroup(int rank) const {
  const auto &ranks = groupOf(rank).ranks;
  return std::lower_bound(ranks.begin(), ranks.end(), rank) - ranks.begin();
}

const ExchangeSpec &Plan::exchange(ExchangeKind kind, int64_t layer) const {
  for (const auto &e : exchanges)
    if (e.kind == kind && e.layer == layer)
      return e;
  throw PlanError(path + ": exchanges: no " + toString(kind) + " exchange for layer " +
                  std::to_string(layer));
}

int64_t bytesPerTokenOf(ExchangeKind kind, int64_t hiddenSize, int64_t topK) {
  const int64_t rows = 8 + 4 * hiddenSize;
  return kind == ExchangeKind::M2n ? rows + 8 + 12 * topK : rows;
}

namespace {

using schema::Node;
using namespace schema; // the enum spellings (kOpCodes, ...)

std::string joinRanks(const std::vector<int> &ranks) {
  std::string s;
  for (size_t i = 0; i < ranks.size(); ++i)
    s += (i ? "," : "") + std::to_string(ranks[i]);
  return s;
}

bool isExchangeOp(OpCode op) {
  return op == OpCode::M2nSend || op == OpCode::ResidualSend || op == OpCode::ResidualRecv ||
         op == OpCode::N2mRecv || op == OpCode::M2nRecv || op == OpCode::N2mSend ||
         op == OpCode::EmbedSend || op == OpCode::EmbedRecv || op == OpCode::HeadSend ||
         op == OpCode::HeadRecv;
}

bool isFfnOp(OpCode op) {
  return op == OpCode::M2nRecv || op == OpCode::Experts || op == OpCode::N2mSend ||
         op == OpCode::EmbedSend || op == OpCode::HeadRecv;
}

/// Instructions that a dense layer (model.dense_layers) does not have: it has no router, experts
/// or M2N/N2M exchanges.
bool isMoeOnlyOp(OpCode op) {
  return op == OpCode::Router || op == OpCode::M2nSend || op == OpCode::N2mRecv || isFfnOp(op);
}

class Parser {
public:
  Parser(Plan &plan, const json &root) : plan_(plan), root_(plan.path, root, "") {}

  // `files` (optional; plans compiled before it have none): each weight file's size and
  // modification time at compile time. A model overwritten since would feed another model's bytes
  // to the recorded offsets, so a difference is an error naming the file.
  void checkWeightFiles() {
    if (!root_.has("files"))
      return;
    Node files = root_["files"];
    for (size_t i = 0; i < files.size(); ++i) {
      Node f = files[i];
      const std::string file = f["path"].string();
      const std::string path = std::filesystem::path(file).is_absolute()
                                   ? file
                                   : (std::filesystem::path(plan_.dir) / file).string();
      const int64_t size = f["size"].integer(0, INT64_MAX);
      const int64_t mtimeNs = f["mtime_ns"].integer(INT64_MIN, INT64_MAX);
      plan_.files.push_back({file, size, mtimeNs});
      struct stat st;
      if (::stat(path.c_str(), &st) != 0)
        f["path"].fail("weight file \"" + path + "\": cannot open: " + std::strerror(errno));
      const int64_t nowNs =
          static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
      if (static_cast<int64_t>(st.st_size) != size || nowNs != mtimeNs)
        f["path"].fail("weight file \"" + path + "\" changed since the plan was compiled (size " +
                       std::to_string(st.st_size) + " bytes, was " + std::to_string(size) +
                       "; modification time " + (nowNs == mtimeNs ? "unchanged" : "differs") +
                       "): recompile the plan with disagmoe compile");
    }
  }

  void parse() {
    if (!root_.raw().is_object())
      root_.fail("expected a JSON object, got " + root_.describe());
    std::string format = root_["format"].string();
    if (format != kPlanFormat)
      root_["format"].fail("\"" + format + "\" is not a disagmoe plan (expected \"" + kPlanFormat +
                           "\")");
    int64_t version = root_["version"].integer(INT64_MIN, INT64_MAX);
    if (version != kPlanVersion)
      root_["version"].fail(std::to_string(version) +
                            " is not supported (this runtime reads version " +
                            std::to_string(kPlanVersion) + ")");
    plan_.source = root_["source"].string();
    if (root_.has("producer"))
      plan_.producer = root_["producer"].string();
    checkWeightFiles();
    parseHyperParameters(root_["model"]);
    parsePlacement(root_["placement"]);
    parseWeights(root_["model"]["weights"]);
    parseComponents(root_["model"]["components"]);
    parsePrograms(root_["programs"]);
    parseExchanges(root_["exchanges"]);
    parseMemory(root_["memory"]);
    parseScheduleSection(plan_,
                         root_.raw()); // last: it checks the schedule against the sections above
  }

private:
  void parseHyperParameters(const Node &n) {
    ModelSpec &m = plan_.model;
    readFields(n, modelFields(), m);
    if (m.kvLoraRank > 0 && m.headDim != m.qkNopeHeadDim + m.qkRopeHeadDim)
      n["head_dim"].fail(std::to_string(m.headDim) +
                         ", but an MLA model's head_dim is qk_nope_head_dim + "
                         "qk_rope_head_dim = " +
                         std::to_string(m.qkNopeHeadDim + m.qkRopeHeadDim));
    // Optional: layers whose FFN is dense (no router, experts, M2N or N2M).
    m.layers.assign(m.numLayers, LayerComponents{});
    if (n.has("dense_layers")) {
      Node dense = n["dense_layers"];
      for (size_t i = 0; i < dense.size(); ++i) {
        int64_t l = dense[i].integer(0, m.numLayers - 1);
        if (m.layers[l].dense)
          dense[i].fail("layer " + std::to_string(l) + " is listed twice");
        m.layers[l].dense = true;
      }
      if (dense.size() == static_cast<size_t>(m.numLayers))
        dense.fail("every layer is dense: no MoE layer");
    }
  }

  void parsePlacement(const Node &n) {
    Placement &p = plan_.placement;
    const int64_t layers = plan_.model.numLayers;
    p.worldSize = static_cast<int>(n["world_size"].integer(2, 1 << 20));
    p.groupOfRank.assign(p.worldSize, -1);
    p.layerAttention.assign(layers, -1);
    p.layerFfn.assign(layers, -1);
    Node groups = n["groups"];
    for (size_t gi = 0; gi < groups.size(); ++gi) {
      Node g = groups[gi];
      Group group;
      group.role = g["role"].choice<GroupRole>(kGroupRoles);
      group.index = g["index"].integer(0, p.worldSize - 1);
      auto &byIndex = group.role == GroupRole::Attention ? p.attentionGroups : p.ffnGroups;
      if (byIndex.size() <= static_cast<size_t>(group.index))
        byIndex.resize(group.index + 1, -1);
      if (byIndex[group.index] != -1)
        g["index"].fail(std::string(toString(group.role)) + " group " +
                        std::to_string(group.index) + " is already placement.groups[" +
                        std::to_string(byIndex[group.index]) + "]");
      byIndex[group.index] = static_cast<int>(gi);

      Node ranks = g["ranks"];
      if (ranks.size() == 0)
        ranks.fail("a group needs at least one rank");
      for (size_t i = 0; i < ranks.size(); ++i) {
        int r = static_cast<int>(ranks[i].integer(0, p.worldSize - 1));
        if (!group.ranks.empty() && r <= group.ranks.back())
          ranks[i].fail("ranks must be strictly ascending");
        if (p.groupOfRank[r] != -1)
          ranks[i].fail("rank " + std::to_string(r) + " is already in placement.groups[" +
                        std::to_string(p.groupOfRank[r]) + "]");
        p.groupOfRank[r] = static_cast<int>(gi);
        group.ranks.push_back(r);
      }

      Node groupLayers = g["layers"];
      auto &layerGroup = group.role == GroupRole::Attention ? p.layerAttention : p.layerFfn;
      for (size_t i = 0; i < groupLayers.size(); ++i) {
        int64_t l = groupLayers[i].integer(0, layers - 1);
        if (layerGroup[l] != -1)
          groupLayers[i].fail("layer " + std::to_string(l) + " already runs on placement.groups[" +
                              std::to_string(layerGroup[l]) + "]");
        layerGroup[l] = static_cast<int>(gi);
        group.layers.push_back(l);
      }
      p.groups.push_back(std::move(group));
    }
    for (int r = 0; r < p.worldSize; ++r)
      if (p.groupOfRank[r] == -1)
        groups.fail("rank " + std::to_string(r) + " is in no group");
    for (GroupRole role : {GroupRole::Attention, GroupRole::Ffn}) {
      const auto &byIndex = role == GroupRole::Attention ? p.attentionGroups : p.ffnGroups;
      if (byIndex.empty())
        groups.fail(std::string("no ") + toString(role) + " group");
      for (size_t i = 0; i < byIndex.size(); ++i)
        if (byIndex[i] == -1)
          groups.fail(std::string(toString(role)) + " group indices must be 0..n-1; index " +
                      std::to_string(i) + " is missing");
    }
    for (size_t i = 1; i < p.attentionGroups.size(); ++i)
      if (p.groups[p.attentionGroups[i]].ranks.size() !=
          p.groups[p.attentionGroups[0]].ranks.size())
        groups[p.attentionGroups[i]]["ranks"].fail(
            "attention group " + std::to_string(i) + " has " +
            std::to_string(p.groups[p.attentionGroups[i]].ranks.size()) +
            " ranks, attention group 0 has " +
            std::to_string(p.groups[p.attentionGroups[0]].ranks.size()) +
            " (all attention groups have the same size)");
    for (int64_t l = 0; l < layers; ++l) {
      if (p.layerAttention[l] == -1)
        groups.fail("no attention group runs layer " + std::to_string(l));
      if (p.layerFfn[l] == -1)
        groups.fail("no ffn group runs layer " + std::to_string(l));
    }

    Node e2r = n["expert_to_rank"];
    if (e2r.size() != static_cast<size_t>(layers))
      e2r.fail("has " + std::to_string(e2r.size()) +
               " rows, expected num_layers = " + std::to_string(layers));
    for (int64_t l = 0; l < layers; ++l) {
      Node row = e2r[l];
      if (plan_.model.layers[l].dense) {
        if (row.size() != 0)
          row.fail("layer " + std::to_string(l) + " is dense: it places no experts");
        p.expertToRank.emplace_back();
        continue;
      }
      if (row.size() != static_cast<size_t>(plan_.model.numExperts))
        row.fail("has " + std::to_string(row.size()) +
                 " entries, expected num_experts = " + std::to_string(plan_.model.numExperts));
      const Group &ffn = p.ffnGroupOfLayer(l);
      std::vector<int> ranks;
      for (int64_t e = 0; e < plan_.model.numExperts; ++e) {
        int r = static_cast<int>(row[e].integer(0, p.worldSize - 1));
        if (!std::binary_search(ffn.ranks.begin(), ffn.ranks.end(), r))
          row[e].fail("rank " + std::to_string(r) + " is not in ffn group " +
                      std::to_string(ffn.index) + ", which runs layer " + std::to_string(l) +
                      " (ranks " + joinRanks(ffn.ranks) + ")");
        ranks.push_back(r);
      }
      p.expertToRank.push_back(std::move(ranks));
    }

    const int64_t attentionCount = static_cast<int64_t>(p.attentionGroups.size());
    const int64_t ffnCount = static_cast<int64_t>(p.ffnGroups.size());
    // Optional: the side of the embedding and of the final norm + head (default attention).
    if (n.has("embedding_side"))
      p.embeddingOnFfn = n["embedding_side"].choice<GroupRole>(kGroupRoles) == GroupRole::Ffn;
    if (n.has("head_side"))
      p.headOnFfn = n["head_side"].choice<GroupRole>(kGroupRoles) == GroupRole::Ffn;
    p.embeddingGroup =
        n["embedding_group"].integer(0, (p.embeddingOnFfn ? ffnCount : attentionCount) - 1);
    if (!p.embeddingOnFfn && p.attentionGroups[p.embeddingGroup] != p.layerAttention[0])
      n["embedding_group"].fail("attention group " + std::to_string(p.embeddingGroup) +
                                " does not run layer 0 (the embedding feeds layer 0's attention)");
    p.headGroup = n["head_group"].integer(0, (p.headOnFfn ? ffnCount : attentionCount) - 1);
  }

  void parseWeights(const Node &n) {
    ModelSpec &m = plan_.model;
    std::map<std::string, size_t> seen;
    for (size_t i = 0; i < n.size(); ++i) {
      Node w = n[i];
      WeightSpec spec;
      readFields(w, weightFields(), spec);
      if (!seen.emplace(spec.name, i).second)
        w["name"].fail("\"" + spec.name + "\" repeats model.weights[" +
                       std::to_string(seen[spec.name]) + "]");
      spec.path = std::filesystem::path(spec.file).is_absolute()
                      ? spec.file
                      : (std::filesystem::path(plan_.dir) / spec.file).string();
      const uint64_t elem = weightDtypeBytes(spec.dtype);
      const uint64_t expected = static_cast<uint64_t>(numelOf(spec.shape)) * elem;
      if (spec.length != expected)
        w["length"].fail(std::to_string(spec.length) + " does not match shape " +
                         shapeToString(spec.shape) + " " + spec.dtype + " (" +
                         std::to_string(expected) + " bytes)");
      struct stat st;
      if (::stat(spec.path.c_str(), &st) != 0)
        w["file"].fail("weight \"" + spec.name + "\": cannot open \"" + spec.path +
                       "\": " + std::strerror(errno));
      // The bytes read: the last row of a strided window ends (rows - 1) strides after the first.
      const uint64_t extent = spec.rowStride
                                  ? (static_cast<uint64_t>(spec.shape[0]) - 1) * spec.rowStride +
                                        static_cast<uint64_t>(spec.shape[1]) * elem
                                  : spec.length;
      if (spec.offset + extent > static_cast<uint64_t>(st.st_size))
        w["offset"].fail("weight \"" + spec.name + "\": offset " + std::to_string(spec.offset) +
                         (spec.rowStride ? " + extent " + std::to_string(extent)
                                         : " + length " + std::to_string(spec.length)) +
                         " exceeds the size of \"" + spec.path + "\" (" +
                         std::to_string(st.st_size) + " bytes)");
      Node ranks = w["ranks"];
      if (ranks.size() == 0)
        ranks.fail("a weight must be held by at least one rank");
      for (size_t r = 0; r < ranks.size(); ++r) {
        int rank = static_cast<int>(ranks[r].integer(0, plan_.placement.worldSize - 1));
        if (!spec.ranks.empty() && rank <= spec.ranks.back())
          ranks[r].fail("ranks must be strictly ascending");
        spec.ranks.push_back(rank);
      }
      m.weights.push_back(std::move(spec));
    }
  }

  // Resolves a weight-name field, checks its shape, and that every rank in `users` holds it.
  int weightField(const Node &component, const char *key, const std::vector<int64_t> &shape,
                  const std::string &meaning, const std::vector<int> &users,
                  const std::string &use) {
    Node field = component[key];
    std::string name = field.string();
    const auto &weights = plan_.model.weights;
    auto it = std::find_if(weights.begin(), weights.end(),
                           [&](const WeightSpec &w) { return w.name == name; });
    if (it == weights.end())
      field.fail("no weight named \"" + name + "\" in model.weights");
    if (it->shape != shape)
      field.fail("weight \"" + name + "\" has shape " + shapeToString(it->shape) + ", expected " +
                 shapeToString(shape) + " (" + meaning + ")");
    const int index = static_cast<int>(it - weights.begin());
    for (int r : users)
      if (!std::binary_search(it->ranks.begin(), it->ranks.end(), r))
        root_["model"]["weights"][static_cast<size_t>(index)]["ranks"].fail(
            "rank " + std::to_string(r) + " runs " + use + " but does not hold weight \"" + name +
            "\"");
    return index;
  }

  void parseComponents(const Node &n) {
    ModelSpec &m = plan_.model;
    const Placement &p = plan_.placement;
    const int64_t H = m.hiddenSize;
    std::map<std::string, size_t> firstOf; // "attention 0" -> component index, for duplicate errors

    for (size_t ci = 0; ci < n.size(); ++ci) {
      Node c = n[ci];
      Component comp;
      comp.kind = c["kind"].choice<ComponentKind>(kComponentKinds);
      const bool layered =
          comp.kind == ComponentKind::Attention || comp.kind == ComponentKind::Router ||
          comp.kind == ComponentKind::Experts || comp.kind == ComponentKind::RmsNorm ||
          comp.kind == ComponentKind::DenseFfn || comp.kind == ComponentKind::MlaAttention;
      readFields(c, componentFields(), comp); // role, eps, activation, ... (PlanSchema.cpp)
      if (comp.kind == ComponentKind::RmsNorm && comp.role == NormRole::FinalNorm)
        comp.layer = c["layer"].integer(-1, -1);
      else if (layered)
        comp.layer = c["layer"].integer(0, m.numLayers - 1);
      if (comp.kind == ComponentKind::DenseFfn) {
        if ((comp.denseRole == DenseFfnRole::Dense) != m.layers[comp.layer].dense)
          c["role"].fail(std::string("\"") + toString(comp.denseRole) + "\", but layer " +
                         std::to_string(comp.layer) +
                         (m.layers[comp.layer].dense ? " is" : " is not") +
                         " in model.dense_layers");
      }
      if (comp.layer >= 0 && m.layers[comp.layer].dense &&
          (comp.kind == ComponentKind::Router || comp.kind == ComponentKind::Experts))
        c["kind"].fail("layer " + std::to_string(comp.layer) +
                       " is dense (model.dense_layers): it has no " + toString(comp.kind));

      std::string key = std::string(toString(comp.kind)) + " " + toString(comp.role) + " " +
                        std::to_string(comp.layer);
      if (!firstOf.emplace(key, ci).second)
        c.fail(
            std::string("a second ") + toString(comp.kind) +
            (comp.role != NormRole::None ? std::string(" ") + toString(comp.role) : std::string()) +
            (comp.layer >= 0 ? " for layer " + std::to_string(comp.layer) : std::string()) +
            " (first: model.components[" + std::to_string(firstOf[key]) + "])");

      const std::string layerName = "layer " + std::to_string(comp.layer);
      const std::vector<int> &attnRanks =
          comp.layer >= 0
              ? p.attentionGroupOfLayer(comp.layer).ranks
              : (comp.kind == ComponentKind::Embedding ? p.embeddingRunner() : p.headRunner())
                    .ranks;
      const int index = static_cast<int>(ci);
      switch (comp.kind) {
      case ComponentKind::Embedding:
        comp.weight = weightField(c, "weight", {m.vocabSize, H}, "vocab_size, hidden_size",
                                  attnRanks, "the embedding");
        m.embedding = index;
        break;
      case ComponentKind::Head:
        comp.weight = weightField(c, "weight", {H, m.vocabSize}, "hidden_size, vocab_size",
                                  attnRanks, "the head");
        m.head = index;
        break;
      case ComponentKind::RmsNorm: {
        std::string use =
            std::string(toString(comp.role)) + (comp.layer >= 0 ? " of " + layerName : "");
        comp.weight = weightField(c, "weight", {H}, "hidden_size", attnRanks, use);
        if (comp.role == NormRole::AttnNorm)
          m.layers[comp.layer].attnNorm = index;
        else if (comp.role == NormRole::FfnNorm)
          m.layers[comp.layer].ffnNorm = index;
        else
          m.finalNorm = index;
        break;
      }
      case ComponentKind::Attention: {
        const int64_t q = m.numHeads * m.headDim, kv = m.numKvHeads * m.headDim;
        const std::string use = layerName + " attention";
        comp.wq = weightField(c, "wq", {H, q}, "hidden_size, num_heads*head_dim", attnRanks, use);
        comp.wk =
            weightField(c, "wk", {H, kv}, "hidden_size, num_kv_heads*head_dim", attnRanks, use);
        comp.wv =
            weightField(c, "wv", {H, kv}, "hidden_size, num_kv_heads*head_dim", attnRanks, use);
        comp.wo = weightField(c, "wo", {q, H}, "num_heads*head_dim, hidden_size", attnRanks, use);
        // Optional parts of the model families.
        if (c.has("bq"))
          comp.bq = weightField(c, "bq", {q}, "num_heads*head_dim", attnRanks, use);
        if (c.has("bk"))
          comp.bk = weightField(c, "bk", {kv}, "num_kv_heads*head_dim", attnRanks, use);
        if (c.has("bv"))
          comp.bv = weightField(c, "bv", {kv}, "num_kv_heads*head_dim", attnRanks, use);
        if (c.has("bo"))
          comp.bo = weightField(c, "bo", {H}, "hidden_size", attnRanks, use);
        if (c.has("q_norm") != c.has("k_norm"))
          c.fail("q_norm and k_norm go together");
        if (c.has("q_norm")) {
          comp.qNorm = weightField(c, "q_norm", {m.headDim}, "head_dim", attnRanks, use);
          comp.kNorm = weightField(c, "k_norm", {m.headDim}, "head_dim", attnRanks, use);
          (void)c["qk_norm_eps"]; // required with q_norm (read with the fields); fails when missing
        }
        if (c.has("sinks"))
          comp.sinks = weightField(c, "sinks", {m.numHeads}, "num_heads", attnRanks, use);
        if (m.layers[comp.layer].attention >= 0)
          c.fail("a second attention for layer " + std::to_string(comp.layer));
        m.layers[comp.layer].attention = index;
        break;
      }
      case ComponentKind::Router:
        comp.weight = weightField(c, "weight", {H, m.numExperts}, "hidden_size, num_experts",
                                  attnRanks, layerName + " router");
        if (c.has("bias"))
          comp.bias = weightField(c, "bias", {m.numExperts}, "num_experts", attnRanks,
                                  layerName + " router");
        if (c.has("correction_bias"))
          comp.correctionBias = weightField(c, "correction_bias", {m.numExperts}, "num_experts",
                                            attnRanks, layerName + " router");
        m.layers[comp.layer].router = index;
        break;
      case ComponentKind::MlaAttention: {
        if (m.kvLoraRank == 0)
          c.fail("an mla_attention needs model.kv_lora_rank, qk_nope_head_dim, "
                 "qk_rope_head_dim and v_head_dim");
        const std::string use = layerName + " attention";
        const int64_t heads = m.numHeads, r = m.kvLoraRank, rope = m.qkRopeHeadDim, v = m.vHeadDim;
        comp.wq = weightField(c, "wq", {H, heads * m.headDim},
                              "hidden_size, num_heads*(qk_nope+qk_rope)", attnRanks, use);
        comp.wkvA = weightField(c, "wkv_a", {H, r + rope},
                                "hidden_size, kv_lora_rank+qk_rope_head_dim", attnRanks, use);
        comp.kvNorm = weightField(c, "kv_norm", {r}, "kv_lora_rank", attnRanks, use);
        comp.wkvB = weightField(c, "wkv_b", {r, heads * (m.qkNopeHeadDim + v)},
                                "kv_lora_rank, num_heads*(qk_nope+v_head_dim)", attnRanks, use);
        comp.wo = weightField(c, "wo", {heads * v, H}, "num_heads*v_head_dim, hidden_size",
                              attnRanks, use);
        if (m.layers[comp.layer].attention >= 0)
          c.fail("a second attention for layer " + std::to_string(comp.layer));
        m.layers[comp.layer].attention = index;
        break;
      }
      case ComponentKind::DenseFfn: {
        const std::string use = layerName + " " + toString(comp.denseRole) + " FFN";
        const int64_t F = comp.ffnHidden;
        const std::vector<int> &ranks =
            comp.onFfnSide ? p.ffnGroupOfLayer(comp.layer).ranks : attnRanks;
        comp.w1 = weightField(c, "w1", {H, F}, "hidden_size, ffn_hidden", ranks, use);
        comp.w3 = weightField(c, "w3", {H, F}, "hidden_size, ffn_hidden", ranks, use);
        comp.w2 = weightField(c, "w2", {F, H}, "ffn_hidden, hidden_size", ranks, use);
        LayerComponents &lc = m.layers[comp.layer];
        (comp.denseRole == DenseFfnRole::Dense ? lc.denseFfn : lc.sharedFfn) = index;
        (comp.denseRole == DenseFfnRole::Dense ? lc.denseOnFfn : lc.sharedOnFfn) = comp.onFfnSide;
        break;
      }
      case ComponentKind::Experts: {
        Node experts = c["experts"];
        const bool gated = isGated(comp.activation);
        const int64_t gateWidth = comp.fusedGateUp ? 2 * m.expertHidden : m.expertHidden;
        std::vector<int> seenExpert(m.numExperts, -1);
        for (size_t i = 0; i < experts.size(); ++i) {
          Node x = experts[i];
          ExpertWeights ew;
          ew.expert = x["expert"].integer(0, m.numExperts - 1);
          if (seenExpert[ew.expert] != -1)
            x["expert"].fail("expert " + std::to_string(ew.expert) + " is already " +
                             experts.path() + "[" + std::to_string(seenExpert[ew.expert]) + "]");
          seenExpert[ew.expert] = static_cast<int>(i);
          const std::vector<int> owner = {p.expertToRank[comp.layer][ew.expert]};
          const std::string use = layerName + " expert " + std::to_string(ew.expert);
          ew.w1 = weightField(x, "w1", {H, gateWidth},
                              comp.fusedGateUp ? "hidden_size, 2*expert_hidden (fused gate/up)"
                                               : "hidden_size, expert_hidden",
                              owner, use);
          if (!gated) {
            if (x.has("w3"))
              x["w3"].fail("activation '" + c["activation"].string() +
                           "' is not gated: it has no w3");
            if (x.has("b3"))
              x["b3"].fail("activation '" + c["activation"].string() +
                           "' is not gated: it has no b3");
          } else if (comp.fusedGateUp) {
            if (x.has("w3"))
              x["w3"].fail("with fused_gate_up, w1 holds the up projection too");
          } else {
            ew.w3 =
                weightField(x, "w3", {H, m.expertHidden}, "hidden_size, expert_hidden", owner, use);
          }
          ew.w2 =
              weightField(x, "w2", {m.expertHidden, H}, "expert_hidden, hidden_size", owner, use);
          if (x.has("b1"))
            ew.b1 = weightField(x, "b1", {gateWidth}, "w1's columns", owner, use);
          if (x.has("b3"))
            ew.b3 = weightField(x, "b3", {m.expertHidden}, "expert_hidden", owner, use);
          if (x.has("b2"))
            ew.b2 = weightField(x, "b2", {H}, "hidden_size", owner, use);
          comp.experts.push_back(ew);
        }
        for (int64_t e = 0; e < m.numExperts; ++e)
          if (seenExpert[e] == -1)
            experts.fail("expert " + std::to_string(e) + " is missing");
        std::sort(
            comp.experts.begin(), comp.experts.end(),
            [](const ExpertWeights &a, const ExpertWeights &b) { return a.expert < b.expert; });
        m.layers[comp.layer].experts = index;
        break;
      }
      }
      m.components.push_back(std::move(comp));
    }

    if (m.embedding < 0)
      n.fail("no embedding component");
    if (m.finalNorm < 0)
      n.fail("no rms_norm with role final_norm");
    if (m.head < 0)
      n.fail("no head component");
    for (int64_t l = 0; l < m.numLayers; ++l) {
      const LayerComponents &lc = m.layers[l];
      const std::pair<int, const char *> required[] = {
          {lc.attnNorm, "rms_norm attn_norm"},
          {lc.attention, "attention"},
          {lc.ffnNorm, "rms_norm ffn_norm"},
          {lc.dense ? lc.denseFfn : lc.router, lc.dense ? "dense_ffn" : "router"},
          {lc.dense ? lc.denseFfn : lc.experts, lc.dense ? "dense_ffn" : "experts"}};
      for (const auto &[index, what] : required)
        if (index < 0)
          n.fail(std::string("no ") + what + " component for layer " + std::to_string(l));
    }
  }

  void parseProgram(const Node &n, bool ffnRole, std::vector<Instruction> &out) {
    const int64_t layers = plan_.model.numLayers;
    std::map<std::string, size_t> firstOf;
    for (size_t i = 0; i < n.size(); ++i) {
      Node x = n[i];
      Instruction ins;
      ins.op = x["op"].choice<OpCode>(kOpCodes);
      if (ins.op == OpCode::RmsNorm) {
        ins.role = x["role"].choice<NormRole>(kNormRoles);
        if (ins.role == NormRole::None)
          x["role"].fail("an rms_norm needs a role (attn_norm, ffn_norm, final_norm)");
      }
      // Embedding, final norm and head belong to the program of their side (placement.*_side).
      const Placement &p = plan_.placement;
      const bool ffnSide = ins.op == OpCode::Embed ? p.embeddingOnFfn
                           : ins.op == OpCode::Head || ins.role == NormRole::FinalNorm
                               ? p.headOnFfn
                               : isFfnOp(ins.op);
      if (ins.op != OpCode::DenseFfn && ffnSide != ffnRole)
        x["op"].fail(std::string("\"") + toString(ins.op) + "\" is not " +
                     (ffnRole ? "an ffn" : "an attention") + " instruction");
      if (((ins.op == OpCode::EmbedSend || ins.op == OpCode::EmbedRecv) && !p.embeddingOnFfn) ||
          ((ins.op == OpCode::HeadSend || ins.op == OpCode::HeadRecv) && !p.headOnFfn))
        x["op"].fail(
            std::string("\"") + toString(ins.op) + "\": the " +
            (ins.op == OpCode::EmbedSend || ins.op == OpCode::EmbedRecv ? "embedding" : "head") +
            " runs on the attention side (placement)");
      const bool global = ins.op == OpCode::Embed || ins.op == OpCode::Head ||
                          ins.role == NormRole::FinalNorm || ins.op == OpCode::EmbedSend ||
                          ins.op == OpCode::EmbedRecv || ins.op == OpCode::HeadSend ||
                          ins.op == OpCode::HeadRecv;
      if (global) {
        if (x.has("layer"))
          ins.layer = x["layer"].integer(-1, -1);
      } else {
        ins.layer = x["layer"].integer(0, layers - 1);
      }
      // A dense layer has no router or experts, and no exchange with an FFN group unless its
      // FFN runs on the FFN side.
      if (!global && plan_.model.layers[ins.layer].dense && isMoeOnlyOp(ins.op) &&
          (!plan_.model.layers[ins.layer].denseOnFfn || ins.op == OpCode::Router ||
           ins.op == OpCode::Experts))
        x["op"].fail(std::string("\"") + toString(ins.op) + "\": layer " +
                     std::to_string(ins.layer) + " is dense (model.dense_layers)");
      if (ins.op == OpCode::DenseFfn && !global) {
        const LayerComponents &lc = plan_.model.layers[ins.layer];
        if (lc.denseFfn < 0 && lc.sharedFfn < 0)
          x["op"].fail("layer " + std::to_string(ins.layer) + " has no dense_ffn component");
        const bool onFfn = lc.denseFfn >= 0 ? lc.denseOnFfn : lc.sharedOnFfn;
        if (onFfn != ffnRole)
          x["op"].fail("the dense_ffn of layer " + std::to_string(ins.layer) + " runs on the " +
                       (onFfn ? "ffn" : "attention") + " side (its component's side), not in the " +
                       (ffnRole ? "ffn" : "attention") + " program");
      }
      ins.stream = x["stream"].choice<Stream>(kStreams);
      const Stream expected = isExchangeOp(ins.op) ? Stream::Comm : Stream::Forward;
      if (ins.stream != expected)
        x["stream"].fail(std::string(toString(ins.op)) + " runs on the " +
                         kStreams[static_cast<int>(expected)] + " stream, not \"" +
                         kStreams[static_cast<int>(ins.stream)] + "\"");
      std::string key = describe(ins);
      if (!firstOf.emplace(key, i).second)
        x.fail("a second " + key + " (first: " + n.path() + "[" + std::to_string(firstOf[key]) +
               "])");
      out.push_back(ins);
    }
    // Every send must meet its receive: each instruction appears exactly once per layer.
    std::vector<Instruction> required;
    const auto &lcs = plan_.model.layers;
    const Placement &p = plan_.placement;
    if (ffnRole) {
      if (p.embeddingOnFfn)
        for (OpCode op : {OpCode::Embed, OpCode::EmbedSend})
          required.push_back({op, -1, NormRole::None, {}});
      if (p.headOnFfn) {
        required.push_back({OpCode::HeadRecv, -1, NormRole::None, {}});
        required.push_back({OpCode::RmsNorm, -1, NormRole::FinalNorm, {}});
        required.push_back({OpCode::Head, -1, NormRole::None, {}});
      }
      for (int64_t l = 0; l < layers; ++l) {
        if (!lcs[l].hasFfnStage())
          continue;
        for (OpCode op : {OpCode::M2nRecv, OpCode::N2mSend})
          required.push_back({op, l, NormRole::None, {}});
        if (!lcs[l].dense)
          required.push_back({OpCode::Experts, l, NormRole::None, {}});
        if (lcs[l].denseOnFfn || lcs[l].sharedOnFfn)
          required.push_back({OpCode::DenseFfn, l, NormRole::None, {}});
      }
    } else {
      required.push_back(
          {p.embeddingOnFfn ? OpCode::EmbedRecv : OpCode::Embed, -1, NormRole::None, {}});
      for (int64_t l = 0; l < layers; ++l) {
        required.push_back({OpCode::RmsNorm, l, NormRole::AttnNorm, {}});
        for (OpCode op : {OpCode::Attention, OpCode::ResidualAdd})
          required.push_back({op, l, NormRole::None, {}});
        required.push_back({OpCode::RmsNorm, l, NormRole::FfnNorm, {}});
        if ((lcs[l].denseFfn >= 0 && !lcs[l].denseOnFfn) ||
            (lcs[l].sharedFfn >= 0 && !lcs[l].sharedOnFfn))
          required.push_back({OpCode::DenseFfn, l, NormRole::None, {}});
        if (!lcs[l].dense)
          required.push_back({OpCode::Router, l, NormRole::None, {}});
        for (OpCode op :
             {OpCode::M2nSend, OpCode::ResidualSend, OpCode::ResidualRecv, OpCode::N2mRecv})
          if (lcs[l].hasFfnStage() || !isMoeOnlyOp(op))
            required.push_back({op, l, NormRole::None, {}});
      }
      if (p.headOnFfn) {
        required.push_back({OpCode::HeadSend, -1, NormRole::None, {}});
      } else {
        required.push_back({OpCode::RmsNorm, -1, NormRole::FinalNorm, {}});
        required.push_back({OpCode::Head, -1, NormRole::None, {}});
      }
    }
    for (const Instruction &ins : required)
      if (!firstOf.count(describe(ins)))
        n.fail("no " + describe(ins));
  }

  static std::string describe(const Instruction &ins) {
    std::string s = toString(ins.op);
    if (ins.op == OpCode::RmsNorm)
      s += std::string(" ") + toString(ins.role);
    if (ins.layer >= 0)
      s += " for layer " + std::to_string(ins.layer);
    return s;
  }

  void parsePrograms(const Node &n) {
    parseProgram(n["attention"], false, plan_.programs.attention);
    parseProgram(n["ffn"], true, plan_.programs.ffn);
  }

  void parseExchanges(const Node &n) {
    const ModelSpec &m = plan_.model;
    const Placement &p = plan_.placement;
    std::map<std::pair<int, int64_t>, size_t> firstOf;
    for (size_t i = 0; i < n.size(); ++i) {
      Node x = n[i];
      ExchangeSpec e;
      readFields(x, exchangeFields(), e); // id, kind, capacity and bytes per token (PlanSchema.cpp)
      e.layer = x["layer"].integer(0, m.numLayers - 1);
      auto key = std::make_pair(static_cast<int>(e.kind), e.layer);
      const bool edge = e.kind == ExchangeKind::Embedding || e.kind == ExchangeKind::Head;
      if (e.kind == ExchangeKind::Embedding && (!p.embeddingOnFfn || e.layer != 0))
        x["kind"].fail(p.embeddingOnFfn
                           ? "the embedding exchange has layer 0 (it feeds layer 0)"
                           : "an embedding exchange, but the embedding runs on the attention side");
      if (e.kind == ExchangeKind::Head && (!p.headOnFfn || e.layer != m.numLayers - 1))
        x["kind"].fail(p.headOnFfn ? "the head exchange has the last layer (it carries its output)"
                                   : "a head exchange, but the head runs on the attention side");
      if (!edge && !m.layers[e.layer].hasFfnStage() && e.kind != ExchangeKind::Residual)
        x["kind"].fail(
            std::string("\"") + toString(e.kind) + "\": layer " + std::to_string(e.layer) +
            " is dense (model.dense_layers) with its FFN on the attention side and only has a "
            "residual exchange");
      if (!firstOf.emplace(key, i).second)
        x.fail(std::string("a second ") + toString(e.kind) + " exchange for layer " +
               std::to_string(e.layer) + " (first: exchanges[" + std::to_string(firstOf[key]) +
               "])");
      const Group &attention = p.attentionGroupOfLayer(e.layer);
      const Group &ffn = p.ffnGroupOfLayer(e.layer);
      const Group &next = p.nextAttentionGroup(e.layer);
      const Group &src = e.kind == ExchangeKind::N2m         ? ffn
                         : e.kind == ExchangeKind::Embedding ? p.embeddingRunner()
                         : e.kind == ExchangeKind::Head      ? p.nextAttentionGroup(m.numLayers - 1)
                                                             : attention;
      const Group &dst = e.kind == ExchangeKind::M2n         ? ffn
                         : e.kind == ExchangeKind::Embedding ? p.attentionGroupOfLayer(0)
                         : e.kind == ExchangeKind::Head      ? p.headRunner()
                                                             : next;
      e.srcGroup = x["src_group"].integer(0, INT64_MAX);
      e.dstGroup = x["dst_group"].integer(0, INT64_MAX);
      if (e.srcGroup != src.index)
        x["src_group"].fail(std::to_string(e.srcGroup) + ", but " + toString(e.kind) +
                            " of layer " + std::to_string(e.layer) + " leaves " +
                            toString(src.role) + " group " + std::to_string(src.index));
      if (e.dstGroup != dst.index)
        x["dst_group"].fail(std::to_string(e.dstGroup) + ", but " + toString(e.kind) +
                            " of layer " + std::to_string(e.layer) + " goes to " +
                            toString(dst.role) + " group " + std::to_string(dst.index));
      const int64_t expected = bytesPerTokenOf(e.kind, m.hiddenSize, m.topK);
      if (e.bytesPerToken != expected)
        x["bytes_per_token"].fail(
            std::to_string(e.bytesPerToken) + ", expected " + std::to_string(expected) +
            (e.kind == ExchangeKind::M2n
                 ? " (8 token id + 4*hidden x + 8 n_local + 12*top_k expert/gate pairs)"
                 : " (8 token id + 4*hidden values)"));
      plan_.exchanges.push_back(std::move(e));
    }
    for (int64_t l = 0; l < m.numLayers; ++l)
      for (int k = 0; k < 3; ++k)
        if (!firstOf.count({k, l}) &&
            (m.layers[l].hasFfnStage() || k == static_cast<int>(ExchangeKind::Residual)))
          n.fail(std::string("no ") + kExchangeKinds[k] + " exchange for layer " +
                 std::to_string(l));
    if (p.embeddingOnFfn && !firstOf.count({static_cast<int>(ExchangeKind::Embedding), 0}))
      n.fail("no embedding exchange (placement.embedding_side is ffn)");
    if (p.headOnFfn && !firstOf.count({static_cast<int>(ExchangeKind::Head), m.numLayers - 1}))
      n.fail("no head exchange (placement.head_side is ffn)");
  }

  void parseMemory(const Node &n) {
    MemorySpec &mem = plan_.memory;
    const int world = plan_.placement.worldSize;
    std::vector<uint64_t> counted(world, 0);
    for (const WeightSpec &w : plan_.model.weights)
      for (int r : w.ranks)
        counted[r] += w.length;
    Node ranks = n["ranks"];
    if (ranks.size() != static_cast<size_t>(world))
      ranks.fail("has " + std::to_string(ranks.size()) +
                 " entries, expected world_size = " + std::to_string(world));
    for (int r = 0; r < world; ++r) {
      Node entry = ranks[r];
      entry["rank"].integer(r, r);
      const uint64_t stated = static_cast<uint64_t>(entry["weight_bytes"].integer(0, INT64_MAX));
      if (stated != counted[r])
        entry["weight_bytes"].fail(std::to_string(stated) + ", but model.weights puts " +
                                   std::to_string(counted[r]) + " bytes on rank " +
                                   std::to_string(r));
      mem.weightBytes.push_back(stated);
      mem.activationBytes.push_back(
          entry.has("activation_bytes")
              ? std::optional<uint64_t>(entry["activation_bytes"].integer(0, INT64_MAX))
              : std::nullopt);
    }
  }

  Plan &plan_;
  Node root_;
};

} // namespace

Plan parsePlan(const std::string &jsonText, const std::string &planPath) {
  Plan plan;
  plan.path = planPath;
  plan.dir = std::filesystem::path(planPath).parent_path().string();
  if (plan.dir.empty())
    plan.dir = ".";
  // nlohmann-json frees nested values recursively: a hostile plan nested 100k levels deep would
  // overflow the stack. Plans nest a handful of levels; refuse anything absurd before parsing.
  constexpr int kMaxDepth = 64;
  int depth = 0;
  bool inString = false, escaped = false;
  for (char c : jsonText) {
    if (inString) {
      if (escaped)
        escaped = false;
      else if (c == '\\')
        escaped = true;
      else if (c == '"')
        inString = false;
    } else if (c == '"') {
      inString = true;
    } else if (c == '[' || c == '{') {
      if (++depth > kMaxDepth)
        throw PlanError(planPath + ": invalid plan: JSON nested deeper than " +
                        std::to_string(kMaxDepth) + " levels");
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  json root;
  try {
    root = json::parse(jsonText);
  } catch (const json::parse_error &e) {
    throw PlanError(jsonParseError(planPath, e));
  }
  Parser(plan, root).parse();
  return plan;
}

Plan loadPlan(const std::string &planDirOrJson) {
  std::string path = planDirOrJson;
  if (std::filesystem::is_directory(path))
    path = (std::filesystem::path(path) / "plan.json").string();
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw PlanError(path + ": cannot open: " + std::strerror(errno));
  std::stringstream text;
  text << in.rdbuf();
  return parsePlan(text.str(), path);
}

} // namespace disagmoe
