//===- PlanEmitter.cpp - placed `moe` IR -> Plan --------------------------===//
#include "compiler/emit/PlanEmitter.h"

#include "dialects/moe/MoeDialect.h"
#include "dialects/onnx/OnnxDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include <chrono>
#include <map>
#include <set>

using namespace mlir;

namespace disagmoe {
namespace {

llvm::Error fail(const std::string &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

/// The module's `moe.placement` (place-groups): p groups of D_A attention and D_F FFN ranks,
/// numbered attention groups first.
struct IrPlacement {
  int64_t groups = 1, attnRanks = 0, ffnRanks = 0, worldSize = 0;
  std::vector<std::vector<int>> expertToRank;

  std::vector<int> attentionRanks(int64_t group) const {
    std::vector<int> r;
    for (int64_t i = 0; i < attnRanks; ++i)
      r.push_back(static_cast<int>(group * attnRanks + i));
    return r;
  }
  std::vector<int> ffnGroupRanks(int64_t group) const {
    std::vector<int> r;
    for (int64_t i = 0; i < ffnRanks; ++i)
      r.push_back(static_cast<int>(groups * attnRanks + group * ffnRanks + i));
    return r;
  }
};

std::optional<IrPlacement> readPlacement(ModuleOp module) {
  auto dict = module->getAttrOfType<DictionaryAttr>("moe.placement");
  if (!dict)
    return std::nullopt;
  IrPlacement p;
  p.groups = dict.getAs<IntegerAttr>("num_groups").getInt();
  p.attnRanks = dict.getAs<IntegerAttr>("attn_ranks").getInt();
  p.ffnRanks = dict.getAs<IntegerAttr>("ffn_ranks").getInt();
  p.worldSize = dict.getAs<IntegerAttr>("world_size").getInt();
  for (Attribute layer : dict.getAs<ArrayAttr>("expert_to_rank")) {
    std::vector<int> ranks;
    for (Attribute r : llvm::cast<ArrayAttr>(layer))
      ranks.push_back(static_cast<int>(llvm::cast<IntegerAttr>(r).getInt()));
    p.expertToRank.push_back(ranks);
  }
  return p;
}

/// Walks the placed function once, filling the plan's components, weight manifest, programs and
/// exchanges; placement, memory and weight-file stamps follow from them.
class PlanBuilder {
public:
  PlanBuilder(const IrPlacement &p, int64_t batch, int64_t seq) : p_(p) {
    model().batch = batch;
    model().seqLen = seq;
  }

  llvm::Error visit(Operation *op);
  Plan finish(const std::string &sourcePath);

private:
  ModelSpec &model() { return plan_.model; }
  std::vector<int> attnGroupRanks(int64_t layer) const {
    return p_.attentionRanks(layer % p_.groups);
  }
  std::vector<int> headRanks(bool onFfn) const {
    return onFfn ? p_.ffnGroupRanks(numLayers_ % p_.groups) : attnGroupRanks(numLayers_);
  }
  /// Embedding / head stages with on = "ffn" (assign-groups' embedding-side / head-side) run on
  /// the FFN group of the same index: x_0 goes F -> A, x_L A -> F (docs/plan-format.md).
  static bool onFfnSide(Operation *op) {
    auto stage = op->getParentOfType<moe::StageOp>();
    return stage && stage.getOn() && *stage.getOn() == "ffn";
  }

  int weight(Value v, const std::vector<int> &ranks);
  void instr(std::vector<Instruction> &program, OpCode op, int64_t layer, Stream stream,
             NormRole role = NormRole::None) {
    program.push_back({op, layer, role, stream});
  }
  void exchange(ExchangeKind kind, int64_t layer, int64_t src, int64_t dst, std::string id);
  int component(Component c) {
    model().components.push_back(std::move(c));
    return static_cast<int>(model().components.size() - 1);
  }

  void addEmbedding(moe::EmbeddingOp e);
  void addNorm(moe::RmsNormOp n);
  void addAttention(moe::AttentionOp a);
  void addMla(moe::MlaAttentionOp mla);
  void addRouter(moe::RouterOp r);
  llvm::Error addExperts(moe::ExpertsOp x);
  llvm::Error addDenseFfn(moe::DenseFfnOp d);
  void addHead(moe::HeadOp h);

  void orderAttentionProgram();
  void buildPlacement();
  void buildMemoryAndFiles();
  std::string family() const;

  const IrPlacement &p_;
  Plan plan_;
  std::map<std::string, int> weightIndex_; // name -> index into model.weights
  std::vector<std::set<int>> weightRanks_;
  std::vector<Instruction> ffnTail_; // an FFN-side head's instructions, after every layer's
  int64_t numLayers_ = 0;
  struct {
    bool qkNorm = false, sinks = false, mla = false, dense = false;
  } seen_;
};

int PlanBuilder::weight(Value v, const std::vector<int> &ranks) {
  auto w = v.getDefiningOp<onnxir::WeightOp>();
  const std::string name = w.getWeightName().str();
  auto [it, inserted] = weightIndex_.try_emplace(name, static_cast<int>(model().weights.size()));
  if (inserted) {
    WeightSpec spec;
    spec.name = name;
    // The bytes' dtype: float32, or the float16 / bfloat16 a weight was widened from
    // (normalize-onnx's WidenLowPrecisionWeight); the runtime widens those as it reads them.
    const std::optional<Type> stored = w.getStoredType();
    spec.dtype = !stored ? "float32" : llvm::isa<BFloat16Type>(*stored) ? "bfloat16" : "float16";
    auto type = llvm::cast<RankedTensorType>(w.getResult().getType());
    spec.shape.assign(type.getShape().begin(), type.getShape().end());
    spec.transposed = w.getTransposed();
    llvm::SmallString<256> abs(w.getFile());
    llvm::sys::fs::make_absolute(abs);
    spec.file = spec.path = std::string(abs);
    spec.offset = w.getOffset();
    spec.length = w.getLength();
    spec.rowStride = w.getRowStride().value_or(0);
    model().weights.push_back(std::move(spec));
    weightRanks_.emplace_back();
  }
  weightRanks_[static_cast<size_t>(it->second)].insert(ranks.begin(), ranks.end());
  return it->second;
}

void PlanBuilder::exchange(ExchangeKind kind, int64_t layer, int64_t src, int64_t dst,
                           std::string id) {
  ExchangeSpec e;
  e.id = std::move(id);
  e.kind = kind;
  e.layer = layer;
  e.srcGroup = src;
  e.dstGroup = dst;
  e.capacityTokens = model().batch * model().seqLen; // dropless at the compiled shape
  plan_.exchanges.push_back(std::move(e));           // bytes per token: in finish()
}

void PlanBuilder::addEmbedding(moe::EmbeddingOp e) {
  auto shape = llvm::cast<RankedTensorType>(e.getWeight().getType()).getShape();
  model().vocabSize = shape[0];
  model().hiddenSize = shape[1];
  const bool onFfn = onFfnSide(e);
  plan_.placement.embeddingOnFfn = onFfn;
  Component c;
  c.kind = ComponentKind::Embedding;
  c.weight = weight(e.getWeight(), onFfn ? p_.ffnGroupRanks(0) : attnGroupRanks(0));
  component(std::move(c));
  auto &programs = plan_.programs;
  if (onFfn) {
    instr(programs.ffn, OpCode::Embed, -1, Stream::Forward);
    instr(programs.ffn, OpCode::EmbedSend, -1, Stream::Comm);
    instr(programs.attention, OpCode::EmbedRecv, -1, Stream::Comm);
    exchange(ExchangeKind::Embedding, 0, 0, 0, "embedding");
  } else {
    instr(programs.attention, OpCode::Embed, -1, Stream::Forward);
  }
}

void PlanBuilder::addNorm(moe::RmsNormOp n) {
  const int64_t layer = n.getLayer();
  const bool finalOnFfn = layer < 0 && onFfnSide(n);
  Component c;
  c.kind = ComponentKind::RmsNorm;
  c.layer = layer;
  c.role = llvm::StringSwitch<NormRole>(n.getRole())
               .Case("attn_norm", NormRole::AttnNorm)
               .Case("ffn_norm", NormRole::FfnNorm)
               .Case("final_norm", NormRole::FinalNorm)
               .Default(NormRole::None);
  c.eps = static_cast<float>(n.getEps().convertToDouble());
  c.weight = weight(n.getWeight(), layer < 0 ? headRanks(finalOnFfn) : attnGroupRanks(layer));
  model().rmsNormEps = c.eps;
  const NormRole role = c.role;
  component(std::move(c));
  if (finalOnFfn) {
    // x_L goes from the attention group that formed it to the head's FFN group first.
    plan_.placement.headOnFfn = true;
    instr(plan_.programs.attention, OpCode::HeadSend, -1, Stream::Comm);
    instr(ffnTail_, OpCode::HeadRecv, -1, Stream::Comm);
    instr(ffnTail_, OpCode::RmsNorm, layer, Stream::Forward, role);
    const int64_t g = numLayers_ % p_.groups;
    exchange(ExchangeKind::Head, numLayers_ - 1, g, g, "head");
  } else {
    instr(plan_.programs.attention, OpCode::RmsNorm, layer, Stream::Forward, role);
  }
}

void PlanBuilder::addAttention(moe::AttentionOp a) {
  const int64_t layer = a.getLayer();
  numLayers_ = std::max(numLayers_, layer + 1);
  const auto ranks = attnGroupRanks(layer);
  Component c;
  c.kind = ComponentKind::Attention;
  c.layer = layer;
  c.wq = weight(a.getWq(), ranks);
  c.wk = weight(a.getWk(), ranks);
  c.wv = weight(a.getWv(), ranks);
  c.wo = weight(a.getWo(), ranks);
  // Optional parts of the model families.
  for (auto [member, value] : {std::pair<int Component::*, Value>{&Component::bq, a.getBq()},
                               {&Component::bk, a.getBk()},
                               {&Component::bv, a.getBv()},
                               {&Component::bo, a.getBo()},
                               {&Component::qNorm, a.getQNorm()},
                               {&Component::kNorm, a.getKNorm()},
                               {&Component::sinks, a.getSinks()}})
    if (value)
      c.*member = weight(value, ranks);
  if (auto eps = a.getQkNormEps())
    c.qkNormEps = static_cast<float>(eps->convertToDouble());
  if (auto window = a.getSlidingWindow())
    c.slidingWindow = *window;
  c.ropeInterleaved = a.getRopeInterleaved();
  seen_.qkNorm |= c.qNorm >= 0;
  seen_.sinks |= c.sinks >= 0;
  component(std::move(c));
  model().numHeads = a.getNumHeads();
  model().numKvHeads = a.getNumKvHeads();
  model().headDim = a.getHeadDim();
  model().ropeTheta = a.getRopeTheta().convertToDouble();
  if (auto invFreq = a.getRopeInvFreq()) // a scaled RoPE (YaRN): its frequencies as fp32
    model().ropeInvFreq.assign(invFreq->begin(), invFreq->end());
  if (auto m = a.getRopeAttentionFactor())
    model().ropeAttentionFactor = static_cast<float>(m->convertToDouble());
  instr(plan_.programs.attention, OpCode::Attention, layer, Stream::Forward);
}

void PlanBuilder::addMla(moe::MlaAttentionOp mla) {
  // DeepSeek-V2's multi-head latent attention.
  const int64_t layer = mla.getLayer();
  numLayers_ = std::max(numLayers_, layer + 1);
  const auto ranks = attnGroupRanks(layer);
  Component c;
  c.kind = ComponentKind::MlaAttention;
  c.layer = layer;
  c.wq = weight(mla.getWq(), ranks);
  c.wkvA = weight(mla.getWkvA(), ranks);
  c.kvNorm = weight(mla.getKvNorm(), ranks);
  c.wkvB = weight(mla.getWkvB(), ranks);
  c.wo = weight(mla.getWo(), ranks);
  c.kvNormEps = static_cast<float>(mla.getKvNormEps().convertToDouble());
  c.softmaxScale = static_cast<float>(mla.getSoftmaxScale().convertToDouble());
  c.ropeInterleaved = mla.getRopeInterleaved();
  component(std::move(c));
  ModelSpec &m = model();
  m.numHeads = m.numKvHeads = mla.getNumHeads();
  m.headDim = mla.getQkNopeHeadDim() + mla.getQkRopeHeadDim();
  m.qkNopeHeadDim = mla.getQkNopeHeadDim();
  m.qkRopeHeadDim = mla.getQkRopeHeadDim();
  m.vHeadDim = mla.getVHeadDim();
  m.kvLoraRank = mla.getKvLoraRank();
  m.ropeTheta = mla.getRopeTheta().convertToDouble();
  seen_.mla = true;
  instr(plan_.programs.attention, OpCode::Attention, layer, Stream::Forward);
}

void PlanBuilder::addRouter(moe::RouterOp r) {
  const int64_t layer = r.getLayer();
  Component c;
  c.kind = ComponentKind::Router;
  c.layer = layer;
  c.weight = weight(r.getWeight(), attnGroupRanks(layer));
  if (r.getBias())
    c.bias = weight(r.getBias(), attnGroupRanks(layer));
  if (r.getCorrectionBias())
    c.correctionBias = weight(r.getCorrectionBias(), attnGroupRanks(layer));
  if (auto f = r.getRoutedScalingFactor())
    c.routedScalingFactor = static_cast<float>(f->convertToDouble());
  component(std::move(c));
  ModelSpec &m = model();
  m.numExperts = r.getNumExperts();
  m.topK = r.getTopK();
  m.routerScoring = llvm::StringSwitch<RouterScoring>(r.getScoring())
                        .Case("softmax_topk", RouterScoring::SoftmaxTopk)
                        .Case("topk_softmax", RouterScoring::TopkSoftmax)
                        .Case("sigmoid_group_topk_renorm", RouterScoring::SigmoidGroupTopkRenorm)
                        .Case("sigmoid_group_topk", RouterScoring::SigmoidGroupTopk)
                        .Default(RouterScoring::SoftmaxTopkRenorm);
  m.routerGroups = {r.getNGroup().value_or(1), r.getTopkGroup().value_or(1)};
  instr(plan_.programs.attention, OpCode::Router, layer, Stream::Forward);
}

llvm::Error PlanBuilder::addExperts(moe::ExpertsOp x) {
  const int64_t layer = x.getLayer();
  if (layer >= static_cast<int64_t>(p_.expertToRank.size()))
    return fail("no expert placement for layer " + std::to_string(layer));
  Component c;
  c.kind = ComponentKind::Experts;
  c.layer = layer;
  for (int64_t e = 0; e < x.getNumExperts(); ++e) {
    const std::vector<int> owner{p_.expertToRank[layer][e]};
    ExpertWeights ew;
    ew.expert = e;
    ew.w1 = weight(x.getW1()[e], owner);
    ew.w2 = weight(x.getW2()[e], owner);
    if (!x.getW3().empty())
      ew.w3 = weight(x.getW3()[e], owner);
    for (auto [member, range] :
         {std::pair<int ExpertWeights::*, OperandRange>{&ExpertWeights::b1, x.getB1()},
          {&ExpertWeights::b3, x.getB3()},
          {&ExpertWeights::b2, x.getB2()}})
      if (!range.empty())
        ew.*member = weight(range[e], owner);
    c.experts.push_back(ew);
  }
  if (auto act = x.getActivation())
    c.activation = llvm::StringSwitch<ExpertActivation>(*act)
                       .Case("swiglu_oai", ExpertActivation::SwigluOai)
                       .Case("relu", ExpertActivation::Relu)
                       .Case("gelu_tanh", ExpertActivation::GeluTanh)
                       .Case("silu", ExpertActivation::Silu)
                       .Case("identity", ExpertActivation::Identity)
                       .Default(ExpertActivation::Swiglu);
  if (auto limit = x.getSwigluLimit())
    c.swigluLimit = static_cast<float>(limit->convertToDouble());
  if (auto alpha = x.getSwigluAlpha())
    c.swigluAlpha = static_cast<float>(alpha->convertToDouble());
  c.fusedGateUp = x.getFusedGateUp();
  component(std::move(c));
  model().expertHidden = x.getExpertHidden();
  instr(plan_.programs.ffn, OpCode::Experts, layer, Stream::Forward);
  return llvm::Error::success();
}

llvm::Error PlanBuilder::addDenseFfn(moe::DenseFfnOp d) {
  // A dense layer's FFN or a layer's shared experts: h += FFN(norm(h)) on the attention side, or,
  // with side = "ffn" (assign-groups), on the F-ranks of the layer's FFN group.
  const int64_t layer = d.getLayer();
  const bool onFfn = d.getSide() && *d.getSide() == "ffn";
  // An FFN-side one sits in the layer's FFN stage (fuse-exchange), after its moe.m2n: it runs on
  // the F-ranks right after the M2N arrives, before the routed experts.
  auto stage = d->getParentOfType<moe::StageOp>();
  if (onFfn != (stage && stage.getSide() == "ffn"))
    return fail("dense_ffn of layer " + std::to_string(layer) + " has side '" +
                (onFfn ? "ffn" : "attention") + "' but sits in a " +
                (stage ? stage.getSide().str() : std::string("function")) +
                " stage (run fuse-exchange after assign-groups)");
  const auto ranks = onFfn ? p_.ffnGroupRanks(layer % p_.groups) : attnGroupRanks(layer);
  Component c;
  c.kind = ComponentKind::DenseFfn;
  c.layer = layer;
  c.denseRole = d.getRole() == "dense" ? DenseFfnRole::Dense : DenseFfnRole::Shared;
  c.ffnHidden = d.getFfnHidden();
  c.w1 = weight(d.getW1(), ranks);
  c.w3 = weight(d.getW3(), ranks);
  c.w2 = weight(d.getW2(), ranks);
  c.onFfnSide = onFfn;
  if (c.denseRole == DenseFfnRole::Dense)
    seen_.dense = true;
  else
    model().numSharedExperts = d.getNumSharedExperts().value_or(1);
  component(std::move(c));
  instr(onFfn ? plan_.programs.ffn : plan_.programs.attention, OpCode::DenseFfn, layer,
        Stream::Forward);
  return llvm::Error::success();
}

void PlanBuilder::addHead(moe::HeadOp h) {
  const bool onFfn = onFfnSide(h);
  Component c;
  c.kind = ComponentKind::Head;
  c.weight = weight(h.getWeight(), headRanks(onFfn));
  component(std::move(c));
  instr(onFfn ? ffnTail_ : plan_.programs.attention, OpCode::Head, -1, Stream::Forward);
}

llvm::Error PlanBuilder::visit(Operation *op) {
  auto &programs = plan_.programs;
  if (auto e = dyn_cast<moe::EmbeddingOp>(op))
    addEmbedding(e);
  else if (auto n = dyn_cast<moe::RmsNormOp>(op))
    addNorm(n);
  else if (auto a = dyn_cast<moe::AttentionOp>(op))
    addAttention(a);
  else if (auto mla = dyn_cast<moe::MlaAttentionOp>(op))
    addMla(mla);
  else if (auto add = dyn_cast<arith::AddFOp>(op)) {
    // h = x + attention(x); the other add (x_{l+1} = h + N2M) is done by n2m_recv.
    if (auto attn = add.getRhs().getDefiningOp<moe::AttentionOp>())
      instr(programs.attention, OpCode::ResidualAdd, attn.getLayer(), Stream::Forward);
    else if (auto m = add.getRhs().getDefiningOp<moe::MlaAttentionOp>())
      instr(programs.attention, OpCode::ResidualAdd, m.getLayer(), Stream::Forward);
  } else if (auto r = dyn_cast<moe::RouterOp>(op))
    addRouter(r);
  else if (auto x = dyn_cast<moe::ExpertsOp>(op))
    return addExperts(x);
  else if (auto d = dyn_cast<moe::DenseFfnOp>(op))
    return addDenseFfn(d);
  else if (auto h = dyn_cast<moe::HeadOp>(op))
    addHead(h);
  else if (auto m = dyn_cast<moe::M2NOp>(op)) {
    const int64_t layer = m.getLayer();
    instr(programs.attention, OpCode::M2nSend, layer, Stream::Comm);
    instr(programs.ffn, OpCode::M2nRecv, layer, Stream::Comm);
    exchange(ExchangeKind::M2n, layer, m.getSrcGroup(), m.getDstGroup(),
             "m2n." + std::to_string(layer));
    // Expected F-ranks per token under uniform routing (exchange-volume), for the simulator.
    if (auto volume = m->getAttrOfType<DictionaryAttr>("volume"))
      plan_.exchanges.back().expectedDestinationsPerToken =
          volume.getAs<FloatAttr>("destinations_per_token").getValueAsDouble();
  } else if (auto n2m = dyn_cast<moe::N2MOp>(op)) {
    const int64_t layer = n2m.getLayer();
    instr(programs.ffn, OpCode::N2mSend, layer, Stream::Comm);
    instr(programs.attention, OpCode::N2mRecv, layer, Stream::Comm);
    exchange(ExchangeKind::N2m, layer, n2m.getSrcGroup(), n2m.getDstGroup(),
             "n2m." + std::to_string(layer));
  } else if (auto res = dyn_cast<moe::ResidualOp>(op)) {
    const int64_t layer = res.getLayer();
    instr(programs.attention, OpCode::ResidualSend, layer, Stream::Comm);
    instr(programs.attention, OpCode::ResidualRecv, layer, Stream::Comm);
    exchange(ExchangeKind::Residual, layer, res.getSrcGroup(), res.getDstGroup(),
             "residual." + std::to_string(layer));
  }
  return llvm::Error::success();
}

// n2m_recv of layer l must follow the residual route of layer l in the attention program; the IR
// order (ffn stage, n2m, residual) puts it first, so move each n2m_recv after its residual_recv.
void PlanBuilder::orderAttentionProgram() {
  std::vector<Instruction> ordered;
  std::optional<Instruction> pendingN2M;
  for (const Instruction &ins : plan_.programs.attention) {
    if (ins.op == OpCode::N2mRecv) {
      pendingN2M = ins;
      continue;
    }
    ordered.push_back(ins);
    if (ins.op == OpCode::ResidualRecv && pendingN2M) {
      ordered.push_back(*pendingN2M);
      pendingN2M.reset();
    }
  }
  plan_.programs.attention = std::move(ordered);
  for (const Instruction &ins : ffnTail_)
    plan_.programs.ffn.push_back(ins);
}

void PlanBuilder::buildPlacement() {
  Placement &placement = plan_.placement;
  placement.worldSize = static_cast<int>(p_.worldSize);
  for (int64_t g = 0; g < p_.groups; ++g) {
    std::vector<int64_t> layers;
    for (int64_t l = g; l < numLayers_; l += p_.groups)
      layers.push_back(l);
    placement.groups.push_back({GroupRole::Attention, g, p_.attentionRanks(g), layers});
    placement.groups.push_back({GroupRole::Ffn, g, p_.ffnGroupRanks(g), layers});
  }
  placement.expertToRank = p_.expertToRank;
  placement.embeddingGroup = 0;
  placement.headGroup = numLayers_ % p_.groups;
}

// Weights per rank, and each file the weights point into with its size and modification time, so
// that the runtime refuses a plan whose model was overwritten after compiling (offsets would read
// another model's bytes). Only the file's metadata is read, never its bytes. An external-data file
// absent at compile time (compiling needs only the .onnx) gets no entry.
void PlanBuilder::buildMemoryAndFiles() {
  plan_.memory.weightBytes.assign(static_cast<size_t>(p_.worldSize), 0);
  plan_.memory.activationBytes.assign(static_cast<size_t>(p_.worldSize), std::nullopt);
  std::set<std::string> files;
  for (size_t i = 0; i < model().weights.size(); ++i) {
    WeightSpec &w = model().weights[i];
    w.ranks.assign(weightRanks_[i].begin(), weightRanks_[i].end());
    for (int r : w.ranks)
      plan_.memory.weightBytes[static_cast<size_t>(r)] += w.length;
    files.insert(w.file);
  }
  for (const std::string &file : files) {
    llvm::sys::fs::file_status st;
    if (llvm::sys::fs::status(file, st) || !llvm::sys::fs::exists(st))
      continue;
    const int64_t mtimeNs = std::chrono::duration_cast<std::chrono::nanoseconds>(
                                st.getLastModificationTime().time_since_epoch())
                                .count();
    plan_.files.push_back({file, static_cast<int64_t>(st.getSize()), mtimeNs});
  }
}

// The family, from the structure that was recognised.
std::string PlanBuilder::family() const {
  return seen_.mla                                           ? "deepseek_v2"
         : seen_.sinks                                       ? "gpt_oss"
         : seen_.qkNorm                                      ? "qwen3_moe"
         : (seen_.dense || plan_.model.numSharedExperts > 0) ? "deepseek_moe"
                                                             : "mixtral";
}

Plan PlanBuilder::finish(const std::string &sourcePath) {
  plan_.source = sourcePath;
  model().numLayers = numLayers_;
  model().family = family();
  for (ExchangeSpec &e : plan_.exchanges)
    e.bytesPerToken = bytesPerTokenOf(e.kind, model().hiddenSize, model().topK);
  orderAttentionProgram();
  buildPlacement();
  buildMemoryAndFiles();
  return std::move(plan_);
}

} // namespace

llvm::Expected<Plan> emitPlan(ModuleOp module, const std::string &sourcePath) {
  auto placement = readPlacement(module);
  if (!placement)
    return fail("module has no 'moe.placement' attribute (run place-groups before emitting)");
  auto funcs = llvm::to_vector(module.getOps<func::FuncOp>());
  if (funcs.size() != 1)
    return fail("expected exactly one function in the module");
  auto ids = llvm::cast<RankedTensorType>(funcs.front().getArgument(0).getType());
  if (!ids.hasStaticShape() || ids.getRank() != 2)
    return fail("token ids must have a static [batch, seq] shape (pass --batch and --seq-len)");
  PlanBuilder builder(*placement, ids.getDimSize(0), ids.getDimSize(1));
  llvm::Error error = llvm::Error::success();
  funcs.front().walk([&](Operation *op) {
    if (error)
      return WalkResult::interrupt();
    error = builder.visit(op);
    return error ? WalkResult::interrupt() : WalkResult::advance();
  });
  if (error)
    return std::move(error);
  return builder.finish(sourcePath);
}

llvm::Error savePlan(const Plan &plan, const std::string &dir) {
  const std::string error = writePlan(plan, dir);
  return error.empty() ? llvm::Error::success() : fail(error);
}

} // namespace disagmoe
