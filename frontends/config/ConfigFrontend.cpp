//===- ConfigFrontend.cpp - config.json -> `moe` IR -----------------------===//
#include "frontends/config/ConfigFrontend.h"

#include "dialects/moe/MoeDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"
#include "runtime/io/FileKind.h"

#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"

namespace disagmoe::configfe {
using namespace mlir;

namespace {
llvm::Error fail(const std::string &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

struct Reader {
  const llvm::json::Object &obj;
  std::string &error;
  bool ok = true;

  bool fail(const std::string &key, const std::string &what) {
    if (ok)
      error = key + ": " + what;
    ok = false;
    return false;
  }
  bool has(const char *key) const {
    const llvm::json::Value *v = obj.get(key);
    return v && v->kind() != llvm::json::Value::Null;
  }
  int64_t integer(const char *key, int64_t fallback = -1, bool required = true) {
    if (!has(key)) {
      if (required)
        fail(key, "missing");
      return fallback;
    }
    std::optional<int64_t> v = obj.getInteger(key);
    if (!v) {
      fail(key, "not an integer");
      return fallback;
    }
    return *v;
  }
  int64_t positive(const char *key) {
    int64_t v = integer(key);
    if (ok && v < 1)
      fail(key, "must be at least 1, got " + std::to_string(v));
    return v;
  }
  double number(const char *key, double fallback) {
    if (!has(key))
      return fallback;
    std::optional<double> v = obj.getNumber(key);
    if (!v) {
      fail(key, "not a number");
      return fallback;
    }
    return *v;
  }
  std::string string(const char *key) {
    std::optional<llvm::StringRef> v = obj.getString(key);
    return v ? v->str() : std::string();
  }
  bool boolean(const char *key, bool fallback) {
    std::optional<bool> v = obj.getBoolean(key);
    return v ? *v : fallback;
  }
};

// llvm::json::ParseError logs "[2:0, byte=9]: Expected object key" (line 1-based, column 0-based);
// said as an editor shows it: "line 2, column 1: Expected object key".
std::string jsonParseReason(llvm::Error e) {
  std::string text = llvm::toString(std::move(e));
  unsigned line = 0, column = 0;
  llvm::StringRef rest(text);
  if (rest.consume_front("[") && !rest.consumeInteger(10, line) && rest.consume_front(":") &&
      !rest.consumeInteger(10, column)) {
    size_t colon = rest.find("]: ");
    if (colon != llvm::StringRef::npos)
      return "line " + std::to_string(line) + ", column " + std::to_string(column + 1) + ": " +
             rest.substr(colon + 3).str();
  }
  return text;
}
} // namespace

llvm::Expected<ModelConfig> parseModelConfig(const std::string &path) {
  if (const std::string why = inputRefusal(path); !why.empty())
    return fail(path + ": " + why);
  auto buffer = llvm::MemoryBuffer::getFile(path);
  if (!buffer)
    return fail(path + ": cannot open file: " + buffer.getError().message());
  llvm::Expected<llvm::json::Value> parsed = llvm::json::parse((*buffer)->getBuffer());
  if (!parsed)
    if (!parsed) { // runtime/io/JsonError.h's words
      const std::string reason = jsonParseReason(parsed.takeError());
      return fail(path + ": not valid JSON" + (reason.rfind("line ", 0) == 0 ? " at " : ": ") +
                  reason);
    }
  const llvm::json::Object *obj = parsed->getAsObject();
  if (!obj)
    return fail(path + ": expected a JSON object");
  std::string what;
  Reader r{*obj, what};
  ModelConfig c;
  c.name = path;
  c.modelType = r.string("model_type");
  if (c.modelType.empty())
    return fail(path + ": model_type: missing (expected deepseek, qwen3_moe, gpt_oss or mixtral)");
  if (c.modelType == "deepseek_v2" || c.modelType == "deepseek_v3" || r.has("kv_lora_rank"))
    return fail(path + ": kv_lora_rank: multi-head latent attention (model_type '" + c.modelType +
                "') is not representable by moe.attention, which has no low-rank q/kv projections");
  c.hidden = r.positive("hidden_size");
  c.layers = r.positive("num_hidden_layers");
  c.heads = r.positive("num_attention_heads");
  c.kvHeads = r.has("num_key_value_heads") ? r.positive("num_key_value_heads") : c.heads;
  c.vocab = r.positive("vocab_size");
  c.headDim = r.has("head_dim") ? r.positive("head_dim") : (c.heads > 0 ? c.hidden / c.heads : 0);
  c.ropeTheta = r.number("rope_theta", 10000.0);
  c.rmsEps = r.number("rms_norm_eps", 1e-6);
  c.tiedEmbeddings = r.boolean("tie_word_embeddings", false);
  if (!r.ok)
    return fail(path + ": " + what);
  c.denseLayer.assign(c.layers, false);
  c.window.assign(c.layers, 0);
  if (c.modelType == "deepseek") {
    c.experts = r.positive("n_routed_experts");
    c.topK = r.positive("num_experts_per_tok");
    c.expertHidden = r.positive("moe_intermediate_size");
    int64_t shared = r.integer("n_shared_experts", 0, false);
    c.sharedHidden = shared > 0 ? shared * c.expertHidden : 0;
    c.denseHidden = r.positive("intermediate_size");
    int64_t firstDense = r.integer("first_k_dense_replace", 0, false);
    int64_t freq = r.integer("moe_layer_freq", 1, false);
    for (int64_t l = 0; l < c.layers; ++l)
      c.denseLayer[l] = l < firstDense || (freq > 1 && l % freq != 0);
    bool norm = r.boolean("norm_topk_prob", false);
    std::string scoring = r.string("scoring_func");
    if (!scoring.empty() && scoring != "softmax")
      return fail(path + ": scoring_func: '" + scoring + "' is not a moe.router scoring");
    c.scoring = norm ? "softmax_topk_renorm" : "softmax_topk";
  } else if (c.modelType == "qwen3_moe") {
    c.experts = r.positive("num_experts");
    c.topK = r.positive("num_experts_per_tok");
    c.expertHidden = r.positive("moe_intermediate_size");
    int64_t step = r.integer("decoder_sparse_step", 1, false);
    if (const llvm::json::Array *only = obj->getArray("mlp_only_layers"))
      for (const llvm::json::Value &v : *only)
        if (auto l = v.getAsInteger(); l && *l >= 0 && *l < c.layers)
          c.denseLayer[*l] = true;
    for (int64_t l = 0; l < c.layers; ++l)
      if (step > 1 && (l + 1) % step != 0)
        c.denseLayer[l] = true;
    bool anyDense = false;
    for (bool d : c.denseLayer)
      anyDense |= d;
    if (anyDense)
      c.denseHidden = r.positive("intermediate_size");
    c.scoring = r.boolean("norm_topk_prob", false) ? "softmax_topk_renorm" : "softmax_topk";
  } else if (c.modelType == "gpt_oss" || c.modelType == "mixtral") {
    c.experts = r.positive("num_local_experts");
    c.topK = r.positive("num_experts_per_tok");
    c.expertHidden = r.positive("intermediate_size");
    // GPT-OSS: top-k on the logits, then softmax over the k; Mixtral: softmax then renormalise
    // the top-k, which is the same function (models.json, router_scoring).
    c.scoring = c.modelType == "gpt_oss" ? "topk_softmax" : "softmax_topk_renorm";
    int64_t window = r.integer("sliding_window", 0, false);
    if (const llvm::json::Array *types = obj->getArray("layer_types")) {
      if (static_cast<int64_t>(types->size()) != c.layers)
        return fail(path + ": layer_types: " + std::to_string(types->size()) + " entries for " +
                    std::to_string(c.layers) + " layers");
      for (int64_t l = 0; l < c.layers; ++l) {
        auto t = (*types)[l].getAsString();
        if (t && *t == "sliding_attention")
          c.window[l] = window;
        else if (!t || *t != "full_attention")
          return fail(path + ": layer_types[" + std::to_string(l) + "]: unknown layer type");
      }
    } else if (window > 0) {
      c.window.assign(c.layers, window);
    }
  } else {
    return fail(path + ": model_type: unknown family '" + c.modelType +
                "' (expected deepseek, qwen3_moe, gpt_oss or mixtral)");
  }
  if (!r.ok)
    return fail(path + ": " + what);
  if (c.topK > c.experts)
    return fail(path + ": num_experts_per_tok: " + std::to_string(c.topK) + " exceeds the " +
                std::to_string(c.experts) + " experts");
  if (c.heads % c.kvHeads)
    return fail(path + ": num_key_value_heads: " + std::to_string(c.kvHeads) +
                " does not divide num_attention_heads " + std::to_string(c.heads));
  return c;
}

namespace {
struct IrBuilder {
  MLIRContext &ctx;
  OpBuilder b;
  Location loc;
  Type f32;

  explicit IrBuilder(MLIRContext &c)
      : ctx(c), b(&c), loc(UnknownLoc::get(&c)), f32(Float32Type::get(&c)) {}

  RankedTensorType tensor(ArrayRef<int64_t> shape, Type element) {
    return RankedTensorType::get(shape, element);
  }
  Value param(const std::string &name, ArrayRef<int64_t> shape, bool synthetic = false) {
    auto op = b.create<moe::ParamOp>(loc, tensor(shape, f32), b.getStringAttr(name));
    if (synthetic)
      op->setAttr("moe.synthetic", b.getUnitAttr());
    return op.getResult();
  }
  IntegerAttr i64(int64_t v) { return b.getI64IntegerAttr(v); }
};
} // namespace

llvm::Expected<OwningOpRef<ModuleOp>> buildMoeModule(MLIRContext &context, const ModelConfig &c,
                                                     int64_t batch, int64_t seqLen) {
  if (batch < 1 || seqLen < 1)
    return fail("batch and sequence length must be at least 1");
  context.loadDialect<moe::MoeDialect, func::FuncDialect, arith::ArithDialect>();
  IrBuilder ir(context);
  OpBuilder &b = ir.b;
  OwningOpRef<ModuleOp> module = ModuleOp::create(ir.loc);
  module->getOperation()->setAttr("moe.source", b.getStringAttr(c.name));
  module->getOperation()->setAttr("moe.model_type", b.getStringAttr(c.modelType));
  if (c.tiedEmbeddings)
    module->getOperation()->setAttr("moe.tied_embeddings", b.getUnitAttr());
  const int64_t h = c.hidden, tokens = batch * seqLen;
  auto idsType = ir.tensor({batch, seqLen}, b.getI64Type());
  auto actType = ir.tensor({batch, seqLen, h}, ir.f32);
  auto logitsType = ir.tensor({batch, seqLen, c.vocab}, ir.f32);
  b.setInsertionPointToEnd(module->getBody());
  auto func = b.create<func::FuncOp>(ir.loc, "main", b.getFunctionType({idsType}, {logitsType}));
  Block *entry = func.addEntryBlock();
  b.setInsertionPointToStart(entry);

  Value x = b.create<moe::EmbeddingOp>(ir.loc, actType, entry->getArgument(0),
                                       ir.param("model.embed_tokens.weight", {c.vocab, h}));
  auto norm = [&](Value in, const std::string &name, int64_t layer, const char *role) {
    return b
        .create<moe::RmsNormOp>(ir.loc, actType, in, ir.param(name, {h}),
                                b.getF64FloatAttr(c.rmsEps), ir.i64(layer), b.getStringAttr(role))
        .getResult();
  };
  // A SwiGLU block behind its router: routed experts, or (one always-on expert) shared/dense.
  auto experts = [&](Value in, const std::string &prefix, int64_t layer, int64_t count, int64_t k,
                     int64_t inner, const std::string &scoring, const char *kind) -> Value {
    bool synthetic = kind != nullptr;
    Value gate =
        ir.param(prefix + (synthetic ? ".gate.synthetic" : ".gate.weight"), {h, count}, synthetic);
    auto routeType = ir.tensor({tokens, k}, b.getI64Type());
    auto gateType = ir.tensor({tokens, k}, ir.f32);
    auto router = b.create<moe::RouterOp>(ir.loc, routeType, gateType, in, gate, ir.i64(layer),
                                          ir.i64(count), ir.i64(k), b.getStringAttr(scoring));
    if (synthetic)
      router->setAttr("moe.kind", b.getStringAttr(kind));
    SmallVector<Value> w1, w3, w2;
    for (int64_t e = 0; e < count; ++e) {
      std::string p = synthetic ? prefix : prefix + ".experts." + std::to_string(e);
      w1.push_back(ir.param(p + ".gate_proj.weight", {h, inner}));
      w3.push_back(ir.param(p + ".up_proj.weight", {h, inner}));
      w2.push_back(ir.param(p + ".down_proj.weight", {inner, h}));
    }
    auto op = b.create<moe::ExpertsOp>(ir.loc, actType, in, router.getIds(), router.getGates(), w1,
                                       w3, w2, ir.i64(layer), ir.i64(count), ir.i64(inner));
    if (synthetic)
      op->setAttr("moe.kind", b.getStringAttr(kind));
    return op.getResult();
  };

  const int64_t q = c.heads * c.headDim, kv = c.kvHeads * c.headDim;
  for (int64_t l = 0; l < c.layers; ++l) {
    std::string pre = "model.layers." + std::to_string(l);
    Value n1 = norm(x, pre + ".input_layernorm.weight", l, "attn_norm");
    auto attn = b.create<moe::AttentionOp>(
        ir.loc, actType, n1, ir.param(pre + ".self_attn.q_proj.weight", {h, q}),
        ir.param(pre + ".self_attn.k_proj.weight", {h, kv}),
        ir.param(pre + ".self_attn.v_proj.weight", {h, kv}),
        ir.param(pre + ".self_attn.o_proj.weight", {q, h}), ir.i64(l), ir.i64(c.heads),
        ir.i64(c.kvHeads), ir.i64(c.headDim), b.getF64FloatAttr(c.ropeTheta));
    if (c.window[l] > 0)
      attn->setAttr("moe.sliding_window", ir.i64(c.window[l]));
    Value hres = b.create<arith::AddFOp>(ir.loc, x, attn.getResult());
    Value n2 = norm(hres, pre + ".post_attention_layernorm.weight", l, "ffn_norm");
    Value y;
    if (c.denseLayer[l]) {
      y = experts(n2, pre + ".mlp", l, 1, 1, c.denseHidden, "softmax_topk_renorm", "dense");
    } else {
      y = experts(n2, pre + ".mlp", l, c.experts, c.topK, c.expertHidden, c.scoring, nullptr);
      if (c.sharedHidden > 0) {
        Value s = experts(n2, pre + ".mlp.shared_experts", l, 1, 1, c.sharedHidden,
                          "softmax_topk_renorm", "shared");
        y = b.create<arith::AddFOp>(ir.loc, y, s);
      }
    }
    x = b.create<arith::AddFOp>(ir.loc, hres, y);
  }
  Value fn = norm(x, "model.norm.weight", -1, "final_norm");
  Value logits =
      b.create<moe::HeadOp>(ir.loc, logitsType, fn, ir.param("lm_head.weight", {h, c.vocab}));
  b.create<func::ReturnOp>(ir.loc, logits);
  return module;
}

llvm::Expected<OwningOpRef<ModuleOp>>
importModelConfig(MLIRContext &context, const std::string &path, int64_t batch, int64_t seqLen) {
  llvm::Expected<ModelConfig> config = parseModelConfig(path);
  if (!config)
    return config.takeError();
  llvm::Expected<OwningOpRef<ModuleOp>> module = buildMoeModule(context, *config, batch, seqLen);
  if (!module)
    return fail(path + ": " + llvm::toString(module.takeError()));
  std::string first;
  ScopedDiagnosticHandler handler(&context, [&](Diagnostic &d) {
    if (first.empty())
      first = d.str();
    return success();
  });
  if (failed(verify(**module)))
    return fail(path + ": the built moe IR does not verify: " + first);
  return module;
}

} // namespace disagmoe::configfe
