//===- CostExtraction.cpp - `moe` IR -> cost::ModelShape ------------------===//
#include "frontends/config/CostExtraction.h"

#include "dialects/moe/MoeDialect.h"

#include "mlir/IR/BuiltinTypes.h"

#include <map>

namespace disagmoe::configfe {
using namespace mlir;

namespace {
std::optional<std::pair<int64_t, int64_t>> matrixShape(Value v) {
  auto t = dyn_cast<RankedTensorType>(v.getType());
  if (!t || t.getRank() != 2 || !t.hasStaticShape())
    return std::nullopt;
  return std::make_pair(t.getDimSize(0), t.getDimSize(1));
}

llvm::Error fail(const std::string &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

std::string kindOf(Operation *op) {
  if (auto k = op->getAttrOfType<StringAttr>("moe.kind"))
    return k.getValue().str();
  return "routed";
}
} // namespace

llvm::Error extractModelShape(ModuleOp module, cost::ModelShape &out) {
  cost::ModelShape m;
  if (auto src = module->getAttrOfType<StringAttr>("moe.source"))
    m.name = src.getValue().str();
  m.tiedEmbeddings = module->hasAttr("moe.tied_embeddings");
  std::map<int64_t, cost::LayerShape> layers;
  std::string failure;
  module.walk([&](Operation *op) {
    if (!failure.empty())
      return;
    if (auto e = dyn_cast<moe::EmbeddingOp>(op)) {
      if (auto s = matrixShape(e.getWeight())) {
        m.vocab = s->first;
        m.hidden = s->second;
      }
    } else if (auto hd = dyn_cast<moe::HeadOp>(op)) {
      if (auto s = matrixShape(hd.getWeight())) {
        m.hidden = s->first;
        m.vocab = s->second;
      }
    } else if (auto a = dyn_cast<moe::AttentionOp>(op)) {
      cost::LayerShape &l = layers[a.getLayer()];
      l.heads = a.getNumHeads();
      l.kvHeads = a.getNumKvHeads();
      l.headDim = a.getHeadDim();
      if (auto w = op->getAttrOfType<IntegerAttr>("moe.sliding_window"))
        l.window = w.getInt();
      if (auto w = a.getSlidingWindow()) // raised from an ONNX export
        l.window = *w;
    } else if (auto d = dyn_cast<moe::DenseFfnOp>(op)) {
      // Raised dense layers and shared experts (one SwiGLU of width ffn_hidden).
      cost::LayerShape &l = layers[d.getLayer()];
      (d.getRole() == "shared" ? l.sharedHidden : l.denseHidden) += d.getFfnHidden();
    } else if (auto mla = dyn_cast<moe::MlaAttentionOp>(op)) {
      failure = "layer " + std::to_string(mla.getLayer()) +
                ": multi-head latent attention (moe.mla_attention) is not in the cost model yet";
    } else if (auto r = dyn_cast<moe::RouterOp>(op)) {
      if (kindOf(op) == "routed")
        layers[r.getLayer()].topK = r.getTopK();
    } else if (auto x = dyn_cast<moe::ExpertsOp>(op)) {
      cost::LayerShape &l = layers[x.getLayer()];
      std::string kind = kindOf(op);
      if (kind == "shared") {
        l.sharedHidden += x.getNumExperts() * x.getExpertHidden();
      } else if (kind == "dense") {
        l.denseHidden += x.getNumExperts() * x.getExpertHidden();
      } else if (kind == "routed") {
        if (l.experts)
          failure = "layer " + std::to_string(x.getLayer()) + " has two routed moe.experts ops";
        l.experts = x.getNumExperts();
        l.expertHidden = x.getExpertHidden();
        const llvm::StringRef act = x.getActivation().value_or("swiglu");
        l.expertMatrices = act == "swiglu" || act == "swiglu_oai" ? 3 : 2; // non-gated: no W3
      } else {
        failure = "moe.experts of layer " + std::to_string(x.getLayer()) + ": unknown moe.kind '" +
                  kind + "'";
      }
    }
  });
  if (!failure.empty())
    return fail(failure);
  if (layers.empty())
    return fail(
        "the module has no moe.attention op (raise the ONNX graph or import a config first)");
  int64_t expected = 0;
  for (auto &[index, shape] : layers) {
    if (index != expected)
      return fail("layer " + std::to_string(expected) + " has no moe.attention op");
    ++expected;
    m.layers.push_back(shape);
  }
  std::string invalid = m.validate();
  if (!invalid.empty())
    return fail(invalid);
  out = std::move(m);
  return llvm::Error::success();
}

double countIrParameters(ModuleOp module) {
  double total = 0;
  module.walk([&](Operation *op) {
    StringRef name = op->getName().getStringRef();
    if ((name != "moe.param" && name != "onnx.weight") || op->hasAttr("moe.synthetic") ||
        op->getNumResults() != 1)
      return;
    if (auto t = dyn_cast<RankedTensorType>(op->getResult(0).getType()); t && t.hasStaticShape())
      total += static_cast<double>(t.getNumElements());
  });
  return total;
}

} // namespace disagmoe::configfe
