//===- InspectCommand.cpp - `disagmoe inspect`: what the frontend recognised ---===//
//
//   disagmoe inspect MODEL.onnx [--json] [--seq-len S]
//
// Imports and raises the model, then prints its hyper-parameters as recognised (layers, hidden,
// heads, KV heads, head dim, experts, shared experts, top-k, router scoring, dense layers) and the
// parameters and forward FLOPs per token of each component, from the one cost model in
// runtime/cost (Roofline.h: FLOP = 2 per multiply-add; the attention score term for sequences of
// --seq-len tokens, default 4096). `--json` prints the same for scripts.
//
//===----------------------------------------------------------------------===//
#include "compiler/pipeline/Pipeline.h"
#include "compiler/tools/CommandLine.h"
#include "frontends/config/CostExtraction.h"
#include "runtime/cost/Roofline.h"

#include "dialects/moe/MoeDialect.h"

#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <set>

using namespace llvm;

namespace {
/// Router form and dense-layer facts that the cost model's shape does not carry.
struct RouterFacts {
  std::string scoring;
  std::set<int64_t> moeLayers;
};

RouterFacts routerFacts(mlir::ModuleOp module) {
  RouterFacts f;
  module.walk([&](disagmoe::moe::RouterOp r) {
    f.scoring = r.getScoring().str();
    f.moeLayers.insert(r.getLayer());
  });
  return f;
}
} // namespace

int inspectMain(int argc, char **argv) {
  cl::OptionCategory category("disagmoe inspect options");
  cl::opt<std::string> input(cl::Positional, cl::desc("<model.onnx>"), cl::Required,
                             cl::cat(category));
  cl::opt<bool> asJson("json", cl::desc("Print JSON instead of a table"), cl::cat(category));
  disagmoe::tools::NumberOpt<int64_t> seqLen(
      "seq-len", cl::desc("Sequence length for the attention FLOPs (default 4096, at most 2^24)"),
      cl::init(4096), cl::cat(category));
  cl::opt<bool> timing("timing", cl::desc("Print the time of each phase to stderr"),
                       cl::cat(category));
  cl::HideUnrelatedOptions(category);
  if (!disagmoe::tools::parseCommandLine(
          argc, argv, "disagmoe inspect: what the frontend recognised\n", "disagmoe inspect"))
    return 2;
  // Bounded so that the int64 FLOP counts (which grow with seq-len, the attention part
  // quadratically summed over a sequence) cannot overflow: 99999999999999999 printed negative
  // FLOPs. 2^24 tokens is past any model's context window.
  constexpr int64_t kMaxSeqLen = int64_t{1} << 24;
  if (seqLen < 1 || seqLen > kMaxSeqLen) {
    errs() << "disagmoe inspect: --seq-len must be in [1, " << kMaxSeqLen << "], got " << seqLen
           << "\n";
    return 1;
  }

  mlir::MLIRContext context(mlir::MLIRContext::Threading::DISABLED);
  context.printOpOnDiagnostic(false);
  disagmoe::CompileOptions options;
  options.stopAfter = "raise";
  options.timing = timing;
  auto compiled = disagmoe::compileOnnx(context, input, options, nulls());
  if (!compiled) {
    errs() << "disagmoe inspect: " << llvm::toString(compiled.takeError()) << "\n";
    return 1;
  }
  mlir::OwningOpRef<mlir::ModuleOp> module = std::move(*compiled);
  disagmoe::cost::ModelShape shape;
  if (llvm::Error e = disagmoe::configfe::extractModelShape(*module, shape)) {
    errs() << "disagmoe inspect: " << input << ": " << llvm::toString(std::move(e)) << "\n";
    return 1;
  }
  RouterFacts router = routerFacts(*module);
  const disagmoe::cost::LayerShape *moeLayer = nullptr;
  std::vector<int64_t> denseLayers;
  for (int64_t l = 0; l < shape.numLayers(); ++l) {
    if (shape.layers[l].isMoe())
      moeLayer = moeLayer ? moeLayer : &shape.layers[l];
    else
      denseLayers.push_back(l);
  }
  const disagmoe::cost::LayerShape &first = shape.layers.front();
  const int64_t sharedHidden = moeLayer ? moeLayer->sharedHidden : 0;
  const int64_t expertHidden = moeLayer ? moeLayer->expertHidden : 0;

  // Per-token forward FLOPs by component, summed over layers (one sequence of seqLen tokens).
  const double tokens = static_cast<double>(seqLen);
  double projections = 0, scores = 0, routerFlops = 0, sharedDense = 0, experts = 0;
  double attentionParams = 0, expertParams = 0;
  for (int64_t l = 0; l < shape.numLayers(); ++l) {
    auto a = disagmoe::cost::attentionSideForwardFlops(shape, l, 1.0, seqLen);
    projections += a.projections / tokens;
    scores += a.scores / tokens;
    routerFlops += a.router / tokens;
    sharedDense += a.sharedAndDense / tokens;
    experts += disagmoe::cost::routedExpertForwardFlops(shape, l, tokens) / tokens;
    attentionParams += shape.attentionSideParams(l);
    expertParams += shape.expertParams(l) * static_cast<double>(shape.layers[l].experts);
  }
  const double head = disagmoe::cost::headForwardFlops(shape, tokens) / tokens;
  const double embedHead = shape.embeddingAndHeadParams();

  json::Array denseJson;
  for (int64_t l : denseLayers)
    denseJson.push_back(l);
  json::Object hyper{{"layers", shape.numLayers()},
                     {"hidden", shape.hidden},
                     {"vocab", shape.vocab},
                     {"heads", first.heads},
                     {"kv_heads", first.kvHeads},
                     {"head_dim", first.headDim},
                     {"experts", moeLayer ? moeLayer->experts : 0},
                     {"top_k", moeLayer ? moeLayer->topK : 0},
                     {"expert_hidden", expertHidden},
                     {"shared_expert_hidden", sharedHidden},
                     {"router_scoring", router.scoring},
                     {"dense_layers", std::move(denseJson)}};
  json::Object params{{"attention_side", attentionParams},
                      {"routed_experts", expertParams},
                      {"embedding_and_head", embedHead},
                      {"total", shape.totalParams()},
                      {"active_per_token", shape.activeParams()}};
  json::Object flops{{"seq_len", seqLen.getValue()},
                     {"attention_projections", projections},
                     {"attention_scores", scores},
                     {"router", routerFlops},
                     {"shared_and_dense_ffn", sharedDense},
                     {"routed_experts", experts},
                     {"head", head},
                     {"total", projections + scores + routerFlops + sharedDense + experts + head}};
  if (asJson) {
    outs() << formatv("{0:2}",
                      json::Value(json::Object{{"model", input.getValue()},
                                               {"hyper_parameters", std::move(hyper)},
                                               {"parameters", std::move(params)},
                                               {"forward_flops_per_token", std::move(flops)}}))
           << "\n";
    return 0;
  }
  outs() << input << "\n\n";
  outs() << formatv("  {0,-22} {1}\n", "layers", shape.numLayers());
  outs() << formatv("  {0,-22} {1}\n", "hidden", shape.hidden);
  outs() << formatv("  {0,-22} {1}\n", "vocab", shape.vocab);
  outs() << formatv("  {0,-22} {1} (kv heads {2}, head dim {3})\n", "attention heads", first.heads,
                    first.kvHeads, first.headDim);
  outs() << formatv("  {0,-22} {1}, top-{2}, expert hidden {3}\n", "routed experts",
                    moeLayer ? moeLayer->experts : 0, moeLayer ? moeLayer->topK : 0, expertHidden);
  outs() << formatv("  {0,-22} {1}\n", "shared expert hidden", sharedHidden);
  outs() << formatv("  {0,-22} {1}\n", "router scoring", router.scoring);
  std::string dense;
  for (int64_t l : denseLayers)
    dense += (dense.empty() ? "" : ", ") + std::to_string(l);
  outs() << formatv("  {0,-22} {1}\n\n", "dense layers", dense.empty() ? "none" : dense);

  outs() << formatv("  {0,-26} {1,16} {2,22}\n", "component", "parameters",
                    formatv("FLOPs/token (s={0})", seqLen.getValue()).str());
  auto row = [](StringRef name, double p, double f) {
    outs() << formatv("  {0,-26} {1,16:N} {2,22:N}\n", name, static_cast<int64_t>(p),
                      static_cast<int64_t>(f));
  };
  row("attention projections", attentionParams, projections);
  row("attention scores", 0, scores);
  row("router", 0, routerFlops);
  row("shared experts / dense FFN", 0, sharedDense);
  row("routed experts (all)", expertParams, experts);
  row("embedding + head", embedHead, head);
  row("total", shape.totalParams(),
      projections + scores + routerFlops + sharedDense + experts + head);
  outs() << formatv("\n  attention-side parameters include norms, router, shared experts and dense "
                    "FFNs; routed-expert FLOPs are for the top-{0} experts a token uses; {1:N} "
                    "parameters active per token.\n",
                    moeLayer ? moeLayer->topK : 0, static_cast<int64_t>(shape.activeParams()));
  return 0;
}
