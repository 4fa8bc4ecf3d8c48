//===- PlanEmitter.cpp - placed `moe` IR -> plan.json ---------------------===//
#include "compiler/emit/PlanEmitter.h"

#include "dialects/moe/MoeDialect.h"
#include "dialects/onnx/OnnxDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>
#include <map>
#include <set>

using namespace mlir;
namespace json = llvm::json;

namespace disagmoe {
namespace {

struct Placement {
  int64_t groups = 1, attnRanks = 0, ffnRanks = 0, worldSize = 0;
  std::vector<std::vector<int64_t>> expertToRank;

  std::vector<int64_t> attentionRanks(int64_t group) const {
    std::vector<int64_t> r;
    for (int64_t i = 0; i < attnRanks; ++i)
      r.push_back(group * attnRanks + i);
    return r;
  }
  std::vector<int64_t> ffnGroupRanks(int64_t group) const {
    std::vector<int64_t> r;
    for (int64_t i = 0; i < ffnRanks; ++i)
      r.push_back(groups * attnRanks + group * ffnRanks + i);
    return r;
  }
};

std::optional<Placement> readPlacement(ModuleOp module) {
  auto dict = module->getAttrOfType<DictionaryAttr>("moe.placement");
  if (!dict)
    return std::nullopt;
  Placement p;
  p.groups = dict.getAs<IntegerAttr>("num_groups").getInt();
  p.attnRanks = dict.getAs<IntegerAttr>("attn_ranks").getInt();
  p.ffnRanks = dict.getAs<IntegerAttr>("ffn_ranks").getInt();
  p.worldSize = dict.getAs<IntegerAttr>("world_size").getInt();
  for (Attribute layer : dict.getAs<ArrayAttr>("expert_to_rank")) {
    std::vector<int64_t> ranks;
    for (Attribute r : llvm::cast<ArrayAttr>(layer))
      ranks.push_back(llvm::cast<IntegerAttr>(r).getInt());
    p.expertToRank.push_back(ranks);
  }
  return p;
}

json::Array toJson(const std::vector<int64_t> &v) {
  json::Array a;
  for (int64_t x : v)
    a.push_back(x);
  return a;
}

int64_t elementBytes(Type t) { return (t.getIntOrFloatBitWidth() + 7) / 8; }

/// Collects the weight manifest: one entry per weight name, with the ranks that hold it.
class WeightManifest {
public:
  /// Returns the weight's name, recording that `ranks` need it.
  std::string use(Value v, const std::vector<int64_t> &ranks) {
    auto w = v.getDefiningOp<onnxir::WeightOp>();
    std::string name = w.getWeightName().str();
    auto [it, inserted] = entries.try_emplace(name);
    if (inserted) {
      order.push_back(name);
      auto type = llvm::cast<RankedTensorType>(w.getResult().getType());
      it->second.op = w;
      it->second.shape.assign(type.getShape().begin(), type.getShape().end());
    }
    it->second.ranks.insert(ranks.begin(), ranks.end());
    return name;
  }

  json::Array toJson(std::map<int64_t, int64_t> &bytesPerRank) const {
    json::Array out;
    for (const std::string &name : order) {
      Entry e = entries.at(name);
      std::string file = e.op.getFile().str();
      llvm::SmallString<256> abs(file);
      llvm::sys::fs::make_absolute(abs);
      json::Object w{
          {"name", name},
          {"dtype", "float32"},
          {"shape", disagmoe::toJson(e.shape)},
          {"transposed", e.op.getTransposed()},
          {"file", std::string(abs)},
          {"offset", e.op.getOffset()},
          {"length", e.op.getLength()},
          {"ranks", disagmoe::toJson(std::vector<int64_t>(e.ranks.begin(), e.ranks.end()))}};
      for (int64_t r : e.ranks)
        bytesPerRank[r] += e.op.getLength();
      out.push_back(std::move(w));
    }
    return out;
  }

private:
  struct Entry {
    onnxir::WeightOp op;
    std::vector<int64_t> shape;
    std::set<int64_t> ranks;
  };
  std::map<std::string, Entry> entries;
  std::vector<std::string> order;
};

json::Object instr(StringRef op, int64_t layer, StringRef stream) {
  json::Object o{{"op", op}, {"stream", stream}};
  if (layer >= 0)
    o["layer"] = layer;
  return o;
}
} // namespace

bool emitPlan(ModuleOp module, const std::string &sourcePath, json::Object &plan,
              std::string &error) {
  auto placement = readPlacement(module);
  if (!placement) {
    error = "module has no 'moe.placement' attribute (run place-groups before emitting)";
    return false;
  }
  auto funcs = llvm::to_vector(module.getOps<func::FuncOp>());
  if (funcs.size() != 1) {
    error = "expected exactly one function in the module";
    return false;
  }
  func::FuncOp func = funcs.front();
  const Placement &p = *placement;
  auto ids = llvm::cast<RankedTensorType>(func.getArgument(0).getType());
  if (!ids.hasStaticShape() || ids.getRank() != 2) {
    error = "token ids must have a static [batch, seq] shape (pass --batch and --seq-len)";
    return false;
  }
  int64_t batch = ids.getDimSize(0), seq = ids.getDimSize(1);

  WeightManifest weights;
  json::Array components, attnProgram, ffnProgram, exchanges;
  // Hyper-parameters of the model families, reported in `model` (docs/plan-format.md).
  std::vector<int64_t> denseLayers, slidingLayers;
  struct {
    bool qkNorm = false, sinks = false, attnBias = false, mla = false;
  } family;
  json::Object model;
  int64_t numLayers = 0, hidden = 0, vocab = 0;
  bool ok = true;
  // The m2n exchanges of FFN-side dense layers (no ids in the IR; their bytes_per_token keeps
  // room for top_k routes like every m2n, and top_k is known after the walk).
  std::vector<size_t> denseM2n;
  auto attnGroupRanks = [&](int64_t layer) { return p.attentionRanks(layer % p.groups); };
  // Embedding / head stages with on = "ffn" (assign-groups' embedding-side / head-side) run on the
  // FFN group of the same index: x_0 goes F -> A, x_L A -> F (docs/plan-format.md).
  auto onFfnSide = [](Operation *op) {
    auto stage = op->getParentOfType<moe::StageOp>();
    return stage && stage.getOn() && *stage.getOn() == "ffn";
  };
  bool embeddingOnFfn = false, headOnFfn = false;
  json::Array ffnTail; // an FFN-side head's instructions, after every layer's

  func.walk([&](Operation *op) {
    if (auto e = dyn_cast<moe::EmbeddingOp>(op)) {
      auto shape = llvm::cast<RankedTensorType>(e.getWeight().getType()).getShape();
      vocab = shape[0];
      hidden = shape[1];
      embeddingOnFfn = onFfnSide(e);
      components.push_back(json::Object{
          {"kind", "embedding"},
          {"weight",
           weights.use(e.getWeight(), embeddingOnFfn ? p.ffnGroupRanks(0) : attnGroupRanks(0))}});
      if (embeddingOnFfn) {
        ffnProgram.push_back(instr("embed", -1, "forward"));
        ffnProgram.push_back(instr("embed_send", -1, "comm"));
        attnProgram.push_back(instr("embed_recv", -1, "comm"));
        exchanges.push_back(json::Object{{"id", "embedding"},
                                         {"kind", "embedding"},
                                         {"layer", 0},
                                         {"src_group", 0},
                                         {"dst_group", 0},
                                         {"capacity_tokens", batch * seq},
                                         {"bytes_per_token", 8 + hidden * 4}});
      } else {
        attnProgram.push_back(instr("embed", -1, "forward"));
      }
    } else if (auto n = dyn_cast<moe::RmsNormOp>(op)) {
      int64_t layer = n.getLayer();
      const bool finalOnFfn = layer < 0 && onFfnSide(n);
      auto ranks = finalOnFfn ? p.ffnGroupRanks(numLayers % p.groups)
                              : attnGroupRanks(layer < 0 ? numLayers : layer);
      components.push_back(json::Object{{"kind", "rms_norm"},
                                        {"layer", layer},
                                        {"role", n.getRole()},
                                        {"weight", weights.use(n.getWeight(), ranks)},
                                        {"eps", n.getEps().convertToDouble()}});
      json::Object i = instr("rms_norm", layer, "forward");
      i["role"] = n.getRole();
      if (finalOnFfn) {
        // x_L goes from the attention group that formed it to the head's FFN group first.
        headOnFfn = true;
        attnProgram.push_back(instr("head_send", -1, "comm"));
        ffnTail.push_back(instr("head_recv", -1, "comm"));
        ffnTail.push_back(std::move(i));
        exchanges.push_back(json::Object{{"id", "head"},
                                         {"kind", "head"},
                                         {"layer", numLayers - 1},
                                         {"src_group", numLayers % p.groups},
                                         {"dst_group", numLayers % p.groups},
                                         {"capacity_tokens", batch * seq},
                                         {"bytes_per_token", 8 + hidden * 4}});
      } else {
        attnProgram.push_back(std::move(i));
      }
      model["rms_norm_eps"] = n.getEps().convertToDouble();
    } else if (auto a = dyn_cast<moe::AttentionOp>(op)) {
      int64_t layer = a.getLayer();
      numLayers = std::max(numLayers, layer + 1);
      auto ranks = attnGroupRanks(layer);
      json::Object comp{{"kind", "attention"},
                        {"layer", layer},
                        {"wq", weights.use(a.getWq(), ranks)},
                        {"wk", weights.use(a.getWk(), ranks)},
                        {"wv", weights.use(a.getWv(), ranks)},
                        {"wo", weights.use(a.getWo(), ranks)}};
      // Optional parts of the model families.
      for (auto [key, value] : {std::pair<const char *, Value>{"bq", a.getBq()},
                                {"bk", a.getBk()},
                                {"bv", a.getBv()},
                                {"bo", a.getBo()},
                                {"q_norm", a.getQNorm()},
                                {"k_norm", a.getKNorm()},
                                {"sinks", a.getSinks()}})
        if (value)
          comp[key] = weights.use(value, ranks);
      if (auto eps = a.getQkNormEps())
        comp["qk_norm_eps"] = eps->convertToDouble();
      if (auto window = a.getSlidingWindow()) {
        comp["sliding_window"] = *window;
        model["sliding_window"] = *window;
        slidingLayers.push_back(layer);
      }
      family.qkNorm |= static_cast<bool>(a.getQNorm());
      family.sinks |= static_cast<bool>(a.getSinks());
      family.attnBias |= static_cast<bool>(a.getBq());
      components.push_back(std::move(comp));
      model["num_heads"] = a.getNumHeads();
      model["num_kv_heads"] = a.getNumKvHeads();
      model["head_dim"] = a.getHeadDim();
      model["rope_theta"] = a.getRopeTheta().convertToDouble();
      attnProgram.push_back(instr("attention", layer, "forward"));
    } else if (auto mla = dyn_cast<moe::MlaAttentionOp>(op)) {
      // DeepSeek-V2's multi-head latent attention.
      int64_t layer = mla.getLayer();
      numLayers = std::max(numLayers, layer + 1);
      auto ranks = attnGroupRanks(layer);
      json::Object comp{{"kind", "mla_attention"},
                        {"layer", layer},
                        {"wq", weights.use(mla.getWq(), ranks)},
                        {"wkv_a", weights.use(mla.getWkvA(), ranks)},
                        {"kv_norm", weights.use(mla.getKvNorm(), ranks)},
                        {"wkv_b", weights.use(mla.getWkvB(), ranks)},
                        {"wo", weights.use(mla.getWo(), ranks)},
                        {"kv_norm_eps", mla.getKvNormEps().convertToDouble()},
                        {"softmax_scale", mla.getSoftmaxScale().convertToDouble()},
                        {"rope_interleaved", mla.getRopeInterleaved()}};
      components.push_back(std::move(comp));
      const int64_t qHeadDim = mla.getQkNopeHeadDim() + mla.getQkRopeHeadDim();
      model["attention_type"] = "mla";
      model["num_heads"] = mla.getNumHeads();
      model["num_kv_heads"] = mla.getNumHeads();
      model["head_dim"] = qHeadDim;
      model["qk_nope_head_dim"] = mla.getQkNopeHeadDim();
      model["qk_rope_head_dim"] = mla.getQkRopeHeadDim();
      model["v_head_dim"] = mla.getVHeadDim();
      model["kv_lora_rank"] = mla.getKvLoraRank();
      model["rope_theta"] = mla.getRopeTheta().convertToDouble();
      family.mla = true;
      attnProgram.push_back(instr("attention", layer, "forward"));
    } else if (auto add = dyn_cast<arith::AddFOp>(op)) {
      // h = x + attention(x); the other add (x_{l+1} = h + N2M) is done by n2m_recv.
      if (add.getRhs().getDefiningOp<moe::AttentionOp>())
        attnProgram.push_back(instr(
            "residual_add", add.getRhs().getDefiningOp<moe::AttentionOp>().getLayer(), "forward"));
      else if (auto m = add.getRhs().getDefiningOp<moe::MlaAttentionOp>())
        attnProgram.push_back(instr("residual_add", m.getLayer(), "forward"));
    } else if (auto r = dyn_cast<moe::RouterOp>(op)) {
      int64_t layer = r.getLayer();
      json::Object comp{{"kind", "router"},
                        {"layer", layer},
                        {"weight", weights.use(r.getWeight(), attnGroupRanks(layer))}};
      if (r.getBias()) {
        comp["bias"] = weights.use(r.getBias(), attnGroupRanks(layer));
        model["router_bias"] = true;
      }
      if (auto f = r.getRoutedScalingFactor()) {
        comp["routed_scaling_factor"] = f->convertToDouble();
        model["routed_scaling_factor"] = f->convertToDouble();
      }
      if (r.getScoring() != "topk_softmax") // top-k on logits then softmax: always sums to 1
        model["norm_topk_prob"] = r.getScoring() == "softmax_topk_renorm";
      components.push_back(std::move(comp));
      model["num_experts"] = r.getNumExperts();
      model["top_k"] = r.getTopK();
      model["router_scoring"] = r.getScoring();
      attnProgram.push_back(instr("router", layer, "forward"));
    } else if (auto x = dyn_cast<moe::ExpertsOp>(op)) {
      int64_t layer = x.getLayer();
      if (layer >= static_cast<int64_t>(p.expertToRank.size())) {
        error = "no expert placement for layer " + std::to_string(layer);
        ok = false;
        return;
      }
      json::Array list;
      for (int64_t e = 0; e < x.getNumExperts(); ++e) {
        std::vector<int64_t> owner{p.expertToRank[layer][e]};
        json::Object ex{{"expert", e},
                        {"w1", weights.use(x.getW1()[e], owner)},
                        {"w2", weights.use(x.getW2()[e], owner)}};
        if (!x.getW3().empty())
          ex["w3"] = weights.use(x.getW3()[e], owner);
        for (auto [key, range] : {std::pair<const char *, OperandRange>{"b1", x.getB1()},
                                  {"b3", x.getB3()},
                                  {"b2", x.getB2()}})
          if (!range.empty())
            ex[key] = weights.use(range[e], owner);
        list.push_back(std::move(ex));
      }
      json::Object comp{{"kind", "experts"}, {"layer", layer}, {"experts", std::move(list)}};
      if (auto act = x.getActivation()) {
        comp["activation"] = *act;
        model["expert_activation"] = *act;
      }
      if (auto limit = x.getSwigluLimit()) {
        comp["swiglu_limit"] = limit->convertToDouble();
        model["swiglu_limit"] = limit->convertToDouble();
      }
      if (auto alpha = x.getSwigluAlpha()) {
        comp["swiglu_alpha"] = alpha->convertToDouble();
        model["swiglu_alpha"] = alpha->convertToDouble();
      }
      if (x.getFusedGateUp())
        comp["fused_gate_up"] = true;
      if (!x.getB1().empty() || !x.getB2().empty())
        model["expert_bias"] = true;
      components.push_back(std::move(comp));
      model["expert_hidden"] = x.getExpertHidden();
      ffnProgram.push_back(instr("experts", layer, "forward"));
    } else if (auto d = dyn_cast<moe::DenseFfnOp>(op)) {
      // A dense layer's FFN or a layer's shared experts: h += FFN(norm(h)) on the attention side,
      // or, with side = "ffn" (assign-groups), on the F-ranks of the layer's FFN group.
      int64_t layer = d.getLayer();
      const bool onFfn = d.getSide() && *d.getSide() == "ffn";
      auto ranks = onFfn ? p.ffnGroupRanks(layer % p.groups) : attnGroupRanks(layer);
      json::Object comp{{"kind", "dense_ffn"},
                        {"layer", layer},
                        {"role", d.getRole()},
                        {"ffn_hidden", d.getFfnHidden()},
                        {"w1", weights.use(d.getW1(), ranks)},
                        {"w3", weights.use(d.getW3(), ranks)},
                        {"w2", weights.use(d.getW2(), ranks)}};
      if (onFfn)
        comp["side"] = "ffn";
      components.push_back(std::move(comp));
      if (d.getRole() == "dense") {
        denseLayers.push_back(layer);
        model["dense_hidden"] = d.getFfnHidden();
      } else {
        model["num_shared_experts"] = d.getNumSharedExperts().value_or(1);
        model["shared_expert_hidden"] = d.getFfnHidden();
      }
      // An FFN-side one sits in the layer's FFN stage (fuse-exchange), after its moe.m2n: it runs
      // on the F-ranks right after the M2N arrives, before the routed experts.
      auto stage = d->getParentOfType<moe::StageOp>();
      if (onFfn != (stage && stage.getSide() == "ffn")) {
        error = "dense_ffn of layer " + std::to_string(layer) + " has side '" +
                (onFfn ? "ffn" : "attention") + "' but sits in a " +
                (stage ? stage.getSide().str() : std::string("function")) +
                " stage (run fuse-exchange after assign-groups)";
        ok = false;
        return;
      }
      (onFfn ? ffnProgram : attnProgram).push_back(instr("dense_ffn", layer, "forward"));
    } else if (auto h = dyn_cast<moe::HeadOp>(op)) {
      const bool onFfn = onFfnSide(h);
      components.push_back(json::Object{
          {"kind", "head"},
          {"weight", weights.use(h.getWeight(), onFfn ? p.ffnGroupRanks(numLayers % p.groups)
                                                      : attnGroupRanks(numLayers))}});
      (onFfn ? ffnTail : attnProgram).push_back(instr("head", -1, "forward"));
    } else if (auto m = dyn_cast<moe::M2NOp>(op)) {
      int64_t layer = m.getLayer();
      attnProgram.push_back(instr("m2n_send", layer, "comm"));
      ffnProgram.push_back(instr("m2n_recv", layer, "comm"));
      // Per token: id, activations, and up to top_k (expert id, gate) pairs plus their count.
      int64_t k = m.getIds() ? llvm::cast<RankedTensorType>(m.getIds().getType()).getDimSize(1) : 0;
      if (!m.getIds())
        denseM2n.push_back(exchanges.size()); // a dense layer's: bytes_per_token set after the walk
      exchanges.push_back(json::Object{{"id", "m2n." + std::to_string(layer)},
                                       {"kind", "m2n"},
                                       {"layer", layer},
                                       {"src_group", m.getSrcGroup()},
                                       {"dst_group", m.getDstGroup()},
                                       {"capacity_tokens", batch * seq},
                                       {"bytes_per_token", 8 + hidden * 4 + 8 + k * 12}});
      // Expected F-ranks per token under uniform routing (exchange-volume), for the simulator.
      if (auto volume = m->getAttrOfType<DictionaryAttr>("volume"))
        exchanges.back().getAsObject()->try_emplace(
            "expected_destinations_per_token",
            volume.getAs<FloatAttr>("destinations_per_token").getValueAsDouble());
    } else if (auto n2m = dyn_cast<moe::N2MOp>(op)) {
      int64_t layer = n2m.getLayer();
      ffnProgram.push_back(instr("n2m_send", layer, "comm"));
      attnProgram.push_back(instr("n2m_recv", layer, "comm"));
      exchanges.push_back(json::Object{{"id", "n2m." + std::to_string(layer)},
                                       {"kind", "n2m"},
                                       {"layer", layer},
                                       {"src_group", n2m.getSrcGroup()},
                                       {"dst_group", n2m.getDstGroup()},
                                       {"capacity_tokens", batch * seq},
                                       {"bytes_per_token", 8 + hidden * 4}});
    } else if (auto res = dyn_cast<moe::ResidualOp>(op)) {
      int64_t layer = res.getLayer();
      attnProgram.push_back(instr("residual_send", layer, "comm"));
      attnProgram.push_back(instr("residual_recv", layer, "comm"));
      exchanges.push_back(json::Object{{"id", "residual." + std::to_string(layer)},
                                       {"kind", "residual"},
                                       {"layer", layer},
                                       {"src_group", res.getSrcGroup()},
                                       {"dst_group", res.getDstGroup()},
                                       {"capacity_tokens", batch * seq},
                                       {"bytes_per_token", 8 + hidden * 4}});
    }
  });
  if (!ok)
    return false;
  for (size_t i : denseM2n)
    (*exchanges[i].getAsObject())["bytes_per_token"] =
        8 + hidden * 4 + 8 + model.getInteger("top_k").value_or(0) * 12;

  // n2m_recv of layer l must follow the residual route of layer l in the attention program; the IR
  // order (ffn stage, n2m, residual) puts it first, so move each n2m_recv after its residual_recv.
  json::Array ordered;
  std::optional<json::Value> pendingN2M;
  for (json::Value &v : attnProgram) {
    StringRef op = *v.getAsObject()->getString("op");
    if (op == "n2m_recv") {
      pendingN2M = std::move(v);
      continue;
    }
    ordered.push_back(std::move(v));
    if (op == "residual_recv" && pendingN2M) {
      ordered.push_back(std::move(*pendingN2M));
      pendingN2M.reset();
    }
  }

  // The family, from the structure that was recognised.
  model["family"] = family.mla      ? "deepseek_v2"
                    : family.sinks  ? "gpt_oss"
                    : family.qkNorm ? "qwen3_moe"
                    : (!denseLayers.empty() || model.getInteger("num_shared_experts"))
                        ? "deepseek_moe"
                        : "mixtral";
  model["dense_layers"] = toJson(denseLayers);
  if (!model.get("num_shared_experts"))
    model["num_shared_experts"] = 0;
  model["qk_norm"] = family.qkNorm;
  model["attention_sinks"] = family.sinks;
  model["attention_bias"] = family.attnBias;
  if (!slidingLayers.empty())
    model["sliding_window_layers"] = toJson(slidingLayers);
  model["vocab_size"] = vocab;
  model["hidden_size"] = hidden;
  model["num_layers"] = numLayers;
  model["batch"] = batch;
  model["seq_len"] = seq;
  model["components"] = std::move(components);
  std::map<int64_t, int64_t> weightBytes;
  model["weights"] = weights.toJson(weightBytes);
  // Each file the weights point into, with its size and modification time, so that the runtime
  // refuses a plan whose model was overwritten after compiling (offsets would read another
  // model's bytes). Only the file's metadata is read, never its bytes. An external-data file that
  // is absent at compile time (compiling needs only the .onnx) gets no entry.
  std::set<std::string> weightFiles;
  for (const json::Value &w : *model.getArray("weights"))
    weightFiles.insert(w.getAsObject()->getString("file")->str());
  json::Array files;
  for (const std::string &file : weightFiles) {
    llvm::sys::fs::file_status st;
    if (llvm::sys::fs::status(file, st) || !llvm::sys::fs::exists(st))
      continue;
    const int64_t mtimeNs = std::chrono::duration_cast<std::chrono::nanoseconds>(
                                st.getLastModificationTime().time_since_epoch())
                                .count();
    files.push_back(json::Object{
        {"path", file}, {"size", static_cast<int64_t>(st.getSize())}, {"mtime_ns", mtimeNs}});
  }

  json::Array groups;
  for (int64_t g = 0; g < p.groups; ++g) {
    std::vector<int64_t> layers;
    for (int64_t l = g; l < numLayers; l += p.groups)
      layers.push_back(l);
    groups.push_back(json::Object{{"role", "attention"},
                                  {"index", g},
                                  {"ranks", toJson(p.attentionRanks(g))},
                                  {"layers", toJson(layers)}});
    groups.push_back(json::Object{{"role", "ffn"},
                                  {"index", g},
                                  {"ranks", toJson(p.ffnGroupRanks(g))},
                                  {"layers", toJson(layers)}});
  }
  json::Array expertMap;
  for (const auto &layer : p.expertToRank)
    expertMap.push_back(toJson(layer));

  // Memory at the compiled shape: weights per rank, and the largest activation buffer a rank
  // holds at once ([tokens, max(hidden, vocab)] f32 on attention, [tokens, expert_hidden] on FFN).
  json::Array ranks;
  for (int64_t r = 0; r < p.worldSize; ++r)
    ranks.push_back(json::Object{{"rank", r}, {"weight_bytes", weightBytes[r]}});

  plan["format"] = kPlanFormat;
  plan["version"] = kPlanVersion;
  plan["source"] = sourcePath;
  plan["model"] = std::move(model);
  plan["files"] = std::move(files);
  plan["placement"] = json::Object{{"world_size", p.worldSize},
                                   {"groups", std::move(groups)},
                                   {"expert_to_rank", std::move(expertMap)},
                                   {"embedding_group", 0},
                                   {"head_group", numLayers % p.groups},
                                   {"embedding_side", embeddingOnFfn ? "ffn" : "attention"},
                                   {"head_side", headOnFfn ? "ffn" : "attention"}};
  for (json::Value &v : ffnTail)
    ffnProgram.push_back(std::move(v));
  plan["programs"] =
      json::Object{{"attention", std::move(ordered)}, {"ffn", std::move(ffnProgram)}};
  plan["exchanges"] = std::move(exchanges);
  plan["memory"] = json::Object{{"ranks", std::move(ranks)}};
  return true;
}

bool writePlan(const json::Object &plan, const std::string &dir, std::string &error) {
  if (dir.empty()) {
    error = "-o: the output directory name is empty";
    return false;
  }
  bool existed = llvm::sys::fs::exists(dir);
  if (existed && !llvm::sys::fs::is_directory(dir)) {
    error = dir + ": exists and is not a directory";
    return false;
  }
  if (std::error_code ec = llvm::sys::fs::create_directories(dir)) {
    error = dir + ": cannot create directory: " + ec.message();
    return false;
  }
  llvm::SmallString<256> path(dir), tmp(dir);
  llvm::sys::path::append(path, "plan.json");
  llvm::sys::path::append(tmp, "plan.json.tmp");
  // Renaming over a symbolic link or a device would replace it rather than write through it.
  llvm::sys::fs::file_status status;
  if (!llvm::sys::fs::status(path, status, /*follow=*/false) &&
      status.type() != llvm::sys::fs::file_type::regular_file) {
    error = std::string(path) + ": refusing to replace it: not a regular file";
    return false;
  }
  auto failWith = [&](std::string message) {
    error = std::move(message);
    llvm::sys::fs::remove(tmp);
    if (!existed)
      llvm::sys::fs::remove(dir); // only removes the directory we created, and only if empty
    return false;
  };
  {
    std::error_code ec;
    llvm::raw_fd_ostream os(tmp, ec);
    if (ec)
      return failWith(std::string(tmp) + ": cannot write: " + ec.message());
    os << llvm::formatv("{0:2}", json::Value(json::Object(plan))) << "\n";
    os.close();
    if (os.has_error()) {
      std::string message = std::string(tmp) + ": write failed: " + os.error().message();
      os.clear_error(); // otherwise raw_fd_ostream aborts in its destructor
      return failWith(message);
    }
  }
  if (std::error_code ec = llvm::sys::fs::rename(tmp, path))
    return failWith(std::string(path) + ": cannot rename into place: " + ec.message());
  return true;
}

} // namespace disagmoe
