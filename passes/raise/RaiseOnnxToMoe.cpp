//===- RaiseOnnxToMoe.cpp - recognise MoE components in an ONNX graph -----===//
//
// Walks the residual stream of a decoder exported by torch.onnx.export and recognises, by
// structure:
//   embedding  Gather(W[vocab, hidden], input_ids)
//   RMSNorm    Pow(x, 2) -> ReduceMean(-1) -> Add(eps) -> Sqrt -> Div(1, .) -> Mul(x, .) -> Mul(w,
//   .) attention  three projections MatMul(norm, W) feeding a scaled, causally masked Softmax(QK^T)
//   V with
//              RoPE (Cos/Sin of an inverse-frequency constant), then MatMul(., Wo)
//   router     MatMul(norm, Wg) -> Softmax -> TopK(K) [-> ReduceSum -> Div]  or  TopK -> Softmax
//   experts    SwiGLU blocks MatMul(rows, W1) -> Sigmoid/Mul, MatMul(rows, W3), MatMul(., W2) whose
//   rows
//              are selected by the router's one-hot mask (Gather(mask, e) -> NonZero -> ...)
//   head       MatMul(final norm, W[hidden, vocab]) producing the graph output
// and the parts of the other MoE families, each found by its structure:
//   q/k norm   an RMSNorm over head_dim on the [b, s, heads, head_dim] view of q and k (Qwen3)
//   biases     Add(MatMul(x, W), b[out]) on q/k/v/o projections (GPT-OSS), experts and router
//   sinks      a per-head weight concatenated to the scores before the Softmax, whose column the
//              Slice after the Softmax drops (GPT-OSS attention sinks)
//   window     a second additive mask Trilu(-inf, k = -w, upper = 0) (GPT-OSS sliding window)
//   router     also Gemm(x, Wg^T, b) / MatMul + Add(b) logits, and a Mul by a constant after the
//              gates (DeepSeek's routed_scaling_factor)
//   experts    also GPT-OSS's fused gate_up MatMul whose even/odd columns (Slice step 2) are the
//              gate and up inputs of the clamped SwiGLU (Clip, Mul(alpha), Sigmoid, Add(1))
//   dense FFN  a SwiGLU block on the FFN norm output with no router (DeepSeek's dense layers)
//   shared     a SwiGLU block on the FFN norm output beside the router, added to the experts'
//              output (DeepSeek's shared experts)
// (docs/architecture.md, "What real exports look like"). Hyper-parameters come from the graph: head
// counts from the q/k Reshape shapes, head_dim from the softmax scale, the RoPE base from the
// inverse-frequency constant, top-k from TopK's K.
//
// Every ONNX node must end up inside a recognised component; a node that does not (an op the
// recogniser does not know, or an extra op in the residual stream) is an error naming it, so an
// export is never silently run as something else.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"
#include "passes/raise/ComponentCoverage.h"
#include "passes/raise/ContribMoeMatcher.h"
#include "passes/raise/DispatchDataflowCheck.h"
#include "passes/raise/GraphMatchers.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/StringSet.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <deque>

namespace disagmoe {
#define GEN_PASS_DEF_RAISEONNXTOMOE
#include "passes/Passes.h.inc"

namespace {
using namespace mlir;
using namespace disagmoe::raise;

/// ONNX op types that appear in the supported decoder exports (opset 13-17).
const llvm::StringSet<> &supportedOpTypes() {
  static const llvm::StringSet<> ops = {"Add",
                                        "Cast",
                                        "Concat",
                                        "Constant",
                                        "ConstantOfShape",
                                        "Cos",
                                        "Div",
                                        "Equal",
                                        "Expand",
                                        "Flatten",
                                        "Gather",
                                        "Identity",
                                        "MatMul",
                                        "Mul",
                                        "Neg",
                                        "NonZero",
                                        "OneHot",
                                        "Pow",
                                        "Range",
                                        "ReduceMean",
                                        "ReduceSum",
                                        "Reshape",
                                        "ScatterElements",
                                        "Shape",
                                        "Sigmoid",
                                        "Sin",
                                        "Slice",
                                        "Softmax",
                                        "Split",
                                        "Sqrt",
                                        "Squeeze",
                                        "Sub",
                                        "Tile",
                                        "TopK",
                                        "Transpose",
                                        "Trilu",
                                        "Unsqueeze",
                                        "Where",
                                        "Less",
                                        "Greater",
                                        "Min",
                                        "Max",
                                        "Gemm",
                                        "Clip",
                                        "ReduceMax",
                                        "Einsum"};
  return ops;
}

/// A constant read from an fp32 tensor, as the shortest decimal that rounds to the same fp32
/// value (1.70200002193 -> 1.702): the digits beyond are the export's rounding, not the model's.
double shortestF32(double v) {
  float f = static_cast<float>(v);
  for (int digits = 1; digits <= 9; ++digits) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*g", digits, v);
    double d = std::strtod(buf, nullptr);
    if (static_cast<float>(d) == f)
      return d;
  }
  return v;
}

struct NormMatch {
  Value input, output;
  WeightOp weight;
  double eps = 0;
};

struct AttentionMatch {
  Value input, output;
  WeightOp wq, wk, wv, wo;
  WeightOp bq, bk, bv, bo; // projection biases (GPT-OSS), or null
  WeightOp qNorm, kNorm;   // per-head RMSNorm weights [head_dim] (Qwen3), or null
  double qkNormEps = 0;
  WeightOp sinks;            // per-head sink logits [heads] (GPT-OSS), or null
  int64_t slidingWindow = 0; // 0: full causal attention
  int64_t heads = 0, kvHeads = 0, headDim = 0;
  double ropeTheta = 0;
};

/// DeepSeek-V2's multi-head latent attention (q_lora_rank null).
struct MlaMatch {
  Value input, output;
  WeightOp wq, wkvA, kvNorm, wkvB, wo;
  double kvNormEps = 0, ropeTheta = 0, softmaxScale = 0;
  int64_t heads = 0, nope = 0, rope = 0, v = 0, rank = 0;
  bool interleaved = false;
};

struct RouterMatch {
  Value input;
  NodeOp topk;
  WeightOp weight;
  WeightOp bias;            // added to the logits (GPT-OSS), or null
  double scalingFactor = 0; // routed_scaling_factor (DeepSeek); 0 when absent
  int64_t numExperts = 0, topK = 0;
  std::string scoring;
  Value ids, gates;
};

struct ExpertMatch {
  int64_t expert = -1;
  WeightOp w1, w3, w2;
  WeightOp b1, b3, b2; // biases (GPT-OSS), or null
};

/// The form of a layer's experts: plain SwiGLU, or GPT-OSS's clamped SwiGLU on a fused,
/// interleaved gate/up projection.
struct ExpertForm {
  bool oai = false;
  double limit = 0, alpha = 0;
  std::optional<bool> fusedGateUp; // set by the com.microsoft.MoE reader; otherwise fused iff oai
  std::string plain; // non-gated activation (relu, gelu_tanh, silu, identity; com.microsoft.MoE)
};

/// An always-on SwiGLU FFN on the FFN norm output: a dense layer's FFN or the shared experts.
struct FfnMatch {
  WeightOp w1, w3, w2;
  Value output;
  int64_t inner = 0;
};

struct LayerMatch {
  NormMatch attnNorm, ffnNorm;
  AttentionMatch attention;
  std::optional<MlaMatch> mla; // the attention is MLA (then `attention` holds only its output)
  NodeOp attnResidualAdd;      // h = x + attention
  RouterMatch router;
  SmallVector<ExpertMatch> experts; // by expert id
  ExpertForm form;
  Value moeOutput;       // the combined expert output added to h
  NodeOp ffnResidualAdd; // x_next = h + moe
  int64_t expertHidden = 0;
  std::optional<FfnMatch> dense;  // a dense layer: no router, no experts
  std::optional<FfnMatch> shared; // shared experts beside the routed ones
};

/// A recognition failure: the node at fault and what was expected there.
struct MatchError {
  Operation *at;
  std::string message;
};

class Recogniser {
public:
  explicit Recogniser(func::FuncOp func) : func(func) {}

  std::optional<MatchError> error;

  /// RMSNorm whose input is `x`.
  std::optional<NormMatch> matchNorm(Value x) {
    for (NodeOp pow : consumers(x, "Pow")) {
      auto exponent = scalarConstant(pow.getInputs()[1]);
      if (!exponent || *exponent != 2.0 || pow.getInputs()[0] != x)
        continue;
      auto mean = single(consumers(pow.getOutputs()[0], "ReduceMean"));
      auto add = mean ? single(consumers(mean.getOutputs()[0], "Add")) : nullptr;
      auto eps = add ? scalarConstant(*otherOperand(add, mean.getOutputs()[0])) : std::nullopt;
      auto sqrt = add ? single(consumers(add.getOutputs()[0], "Sqrt")) : nullptr;
      if (!eps || !sqrt)
        return fail(pow, "RMSNorm: expected Pow -> ReduceMean -> Add(eps) -> Sqrt");
      NodeOp scaled;
      if (auto div = single(consumers(sqrt.getOutputs()[0], "Div"))) {
        auto one = scalarConstant(div.getInputs()[0]);
        if (one && *one == 1.0 && div.getInputs()[1] == sqrt.getOutputs()[0])
          scaled = single(consumers(div.getOutputs()[0], "Mul")); // x * (1 / sqrt)
        else if (div.getInputs()[0] == x)
          scaled = div; // x / sqrt
      }
      if (!scaled || !otherOperand(scaled, scaled.getInputs()[0]) ||
          (scaled.getOpType() == "Mul" && !otherOperand(scaled, x)))
        return fail(sqrt, "RMSNorm: expected x / sqrt(mean(x^2) + eps)");
      auto mul = single(consumers(scaled.getOutputs()[0], "Mul"));
      WeightOp weight = mul ? weightOf(*otherOperand(mul, scaled.getOutputs()[0])) : WeightOp();
      if (!weight)
        return fail(scaled, "RMSNorm: expected a multiplication by a weight [hidden]");
      return NormMatch{x, mul.getOutputs()[0], weight, *eps};
    }
    return std::nullopt;
  }

  /// Linear projections MatMul(x, W) with W a weight [in, out].
  SmallVector<std::pair<NodeOp, WeightOp>> projections(Value x) {
    SmallVector<std::pair<NodeOp, WeightOp>> out;
    for (NodeOp mm : consumers(x, "MatMul"))
      if (mm.getInputs()[0] == x)
        if (WeightOp w = weightOf(mm.getInputs()[1]))
          out.push_back({mm, w});
    return out;
  }

  /// The bias Add(y, b) after a linear output `y`, with b a 1-D weight of `width` values; the Add
  /// node (or null) and the weight.
  std::pair<NodeOp, WeightOp> biasAfter(Value y, int64_t width) {
    for (NodeOp add : consumers(y, "Add")) {
      auto other = otherOperand(add, y);
      WeightOp b = other ? weightOf(*other) : WeightOp();
      if (b && staticShape(b.getResult()) == SmallVector<int64_t>{width})
        return {add, b};
    }
    return {nullptr, nullptr};
  }

  /// Output width of a linear weight [in, out] (or stacked [experts, in, out]).
  static int64_t outWidth(WeightOp w) {
    auto shape = staticShape(w.getResult());
    return shape.size() >= 2 ? shape.back() : -1;
  }

  /// A reference to expert `e`'s slice of a stacked weight [experts, ...] (the same file, at the
  /// slice's offset), named "<name>[e]"; unit dims dropped ([experts, 1, n] -> [n]).
  /// With `transpose`, a 2-D slice stored [out, in] is referenced as its transpose [in, out]
  /// (marked `transposed`, as foldWeightTransposes does).
  static WeightOp sliceRef(WeightOp w, int64_t e, bool transpose = false) {
    auto type = llvm::cast<RankedTensorType>(w.getResult().getType());
    SmallVector<int64_t> shape;
    for (int64_t d : type.getShape().drop_front())
      if (d != 1)
        shape.push_back(d);
    if (shape.empty())
      shape.push_back(1);
    if (transpose && shape.size() == 2)
      std::swap(shape[0], shape[1]);
    const int64_t bytes = static_cast<int64_t>(w.getLength()) / type.getDimSize(0);
    OpBuilder b(w);
    b.setInsertionPointAfter(w);
    return b.create<WeightOp>(
        w.getLoc(), RankedTensorType::get(shape, type.getElementType()),
        b.getStringAttr(w.getWeightName().str() + "[" + std::to_string(e) + "]"), w.getFileAttr(),
        b.getI64IntegerAttr(static_cast<int64_t>(w.getOffset()) + e * bytes),
        b.getI64IntegerAttr(bytes), /*value=*/ElementsAttr(),
        transpose && shape.size() == 2 ? b.getUnitAttr() : UnitAttr());
  }

  /// `v` is all zeros: a zero constant, or ConstantOfShape with a zero (or no) value.
  static bool isZeros(Value v) {
    if (isZeroConstant(skipDataMovement(v)))
      return true; // folded by the fold stage
    NodeOp node = producer(skipDataMovement(v), {"ConstantOfShape"});
    if (!node)
      return false;
    auto attr = node.getOnnxAttrs().get("value");
    if (!attr)
      return true;
    auto dense = llvm::dyn_cast<DenseElementsAttr>(attr);
    if (!dense || !dense.isSplat())
      return false;
    return llvm::isa<FloatType>(dense.getElementType()) ? dense.getSplatValue<APFloat>().isZero()
                                                        : dense.getSplatValue<APInt>().isZero();
  }

  static std::string einsumEquation(NodeOp n) {
    std::string eq;
    if (auto a = n.getOnnxAttrs().getAs<StringAttr>("equation"))
      for (char c : a.getValue())
        if (c != ' ')
          eq += c;
    return eq;
  }

  /// The stacked weight [experts, ...] that Gather(W, ids) (axis 0) reads per token, or null.
  static WeightOp gatheredByIds(Value v, Value ids) {
    NodeOp g = producer(v, {"Gather"});
    if (!g || g.getInputs()[1] != ids)
      return nullptr;
    if (auto axis = g.getOnnxAttrs().getAs<IntegerAttr>("axis"); axis && axis.getInt() != 0)
      return nullptr;
    return weightOf(g.getInputs()[0]);
  }

  /// The reference implementation's MLPBlock (openai/gpt-oss gpt_oss/torch/model.py): the chosen
  /// experts' weights gathered per token from stacked [experts, out, in] tensors by the router's
  /// ids, Einsum("beck,bk->bec") + gathered bias, the clamped SwiGLU, Einsum("beck,bek->bec") +
  /// gathered bias, and Einsum("bec,be->bc") with the gates.
  std::optional<SmallVector<ExpertMatch>>
  matchEinsumExperts(const RouterMatch &router, int64_t &expertHidden, ExpertForm &form) {
    for (NodeOp up : allNodes("Einsum")) {
      if (einsumEquation(up) != "beck,bk->bec" || up.getInputs().size() != 2)
        continue;
      WeightOp w1 = gatheredByIds(up.getInputs()[0], router.ids);
      if (!w1 || skipDataMovement(up.getInputs()[1]) != router.input)
        continue;
      Value fused = up.getOutputs()[0];
      WeightOp b1;
      if (NodeOp add = single(consumers(fused, "Add"))) {
        b1 = gatheredByIds(*otherOperand(add, fused), router.ids);
        if (!b1)
          return fail(add, "experts: the gate_up bias is not gathered by the router's ids"),
                 std::nullopt;
        fused = add.getOutputs()[0];
      }
      NodeOp sigmoid = findDownstream(fused, "Sigmoid", false, 16);
      Value rows;
      OaiActivation act;
      auto oai = sigmoid ? matchOaiExpert(sigmoid, rows, &act) : std::nullopt;
      if (error)
        return std::nullopt;
      if (!oai || act.fused != fused)
        return fail(up, "experts: the gathered gate_up is not followed by the clamped SwiGLU"),
               std::nullopt;
      NodeOp down = single(consumers(act.out.getOutputs()[0], "Einsum"));
      WeightOp w2 = down && einsumEquation(down) == "beck,bek->bec"
                        ? gatheredByIds(down.getInputs()[0], router.ids)
                        : WeightOp();
      if (!w2)
        return fail(act.out, "experts: expected Einsum(\"beck,bek->bec\") with the down weights "
                             "gathered by the router's ids"),
               std::nullopt;
      Value y = down.getOutputs()[0];
      WeightOp b2;
      if (NodeOp add = single(consumers(y, "Add"))) {
        b2 = gatheredByIds(*otherOperand(add, y), router.ids);
        if (!b2)
          return fail(add, "experts: the down bias is not gathered by the router's ids"),
                 std::nullopt;
        y = add.getOutputs()[0];
      }
      NodeOp combine = single(consumers(y, "Einsum"));
      if (!combine || einsumEquation(combine) != "bec,be->bc" ||
          skipDataMovement(combine.getInputs()[1]) != router.gates)
        return fail(down, "experts: expected Einsum(\"bec,be->bc\") of the expert outputs and the "
                          "router's gates"),
               std::nullopt;
      auto s1 = staticShape(w1.getResult()), s2 = staticShape(w2.getResult());
      if (s1.size() != 3 || s2.size() != 3 || s1[0] != router.numExperts ||
          s2[0] != router.numExperts || s1[1] != 2 * s2[2])
        return fail(up, "experts: stacked weights [experts, 2*inner, hidden] and [experts, "
                        "hidden, inner] expected"),
               std::nullopt;
      for (WeightOp w : {w1, w2, b1, b2})
        if (w && w.getTransposed())
          return fail(up, "experts: transposed stacked weights are not supported"), std::nullopt;
      SmallVector<ExpertMatch> experts;
      for (int64_t e = 0; e < router.numExperts; ++e) {
        ExpertMatch m;
        m.expert = e;
        m.w1 = sliceRef(w1, e, /*transpose=*/true); // [2I, H] on disk, [H, 2I] as used
        m.w2 = sliceRef(w2, e, /*transpose=*/true);
        if (b1)
          m.b1 = sliceRef(b1, e);
        if (b2)
          m.b2 = sliceRef(b2, e);
        experts.push_back(m);
      }
      form = oai->second;
      expertHidden = s2[2];
      return experts;
    }
    return fail(router.topk, "experts: the router's ids gather no stacked expert weights into an "
                             "Einsum(\"beck,bk->bec\")"),
           std::nullopt;
  }

  /// Dense-masked experts (e.g. Hugging Face GPT-OSS's inference path): every expert on every
  /// token through batched MatMuls with stacked weights ([experts, hidden, 2*inner] fused with the
  /// clamped SwiGLU, or [experts, hidden, inner] gate and up with SwiGLU; [experts, inner, hidden]
  /// down), weighted by the dense score matrix ScatterElements(zeros, ids, gates) and summed over
  /// the experts. Equal to the routed sum, since the matrix is zero off the top-k.
  std::optional<SmallVector<ExpertMatch>>
  matchDenseMaskedExperts(const RouterMatch &router, int64_t &expertHidden, ExpertForm &form) {
    NodeOp scatter;
    for (NodeOp sc : consumers(router.ids, "ScatterElements"))
      if (sc.getInputs()[1] == router.ids && skipDataMovement(sc.getInputs()[2]) == router.gates &&
          isZeros(sc.getInputs()[0]))
        scatter = sc;
    if (!scatter)
      return fail(router.topk, "experts: the router's expert ids feed neither a OneHot mask (the "
                               "loop over experts) nor a dense score matrix ScatterElements(zeros, "
                               "ids, gates)"),
             std::nullopt;
    if (auto axis = scatter.getOnnxAttrs().getAs<IntegerAttr>("axis");
        !axis || (axis.getInt() != 1 && axis.getInt() != -1))
      return fail(scatter,
                  "experts: the score matrix must scatter the gates along the experts axis"),
             std::nullopt;
    for (NodeOp sigmoid : allNodes("Sigmoid")) {
      Value rows;
      auto oai = matchOaiExpert(sigmoid, rows);
      if (error)
        return std::nullopt;
      if (!oai) {
        // Plain SwiGLU over stacked weights: silu(rows W1[e]) * (rows W3[e]), then W2[e].
        NodeOp mm1 = producer(sigmoid.getInputs()[0], {"MatMul"});
        WeightOp w1 = mm1 ? weightOf(mm1.getInputs()[1]) : WeightOp();
        if (!w1 || staticShape(w1.getResult()).size() != 3)
          continue;
        rows = mm1.getInputs()[0];
        NodeOp silu = single(consumers(sigmoid.getOutputs()[0], "Mul"));
        if (!silu || otherOperand(silu, sigmoid.getOutputs()[0]) != mm1.getOutputs()[0])
          return fail(sigmoid, "experts: expected SiLU = x * Sigmoid(x)"), std::nullopt;
        NodeOp gated = single(consumers(silu.getOutputs()[0], "Mul"));
        NodeOp mm3 =
            gated ? producer(*otherOperand(gated, silu.getOutputs()[0]), {"MatMul"}) : NodeOp();
        NodeOp mm2 = gated ? single(consumers(gated.getOutputs()[0], "MatMul")) : NodeOp();
        if (!mm3 || mm3.getInputs()[0] != rows || !weightOf(mm3.getInputs()[1]) || !mm2 ||
            !weightOf(mm2.getInputs()[1]))
          return fail(sigmoid, "experts: expected stacked SwiGLU (silu(x W1) * (x W3)) W2"),
                 std::nullopt;
        ExpertMatch plain;
        plain.w1 = w1, plain.w3 = weightOf(mm3.getInputs()[1]),
        plain.w2 = weightOf(mm2.getInputs()[1]);
        oai = std::make_pair(plain, ExpertForm());
      }
      ExpertMatch stacked = oai->first;
      auto shape = staticShape(stacked.w1.getResult());
      if (shape.size() != 3 || !findUpstream(rows, "Tile", 8) ||
          skipDataMovement(findUpstream(rows, "Tile", 8).getInputs()[0]) != router.input &&
              !dependsOn(rows, router.input, 16))
        continue;
      if (shape[0] != router.numExperts || staticShape(stacked.w2.getResult()).size() != 3)
        return fail(sigmoid, "experts: the stacked weights do not hold " +
                                 std::to_string(router.numExperts) + " experts"),
               std::nullopt;
      // The combine: Mul(expert outputs, scores) -> ReduceSum over the experts axis.
      NodeOp down = single(consumers(stacked.w2.getResult(), "MatMul"));
      NodeOp sum = down ? findDownstream(down.getOutputs()[0], "ReduceSum", false, 64) : NodeOp();
      if (!sum || !dependsOn(sum.getInputs()[0], scatter.getOutputs()[0]))
        return fail(sigmoid, "experts: the stacked experts' outputs are not weighted by the dense "
                             "score matrix and summed"),
               std::nullopt;
      for (WeightOp w : {stacked.w1, stacked.w3, stacked.w2, stacked.b1, stacked.b2})
        if (w && w.getTransposed())
          return fail(sigmoid, "experts: transposed stacked weights are not supported"),
                 std::nullopt;
      if (stacked.w3 && staticShape(stacked.w3.getResult()) != shape)
        return fail(sigmoid, "experts: the stacked gate and up weights differ in shape"),
               std::nullopt;
      SmallVector<ExpertMatch> experts;
      for (int64_t e = 0; e < router.numExperts; ++e) {
        ExpertMatch m;
        m.expert = e;
        m.w1 = sliceRef(stacked.w1, e);
        if (stacked.w3)
          m.w3 = sliceRef(stacked.w3, e);
        m.w2 = sliceRef(stacked.w2, e);
        if (stacked.b1)
          m.b1 = sliceRef(stacked.b1, e);
        if (stacked.b2)
          m.b2 = sliceRef(stacked.b2, e);
        experts.push_back(m);
      }
      form = oai->second;
      expertHidden = form.oai ? shape[2] / 2 : shape[2];
      return experts;
    }
    return fail(scatter, "experts: no SwiGLU experts over stacked weights read the dense score "
                         "matrix"),
           std::nullopt;
  }

  /// A weight read through data movement and broadcasting only (Reshape, Expand, ...), or null.
  static WeightOp broadcastWeight(Value v) {
    while (auto node = producer(v, {"Cast", "Reshape", "Unsqueeze", "Squeeze", "Flatten",
                                    "Identity", "Expand", "Tile"}))
      v = node.getInputs()[0];
    return weightOf(v);
  }

  /// Attention whose input (the attention norm's output) is `x`.
  std::optional<AttentionMatch> matchAttention(Value x) {
    auto projs = projections(x);
    if (projs.size() != 3)
      return std::nullopt;
    // The score MatMul Q K^T feeds [Div(scale)] -> [Add(mask)] -> Softmax; the PV MatMul reads the
    // Softmax. Classify each projection by which of the two it reaches.
    NodeOp softmax;
    for (auto &proj : projs)
      if (!softmax)
        softmax = findDownstream(proj.first.getOutputs()[0], "Softmax");
    if (!softmax)
      return fail(projs[0].first, "attention: no Softmax downstream of the q/k/v projections");
    NodeOp pv = findDownstream(softmax.getOutputs()[0], "MatMul");
    if (!pv)
      return fail(softmax, "attention: the Softmax feeds no MatMul with V");
    NodeOp scores = findUpstream(softmax.getInputs()[0], "MatMul", 24);
    if (!scores)
      return fail(softmax, "attention: no Q K^T MatMul before the Softmax");

    AttentionMatch m;
    m.input = x;
    NodeOp qProj, kProj, vProj;
    for (auto &[mm, w] : projs) {
      Value out = mm.getOutputs()[0];
      if (dependsOn(pv.getInputs()[1], out))
        vProj = mm, m.wv = w;
      else if (dependsOn(scores.getInputs()[0], out))
        qProj = mm, m.wq = w;
      else if (dependsOn(scores.getInputs()[1], out))
        kProj = mm, m.wk = w;
    }
    if (!qProj || !kProj || !vProj)
      return fail(scores, "attention: cannot tell the q, k and v projections apart");
    // Projection biases: Add(x W, b) with b [out] right after the MatMul.
    auto [qAdd, bq] = biasAfter(qProj.getOutputs()[0], outWidth(m.wq));
    auto [kAdd, bk] = biasAfter(kProj.getOutputs()[0], outWidth(m.wk));
    auto [vAdd, bv] = biasAfter(vProj.getOutputs()[0], outWidth(m.wv));
    m.bq = bq, m.bk = bk, m.bv = bv;
    Value qOut = qAdd ? qAdd.getOutputs()[0] : qProj.getOutputs()[0];
    Value kOut = kAdd ? kAdd.getOutputs()[0] : kProj.getOutputs()[0];

    // Output projection: the first MatMul with a weight after PV.
    NodeOp oProj = findDownstream(pv.getOutputs()[0], "MatMul", /*needWeight=*/true);
    if (!oProj)
      return fail(pv, "attention: no output projection MatMul(., Wo) after softmax(QK^T)V");
    m.wo = weightOf(oProj.getInputs()[1]);
    m.output = oProj.getOutputs()[0];
    auto [oAdd, bo] = biasAfter(m.output, outWidth(m.wo));
    if (oAdd)
      m.bo = bo, m.output = oAdd.getOutputs()[0];

    // head_dim from the softmax scale: Div(scores, sqrt(head_dim)) or Mul(scores, 1/sqrt(d)).
    double scale = 0;
    for (NodeOp node : between(scores, softmax)) {
      auto c = node.getInputs().size() == 2 ? scalarConstant(node.getInputs()[1]) : std::nullopt;
      if (c && node.getOpType() == "Div")
        scale = *c;
      else if (c && node.getOpType() == "Mul" && *c > 0)
        scale = 1.0 / *c;
    }
    if (scale <= 0)
      return fail(scores, "attention: no constant softmax scale 1/sqrt(head_dim)");
    m.headDim = static_cast<int64_t>(std::llround(scale * scale));
    auto qShape = staticShape(m.wq.getResult()), kShape = staticShape(m.wk.getResult());
    if (m.headDim <= 0 || qShape.size() != 2 || kShape.size() != 2 || qShape[1] % m.headDim != 0 ||
        kShape[1] % m.headDim != 0)
      return fail(scores, "attention: scale " + std::to_string(scale) +
                              " does not give a head_dim dividing the projection widths");
    m.heads = qShape[1] / m.headDim;
    m.kvHeads = kShape[1] / m.headDim;
    if (!checkHeadsInReshape(qOut, m.heads, m.headDim) ||
        !checkHeadsInReshape(kOut, m.kvHeads, m.headDim))
      return fail(qProj, "attention: the head split (Reshape to [b, s, heads, head_dim]) "
                         "disagrees with the softmax scale");

    // q/k norm (Qwen3): an RMSNorm over head_dim on the per-head view of q and of k.
    std::optional<NormMatch> qNorm, kNorm;
    if (NodeOp r = single(consumers(qOut, "Reshape")))
      qNorm = matchNorm(r.getOutputs()[0]);
    if (NodeOp r = single(consumers(kOut, "Reshape")))
      kNorm = matchNorm(r.getOutputs()[0]);
    if (error)
      return std::nullopt;
    // Only a norm on the path into the scores counts.
    if (qNorm && !dependsOn(scores.getInputs()[0], qNorm->output))
      qNorm.reset();
    if (kNorm && !dependsOn(scores.getInputs()[1], kNorm->output))
      kNorm.reset();
    if (static_cast<bool>(qNorm) != static_cast<bool>(kNorm))
      return fail(qNorm ? qProj : kProj, "attention: an RMSNorm on only one of q and k");
    if (qNorm) {
      for (NormMatch *n : {&*qNorm, &*kNorm})
        if (staticShape(n->weight.getResult()) != SmallVector<int64_t>{m.headDim})
          return fail(qProj, "attention: the q/k RMSNorm weight is not [head_dim = " +
                                 std::to_string(m.headDim) + "]");
      if (qNorm->eps != kNorm->eps)
        return fail(kProj, "attention: q and k RMSNorms have different epsilons");
      m.qNorm = qNorm->weight, m.kNorm = kNorm->weight, m.qkNormEps = shortestF32(qNorm->eps);
    }

    // Causal mask: an additive mask on the scores before the Softmax that hides key j > query i,
    // optionally also key j <= query i - w (sliding window). Recognised by its values (the fold
    // stage makes a mask a constant at the compiled shape, whatever ops built it), else by the
    // structure of the Trilu / position-comparison forms.
    bool causal = false;
    for (NodeOp node : between(scores, softmax))
      if (node.getOpType() == "Add")
        for (Value operand : node.getInputs()) {
          std::string whyNot;
          if (auto mask = masks.of(operand, &whyNot)) {
            causal = true;
            m.slidingWindow = mask->window;
          } else if (!whyNot.empty()) {
            return fail(node, "attention: the mask added before the Softmax is neither causal nor "
                              "a sliding window: " +
                                  whyNot);
          } else if (isCausalMask(operand)) {
            causal = true;
            m.slidingWindow = slidingWindowOf(operand);
          }
        }
    if (!causal)
      return fail(softmax, "attention: no causal mask (Trilu(upper=1), or -inf where key "
                           "position > query position) added before the Softmax; only causal "
                           "decoders are supported");

    // Sinks (GPT-OSS): Concat(scores, sinks broadcast) -> [Sub(max)] -> Softmax -> Slice(drop the
    // last column) -> PV.
    for (NodeOp node : between(scores, softmax)) {
      if (node.getOpType() != "Concat")
        continue;
      WeightOp sink;
      for (Value operand : node.getInputs())
        if (WeightOp w = broadcastWeight(operand))
          sink = w;
      // Constant folding may store the sinks already reshaped, e.g. [1, heads, 1, 1]: the same
      // bytes, read as [heads].
      auto shape = sink ? staticShape(sink.getResult()) : SmallVector<int64_t>{};
      bool perHead = !shape.empty() && llvm::count(shape, m.heads) == 1 &&
                     llvm::all_of(shape, [&](int64_t d) { return d == 1 || d == m.heads; });
      if (!perHead || (m.heads == 1 && shape.size() != 1))
        return fail(node, "attention: the scores are concatenated with something that is not "
                          "one sink logit per head [" +
                              std::to_string(m.heads) + "]");
      if (shape.size() != 1)
        sink = reshapedRef(sink, {m.heads});
      if (!findUpstream(pv.getInputs()[0], "Slice", 8))
        return fail(node, "attention: sink logits join the softmax but its output does not drop "
                          "their column (no Slice before the PV MatMul)");
      m.sinks = sink;
    }

    // RoPE: the rotated q reaches a Cos whose angles come from an inverse-frequency constant.
    NodeOp cos = findUpstream(scores.getInputs()[0], "Cos", 512);
    if (!cos)
      return fail(scores, "attention: no rotary embedding (Cos/Sin) on q; only RoPE attention "
                          "is supported");
    auto invFreq = findInverseFrequencies(cos.getInputs()[0], m.headDim / 2);
    if (!invFreq || invFreq->size() < 2 || (*invFreq)[1] <= 0 || (*invFreq)[1] >= 1)
      return fail(cos, "RoPE: no inverse-frequency constant with head_dim/2 = " +
                           std::to_string(m.headDim / 2) + " values");
    // inv_freq[i] = theta^(-2i/d) (RoFormer, eq. 15), so log theta = -d/(2i) * log inv_freq[i].
    // Average over i, then keep 6 significant digits: the constant is fp32 (relative precision
    // 6e-8), so further digits are rounding noise of the export, not part of the model.
    m.ropeTheta = thetaOf(*invFreq, m.headDim);
    if (!isPlainRope(*invFreq, m.headDim, m.ropeTheta))
      return fail(cos, "RoPE: the inverse frequencies are not theta^(-2i/head_dim) for one theta "
                       "(scaled RoPE such as YaRN or linear/NTK scaling is not supported)");
    return m;
  }

  /// Every inverse frequency equals theta^(-2i/dim) to fp32 precision (so the frequencies are
  /// plain RoPE's and no scaling such as YaRN changed some of them).
  static bool isPlainRope(ArrayRef<double> invFreq, int64_t dim, double theta) {
    for (size_t i = 0; i < invFreq.size(); ++i) {
      double want = std::pow(theta, -2.0 * static_cast<double>(i) / static_cast<double>(dim));
      if (std::abs(invFreq[i] - want) > 1e-5 * want)
        return false;
    }
    return true;
  }

  /// theta from inverse frequencies inv_freq[i] = theta^(-2i/d) (RoFormer, eq. 15), averaged over
  /// i and kept to 6 significant digits (the constant is fp32).
  static double thetaOf(ArrayRef<double> invFreq, int64_t dim) {
    double logTheta = 0;
    for (size_t i = 1; i < invFreq.size(); ++i)
      logTheta += -static_cast<double>(dim) / (2.0 * i) * std::log(invFreq[i]);
    double theta = std::exp(logTheta / static_cast<double>(invFreq.size() - 1));
    double magnitude = std::pow(10.0, std::floor(std::log10(theta)) - 5);
    return std::round(theta / magnitude) * magnitude;
  }

  /// The sizes of a Split node (its constant `split` input or attribute).
  static std::optional<SmallVector<double>> splitSizes(NodeOp split) {
    if (split.getInputs().size() >= 2)
      return constantValues(split.getInputs()[1]);
    if (auto attr = split.getOnnxAttrs().getAs<ArrayAttr>("split")) {
      SmallVector<double> out;
      for (Attribute a : attr)
        out.push_back(static_cast<double>(llvm::cast<IntegerAttr>(a).getInt()));
      return out;
    }
    return std::nullopt;
  }

  /// DeepSeek-V2 MLA whose input (the attention norm's output) is `x`: two projections, q_proj and
  /// kv_a_proj_with_mqa, the latter split into [c | k_pe] with c RMS-normalised into kv_b_proj.
  std::optional<MlaMatch> matchMla(Value x) {
    auto projs = projections(x);
    if (projs.size() != 2)
      return std::nullopt;
    MlaMatch m;
    m.input = x;
    NodeOp qProj, kvaProj, kvbProj, kvaSplit;
    std::optional<NormMatch> kvNorm;
    for (auto &[mm, w] : projs) {
      NodeOp split = single(consumers(mm.getOutputs()[0], "Split"));
      if (!split || split.getOutputs().size() != 2)
        continue;
      auto norm = matchNorm(split.getOutputs()[0]);
      if (error)
        return std::nullopt;
      if (!norm)
        continue;
      auto b = projections(norm->output);
      if (b.size() != 1)
        return fail(split, "MLA: the normalised latent KV feeds no single kv_b projection");
      kvaProj = mm, m.wkvA = w, kvaSplit = split, kvNorm = norm, kvbProj = b[0].first,
      m.wkvB = b[0].second;
    }
    if (!kvaProj)
      return std::nullopt;
    for (auto &[mm, w] : projs)
      if (mm != kvaProj)
        qProj = mm, m.wq = w;
    NodeOp softmax = findDownstream(qProj.getOutputs()[0], "Softmax");
    NodeOp pv = softmax ? findDownstream(softmax.getOutputs()[0], "MatMul") : NodeOp();
    NodeOp scores = softmax ? findUpstream(softmax.getInputs()[0], "MatMul", 24) : NodeOp();
    if (!softmax || !pv || !scores)
      return fail(qProj, "MLA: no softmax(Q K^T) V downstream of q_proj");
    if (!dependsOn(scores.getInputs()[0], qProj.getOutputs()[0]) ||
        !dependsOn(scores.getInputs()[1], kvbProj.getOutputs()[0]) ||
        !dependsOn(scores.getInputs()[1], kvaSplit.getOutputs()[1]) ||
        !dependsOn(pv.getInputs()[1], kvbProj.getOutputs()[0]))
      return fail(scores,
                  "MLA: the scores are not q . [k_nope from kv_b | k_pe from kv_a] with the "
                  "values from kv_b");
    NodeOp oProj = findDownstream(pv.getOutputs()[0], "MatMul", /*needWeight=*/true);
    if (!oProj)
      return fail(pv, "MLA: no output projection MatMul(., Wo)");
    m.wo = weightOf(oProj.getInputs()[1]);
    m.output = oProj.getOutputs()[0];
    m.kvNorm = kvNorm->weight;
    m.kvNormEps = shortestF32(kvNorm->eps);

    // Sizes: kv_lora_rank from the norm, rope from kv_a's width, q_head_dim from the softmax scale.
    double scale = 0;
    for (NodeOp node : between(scores, softmax)) {
      auto c = node.getInputs().size() == 2 ? scalarConstant(node.getInputs()[1]) : std::nullopt;
      if (c && node.getOpType() == "Div" && *c > 0)
        scale = 1.0 / *c;
      else if (c && node.getOpType() == "Mul" && *c > 0)
        scale = *c;
    }
    if (scale <= 0)
      return fail(scores, "MLA: no constant softmax scale");
    m.softmaxScale = shortestF32(scale);
    const int64_t qHeadDim = static_cast<int64_t>(std::llround(1.0 / (scale * scale)));
    auto normShape = staticShape(m.kvNorm.getResult());
    m.rank = normShape.size() == 1 ? normShape[0] : 0;
    m.rope = outWidth(m.wkvA) - m.rank;
    m.nope = qHeadDim - m.rope;
    if (m.rank <= 0 || m.rope <= 0 || m.nope <= 0 || outWidth(m.wq) % qHeadDim != 0)
      return fail(scores, "MLA: softmax scale " + std::to_string(scale) +
                              " does not fit the q/kv_a projection widths");
    m.heads = outWidth(m.wq) / qHeadDim;
    if (outWidth(m.wkvB) % m.heads != 0)
      return fail(kvbProj, "MLA: kv_b's width is not a multiple of the heads");
    m.v = outWidth(m.wkvB) / m.heads - m.nope;
    auto woShape = staticShape(m.wo.getResult());
    if (m.v <= 0 || woShape.size() != 2 || woShape[0] != m.heads * m.v)
      return fail(oProj, "MLA: o_proj's rows are not heads * v_head_dim");
    // The splits agree: q -> [nope, rope], kv_a -> [rank, rope], kv_b -> [nope, v].
    auto kvaSizes = splitSizes(kvaSplit);
    if (!kvaSizes || *kvaSizes != SmallVector<double>{double(m.rank), double(m.rope)})
      return fail(kvaSplit, "MLA: kv_a is not split into [kv_lora_rank, qk_rope_head_dim]");
    for (auto [proj, first, second] :
         {std::tuple<NodeOp, int64_t, int64_t>{qProj, m.nope, m.rope}, {kvbProj, m.nope, m.v}}) {
      NodeOp split = findDownstream(proj.getOutputs()[0], "Split", false, 16);
      auto sizes = split ? splitSizes(split) : std::nullopt;
      if (!sizes || *sizes != SmallVector<double>{double(first), double(second)})
        return fail(proj, "MLA: the per-head split is not [" + std::to_string(first) + ", " +
                              std::to_string(second) + "]");
    }
    bool causal = false;
    for (NodeOp node : between(scores, softmax))
      if (node.getOpType() == "Add")
        for (Value operand : node.getInputs()) {
          std::string whyNot;
          auto mask = masks.of(operand, &whyNot);
          if (!mask && !whyNot.empty())
            return fail(node, "MLA: the mask added before the Softmax is not causal: " + whyNot);
          if (mask || isCausalMask(operand)) {
            causal = true;
            if ((mask ? mask->window : slidingWindowOf(operand)) > 0)
              return fail(node, "MLA: sliding windows are not supported with MLA");
          }
        }
    if (!causal)
      return fail(softmax, "MLA: no causal mask added before the Softmax");
    NodeOp cos = findUpstream(scores.getInputs()[0], "Cos", 512);
    auto invFreq = cos ? findInverseFrequencies(cos.getInputs()[0], m.rope / 2) : std::nullopt;
    if (!invFreq || invFreq->size() < 2 || (*invFreq)[1] <= 0 || (*invFreq)[1] >= 1)
      return fail(scores, "MLA: no rotary embedding with qk_rope_head_dim/2 = " +
                              std::to_string(m.rope / 2) + " inverse frequencies");
    m.ropeTheta = thetaOf(*invFreq, m.rope);
    if (!isPlainRope(*invFreq, m.rope, m.ropeTheta))
      return fail(cos, "MLA: the inverse frequencies are not theta^(-2i/qk_rope_head_dim) for one "
                       "theta (scaled RoPE such as YaRN is not supported)");
    // DeepSeek-V2's de-interleave of the rope dims: view(.., d/2, 2) -> Transpose(last two).
    int transposes = 0;
    for (Value in : {scores.getInputs()[0], scores.getInputs()[1]}) {
      llvm::DenseSet<Value> seen;
      std::deque<Value> work{in};
      for (int budget = 96; !work.empty() && budget-- > 0;) {
        Value v = work.front();
        work.pop_front();
        NodeOp node = producer(v);
        if (!node || !seen.insert(v).second ||
            (node.getOpType() == "MatMul" && weightOf(node.getInputs()[1])))
          continue;
        if (node.getOpType() == "Transpose")
          if (auto perm = node.getOnnxAttrs().getAs<ArrayAttr>("perm"); perm && perm.size() == 5) {
            auto p = llvm::to_vector(llvm::map_range(
                perm, [](Attribute a) { return llvm::cast<IntegerAttr>(a).getInt(); }));
            if (p == SmallVector<int64_t>{0, 1, 2, 4, 3}) {
              ++transposes;
              break;
            }
            return fail(node, "MLA: an unknown permutation of the rope dims");
          }
        for (Value operand : node.getInputs())
          work.push_back(operand);
      }
    }
    if (transposes == 1)
      return fail(scores, "MLA: the rope dims of only one of q and k are de-interleaved");
    m.interleaved = transposes == 2;
    return m;
  }

  /// A reference to the same bytes as `w` with another shape of the same element count.
  static WeightOp reshapedRef(WeightOp w, ArrayRef<int64_t> shape) {
    auto type = llvm::cast<RankedTensorType>(w.getResult().getType());
    OpBuilder b(w);
    b.setInsertionPointAfter(w);
    return b.create<WeightOp>(w.getLoc(), RankedTensorType::get(shape, type.getElementType()),
                              w.getWeightNameAttr(), w.getFileAttr(), w.getOffsetAttr(),
                              w.getLengthAttr(), /*value=*/ElementsAttr(), w.getTransposedAttr());
  }

  /// A reference to `w` as its 2-D transpose (marked `transposed`, as foldWeightTransposes does),
  /// for weights that a Gemm reads with transB = 1.
  static WeightOp transposedRef(WeightOp w) {
    auto type = llvm::cast<RankedTensorType>(w.getResult().getType());
    OpBuilder b(w);
    b.setInsertionPointAfter(w);
    return b.create<WeightOp>(
        w.getLoc(),
        RankedTensorType::get({type.getDimSize(1), type.getDimSize(0)}, type.getElementType()),
        w.getWeightNameAttr(), w.getFileAttr(), w.getOffsetAttr(), w.getLengthAttr(),
        /*value=*/ElementsAttr(), b.getUnitAttr());
  }

  /// Router fed (through reshapes) by `x`, the FFN norm output.
  std::optional<RouterMatch> matchRouter(Value x) {
    for (NodeOp topk : allNodes("TopK")) {
      // Logits: MatMul(x', Wg) [+ b] or Gemm(x', Wg^T, b) upstream of TopK, x' a reshape of x.
      NodeOp logits = findUpstream(topk.getInputs()[0], "MatMul", 8);
      if (!logits || skipDataMovement(logits.getInputs()[0]) != x)
        logits = findUpstream(topk.getInputs()[0], "Gemm", 8);
      if (!logits || skipDataMovement(logits.getInputs()[0]) != x)
        continue;
      RouterMatch r;
      r.input = x;
      r.topk = topk;
      r.weight = weightOf(logits.getInputs()[1]);
      if (r.weight && logits.getOpType() == "Gemm") {
        auto attrs = logits.getOnnxAttrs();
        auto intAttr = [&](StringRef name, int64_t dflt) {
          auto a = attrs.getAs<IntegerAttr>(name);
          return a ? a.getInt() : dflt;
        };
        auto floatAttr = [&](StringRef name) {
          auto a = attrs.getAs<FloatAttr>(name);
          return a ? a.getValueAsDouble() : 1.0;
        };
        if (intAttr("transA", 0) != 0 || floatAttr("alpha") != 1.0 || floatAttr("beta") != 1.0)
          return fail(logits, "router: Gemm with transA or alpha/beta other than 1");
        if (intAttr("transB", 0) == 1) {
          if (r.weight.getTransposed())
            return fail(logits, "router: Gemm transposes a weight that is already transposed");
          r.weight = transposedRef(r.weight);
        }
        if (logits.getInputs().size() > 2 &&
            !isa_and_nonnull<onnxir::NoneOp>(logits.getInputs()[2].getDefiningOp())) {
          r.bias = weightOf(logits.getInputs()[2]);
          if (!r.bias)
            return fail(logits, "router: the Gemm's bias is not a weight");
        }
      }
      auto k = scalarConstant(topk.getInputs()[1]);
      auto wShape = r.weight ? staticShape(r.weight.getResult()) : SmallVector<int64_t>{};
      if (!r.weight || !k || wShape.size() != 2)
        return fail(topk, "router: expected TopK(K constant) of MatMul(x, Wg[hidden, experts])");
      r.numExperts = wShape[1];
      r.topK = static_cast<int64_t>(*k);
      if (logits.getOpType() == "MatMul")
        r.bias = biasAfter(logits.getOutputs()[0], r.numExperts).second;
      if (r.bias && staticShape(r.bias.getResult()) != SmallVector<int64_t>{r.numExperts})
        return fail(logits, "router: the logits' bias is not [experts = " +
                                std::to_string(r.numExperts) + "]");
      if (auto largest = topk.getOnnxAttrs().getAs<IntegerAttr>("largest"))
        if (largest.getInt() != 1)
          return fail(topk, "router: TopK must select the largest scores");
      bool softmaxBefore = static_cast<bool>(findUpstream(topk.getInputs()[0], "Softmax", 4));
      Value values = topk.getOutputs()[0];
      NodeOp div;
      for (NodeOp d : consumers(values, "Div")) {
        if (d.getInputs()[0] != values)
          continue;
        // Div(values, ReduceSum(values)) or Div(values, ReduceSum(values) + tiny eps).
        Value den = d.getInputs()[1];
        if (NodeOp add = producer(den, {"Add"}))
          for (Value in : add.getInputs())
            if (producer(in, {"ReduceSum"}) && otherOperand(add, in) &&
                scalarConstant(*otherOperand(add, in)) &&
                std::abs(*scalarConstant(*otherOperand(add, in))) < 1e-6)
              den = in;
        if (producer(den, {"ReduceSum"}))
          div = d;
      }
      NodeOp softmaxAfter = single(consumers(values, "Softmax"));
      if (softmaxBefore && div) {
        r.scoring = "softmax_topk_renorm";
        r.gates = div.getOutputs()[0];
      } else if (softmaxBefore) {
        r.scoring = "softmax_topk";
        r.gates = values;
      } else if (softmaxAfter) {
        r.scoring = "topk_softmax";
        r.gates = softmaxAfter.getOutputs()[0];
      } else {
        return fail(topk, "router: no Softmax before or after TopK");
      }
      // routed_scaling_factor: the gates multiplied by a positive constant.
      for (NodeOp mul : consumers(r.gates, "Mul"))
        if (auto c = otherOperand(mul, r.gates) ? scalarConstant(*otherOperand(mul, r.gates))
                                                : std::nullopt) {
          if (*c <= 0)
            return fail(mul, "router: the gates are multiplied by a non-positive constant");
          r.scalingFactor = shortestF32(*c);
          r.gates = mul.getOutputs()[0];
          break;
        }
      r.ids = topk.getOutputs()[1];
      return r;
    }
    return std::nullopt;
  }

  /// An always-on SwiGLU FFN whose gate and up MatMuls read `x` (or a reshape of it):
  /// MatMul(x, W2 of silu(x W1) * (x W3)).
  std::optional<FfnMatch> matchSwiGLU(Value x) {
    SmallVector<Value> inputs{x};
    for (StringRef op : {"Reshape", "Flatten"})
      for (NodeOp r : consumers(x, op))
        inputs.push_back(r.getOutputs()[0]);
    for (Value in : inputs)
      for (auto [mm1, w1] : projections(in)) {
        NodeOp sigmoid = single(consumers(mm1.getOutputs()[0], "Sigmoid"));
        if (!sigmoid)
          continue;
        NodeOp silu = single(consumers(sigmoid.getOutputs()[0], "Mul"));
        if (!silu || otherOperand(silu, sigmoid.getOutputs()[0]) != mm1.getOutputs()[0])
          return fail(sigmoid, "FFN: expected SiLU = x * Sigmoid(x)");
        NodeOp gated = single(consumers(silu.getOutputs()[0], "Mul"));
        NodeOp mm3 =
            gated ? producer(*otherOperand(gated, silu.getOutputs()[0]), {"MatMul"}) : NodeOp();
        if (!mm3 || mm3.getInputs()[0] != in || !weightOf(mm3.getInputs()[1]))
          return fail(silu, "FFN: expected SwiGLU silu(x W1) * (x W3)");
        NodeOp mm2 = single(consumers(gated.getOutputs()[0], "MatMul"));
        if (!mm2 || !weightOf(mm2.getInputs()[1]))
          return fail(gated, "FFN: expected the down projection MatMul(., W2)");
        FfnMatch f{w1, weightOf(mm3.getInputs()[1]), weightOf(mm2.getInputs()[1]),
                   mm2.getOutputs()[0], outWidth(w1)};
        if (outWidth(f.w3) != f.inner || staticShape(f.w2.getResult()).front() != f.inner)
          return fail(mm2, "FFN: gate, up and down projections disagree on the inner width");
        return f;
      }
    return std::nullopt;
  }

  /// GPT-OSS's expert: gate_up = rows W13 [+ b13]; g = Clip(gate_up[..., ::2], max = limit),
  /// u = Clip(gate_up[..., 1::2], -limit, limit); ((u + 1) * g * Sigmoid(alpha g)) W2 [+ b2].
  /// `sigmoid` is the expert's Sigmoid; returns the expert's weights and form, or nullopt if this
  /// Sigmoid is not of that form.
  /// With `activation` set, only the activation is matched: it receives the fused gate_up value
  /// and the node computing (u + 1) * glu, and the projections are left to the caller.
  struct OaiActivation {
    Value fused;
    NodeOp out;
  };
  std::optional<std::pair<ExpertMatch, ExpertForm>>
  matchOaiExpert(NodeOp sigmoid, Value &rows, OaiActivation *activation = nullptr) {
    NodeOp scaled = producer(sigmoid.getInputs()[0], {"Mul"});
    if (!scaled)
      return std::nullopt;
    NodeOp gateClip;
    double alpha = 0;
    for (Value in : scaled.getInputs())
      if (NodeOp c = producer(in, {"Clip"}))
        if (auto a =
                otherOperand(scaled, in) ? scalarConstant(*otherOperand(scaled, in)) : std::nullopt)
          gateClip = c, alpha = *a;
    if (!gateClip)
      return std::nullopt;
    auto clipBound = [](NodeOp clip, unsigned i) -> std::optional<double> {
      if (clip.getInputs().size() <= i)
        return std::nullopt;
      return scalarConstant(clip.getInputs()[i]);
    };
    auto limit = clipBound(gateClip, 2);
    if (!limit || clipBound(gateClip, 1))
      return fail(gateClip, "experts: the clamped SwiGLU's gate must be Clip(max = limit) only"),
             std::nullopt;
    NodeOp gateSlice = producer(gateClip.getInputs()[0], {"Slice"});
    if (!gateSlice || !isStrideTwoSlice(gateSlice, 0))
      return fail(gateClip, "experts: the gate is not the even columns of a fused gate_up "
                            "projection (Slice start 0, step 2)"),
             std::nullopt;
    Value fused = gateSlice.getInputs()[0];
    NodeOp glu = single(consumers(sigmoid.getOutputs()[0], "Mul"));
    if (!glu || otherOperand(glu, sigmoid.getOutputs()[0]) != gateClip.getOutputs()[0])
      return fail(sigmoid, "experts: expected glu = gate * Sigmoid(alpha * gate)"), std::nullopt;
    NodeOp out = single(consumers(glu.getOutputs()[0], "Mul"));
    NodeOp plusOne = out ? producer(*otherOperand(out, glu.getOutputs()[0]), {"Add"}) : NodeOp();
    NodeOp upClip;
    if (plusOne)
      for (Value in : plusOne.getInputs())
        if (NodeOp c = producer(in, {"Clip"}))
          if (otherOperand(plusOne, in) && scalarConstant(*otherOperand(plusOne, in)) == 1.0)
            upClip = c;
    if (!upClip || clipBound(upClip, 1) != -*limit || clipBound(upClip, 2) != *limit)
      return fail(glu, "experts: expected (Clip(up, -limit, limit) + 1) * glu"), std::nullopt;
    NodeOp upSlice = producer(upClip.getInputs()[0], {"Slice"});
    if (!upSlice || upSlice.getInputs()[0] != fused || !isStrideTwoSlice(upSlice, 1))
      return fail(upClip, "experts: the up input is not the odd columns of the same gate_up "
                          "projection (Slice start 1, step 2)"),
             std::nullopt;
    if (activation) {
      *activation = {fused, out};
      return std::make_pair(ExpertMatch(),
                            ExpertForm{true, shortestF32(*limit), shortestF32(alpha)});
    }
    ExpertMatch e;
    NodeOp mm13 = producer(fused, {"MatMul"});
    if (!mm13) {
      NodeOp add = producer(fused, {"Add"});
      for (Value in : add ? add.getInputs() : ValueRange{})
        if (NodeOp mm = producer(in, {"MatMul"}))
          if (auto b = otherOperand(add, in))
            mm13 = mm, e.b1 = weightOf(*b);
      if (mm13 && !e.b1)
        return fail(add, "experts: the gate_up bias is not a weight"), std::nullopt;
    }
    if (!mm13 || !weightOf(mm13.getInputs()[1]))
      return fail(gateSlice, "experts: the fused gate_up is not MatMul(rows, W)"), std::nullopt;
    e.w1 = weightOf(mm13.getInputs()[1]);
    NodeOp down = single(consumers(out.getOutputs()[0], "MatMul"));
    if (!down || !weightOf(down.getInputs()[1]))
      return fail(out, "experts: expected the down projection MatMul(., W2)"), std::nullopt;
    e.w2 = weightOf(down.getInputs()[1]);
    e.b2 = biasAfter(down.getOutputs()[0], outWidth(e.w2)).second;
    if (!e.b2) // stacked experts: a bias [experts, 1, hidden]
      for (NodeOp add : consumers(down.getOutputs()[0], "Add"))
        if (auto other = otherOperand(add, down.getOutputs()[0]))
          if (WeightOp b = weightOf(*other); b && outWidth(b) == outWidth(e.w2))
            e.b2 = b;
    rows = mm13.getInputs()[0];
    return std::make_pair(e, ExpertForm{true, shortestF32(*limit), shortestF32(alpha)});
  }

  /// Rank of `v`: from its type, else through Add/Mul (broadcast: the larger rank) and Einsum
  /// (its output subscripts); -1 if unknown.
  static int64_t rankOf(Value v, int depth = 0) {
    if (auto t = llvm::dyn_cast<ShapedType>(v.getType()); t && t.hasRank())
      return t.getRank();
    NodeOp node = producer(v);
    if (!node || depth > 4)
      return -1;
    if (node.getOpType() == "Einsum") {
      std::string eq = einsumEquation(node);
      auto arrow = eq.find("->");
      return arrow == std::string::npos ? -1 : static_cast<int64_t>(eq.size() - arrow - 2);
    }
    if (node.getOpType() == "Add" || node.getOpType() == "Mul") {
      int64_t r = -1;
      for (Value in : node.getInputs())
        r = std::max(r, rankOf(in, depth + 1));
      return r;
    }
    return -1;
  }

  /// Slice(data, starts = [start], ends, axes = [-1 or last], steps = [2]).
  bool isStrideTwoSlice(NodeOp slice, int64_t start) {
    auto ins = slice.getInputs();
    if (ins.size() < 5)
      return false;
    auto starts = constantValues(ins[1]), axes = constantValues(ins[3]),
         steps = constantValues(ins[4]);
    const int64_t rank = rankOf(ins[0]);
    return starts && axes && steps && starts->size() == 1 && axes->size() == 1 &&
           steps->size() == 1 && (*starts)[0] == start && (*steps)[0] == 2 &&
           ((*axes)[0] == -1 || (*axes)[0] == rank - 1);
  }

  /// SwiGLU experts selected by `router`'s one-hot mask.
  std::optional<SmallVector<ExpertMatch>> matchExperts(const RouterMatch &router,
                                                       int64_t &expertHidden, ExpertForm &form) {
    NodeOp oneHot = single(consumers(router.ids, "OneHot"));
    if (!oneHot && !consumers(router.ids, "ScatterElements").empty())
      return matchDenseMaskedExperts(router, expertHidden, form);
    if (!oneHot && !consumers(router.ids, "Gather").empty())
      return matchEinsumExperts(router, expertHidden, form);
    if (!oneHot)
      return fail(router.topk, "experts: the router's expert ids feed no OneHot mask (only the "
                               "unrolled Hugging Face loop over experts is supported here)"),
             std::nullopt;
    SmallVector<ExpertMatch> experts(router.numExperts);
    bool sawPlain = false, sawOai = false;
    for (NodeOp sigmoid : allNodes("Sigmoid")) {
      NodeOp mm1 = producer(sigmoid.getInputs()[0], {"MatMul"});
      if (!mm1) {
        // GPT-OSS's clamped SwiGLU on a fused gate_up projection.
        Value rows;
        auto oai = matchOaiExpert(sigmoid, rows);
        if (error)
          return std::nullopt;
        if (!oai)
          continue;
        std::optional<int64_t> expert = expertIndexOf(rows, oneHot);
        if (!expert)
          continue;
        if (*expert < 0 || *expert >= router.numExperts || experts[*expert].w1)
          return fail(sigmoid, "experts: expert index " + std::to_string(*expert) +
                                   " is out of range or appears twice"),
                 std::nullopt;
        if (sawOai && (oai->second.limit != form.limit || oai->second.alpha != form.alpha))
          return fail(sigmoid, "experts: the experts of one layer use different swiglu limits "
                               "or alphas"),
                 std::nullopt;
        sawOai = true;
        form = oai->second;
        experts[*expert] = oai->first;
        experts[*expert].expert = *expert;
        expertHidden = outWidth(oai->first.w1) / 2;
        continue;
      }
      if (!weightOf(mm1.getInputs()[1]))
        continue;
      Value rows = mm1.getInputs()[0];
      // Which expert: rows come from Gather(x, tokens) with tokens from Gather(mask, e).
      std::optional<int64_t> expert = expertIndexOf(rows, oneHot);
      if (!expert)
        continue;
      NodeOp silu = single(consumers(sigmoid.getOutputs()[0], "Mul"));
      if (!silu || !otherOperand(silu, sigmoid.getOutputs()[0]) ||
          *otherOperand(silu, sigmoid.getOutputs()[0]) != mm1.getOutputs()[0])
        return fail(sigmoid, "experts: expected SiLU = x * Sigmoid(x)"), std::nullopt;
      NodeOp gated = single(consumers(silu.getOutputs()[0], "Mul"));
      NodeOp mm3 =
          gated ? producer(*otherOperand(gated, silu.getOutputs()[0]), {"MatMul"}) : NodeOp();
      if (!mm3 || mm3.getInputs()[0] != rows || !weightOf(mm3.getInputs()[1]))
        return fail(silu, "experts: expected SwiGLU silu(x W1) * (x W3)"), std::nullopt;
      NodeOp mm2 = single(consumers(gated.getOutputs()[0], "MatMul"));
      if (!mm2 || !weightOf(mm2.getInputs()[1]))
        return fail(gated, "experts: expected the down projection MatMul(., W2)"), std::nullopt;
      if (*expert < 0 || *expert >= router.numExperts || experts[*expert].w1)
        return fail(mm1, "experts: expert index " + std::to_string(*expert) +
                             " is out of range or appears twice"),
               std::nullopt;
      sawPlain = true;
      experts[*expert] = {*expert, weightOf(mm1.getInputs()[1]), weightOf(mm3.getInputs()[1]),
                          weightOf(mm2.getInputs()[1])};
      auto w1Shape = staticShape(experts[*expert].w1.getResult());
      expertHidden = w1Shape.size() == 2 ? w1Shape[1] : 0;
    }
    if (sawPlain && sawOai)
      return fail(router.topk, "experts: one layer mixes plain and clamped SwiGLU experts"),
             std::nullopt;
    for (auto [e, ex] : llvm::enumerate(experts))
      if (!ex.w1)
        return fail(router.topk, "experts: no SwiGLU expert found for expert id " +
                                     std::to_string(e) + " of " +
                                     std::to_string(router.numExperts)),
               std::nullopt;
    return experts;
  }

  /// Recognises the whole decoder; nullopt with `error` set on failure.
  bool recognise(Value &embeddingOut, NodeOp &embedding, std::vector<LayerMatch> &layers,
                 NormMatch &finalNorm, NodeOp &head) {
    Value ids = func.getArgument(0);
    for (NodeOp gather : consumers(ids, "Gather"))
      if (gather.getInputs()[1] == ids && weightOf(gather.getInputs()[0]))
        embedding = gather;
    if (!embedding) {
      fail(func, "no token embedding: the token-id input feeds no Gather from a weight");
      return false;
    }
    Value x = embedding.getOutputs()[0];
    while (!error) {
      auto norm = matchNorm(x);
      if (!norm) {
        if (!error)
          fail(firstUser(x), "expected an RMSNorm on the residual stream here");
        return false;
      }
      auto attention = matchAttention(norm->output);
      std::optional<MlaMatch> mla;
      if (!attention && !error) {
        mla = matchMla(norm->output);
        if (mla) {
          attention = AttentionMatch();
          attention->input = mla->input;
          attention->output = mla->output;
        }
      }
      if (!attention) {
        if (error)
          return false;
        // Not an attention: this is the final norm, followed by the head.
        finalNorm = *norm;
        for (auto [mm, w] : projections(norm->output))
          head = mm;
        if (!head) {
          fail(firstUser(norm->output), "expected the language-model head MatMul(norm, W)");
          return false;
        }
        break;
      }
      LayerMatch layer;
      layer.attnNorm = *norm;
      layer.attention = *attention;
      layer.mla = mla;
      layer.attnResidualAdd = residualAdd(x, attention->output);
      if (!layer.attnResidualAdd) {
        fail(firstUser(attention->output), "expected the residual add x + attention(x)");
        return false;
      }
      Value h = layer.attnResidualAdd.getOutputs()[0];
      auto ffnNorm = matchNorm(h);
      if (!ffnNorm) {
        if (!error)
          fail(firstUser(h), "expected the FFN RMSNorm after the attention residual");
        return false;
      }
      layer.ffnNorm = *ffnNorm;
      // onnxruntime's fused MoE contrib op in place of router + experts (ContribMoeMatcher.h).
      if (NodeOp fusedMoe = findContribMoe(ffnNorm->output)) {
        if (!matchContribLayer(fusedMoe, ffnNorm->output, h, layer))
          return false;
        x = layer.ffnResidualAdd.getOutputs()[0];
        layers.push_back(std::move(layer));
        continue;
      }
      auto router = matchRouter(ffnNorm->output);
      if (error)
        return false;
      if (!router && allNodes("TopK").empty()) {
        fail(firstUser(ffnNorm->output), "the model has no MoE layer: layer " +
                                             std::to_string(layers.size()) +
                                             "'s FFN has no router (TopK)");
        return false;
      }
      if (!router) {
        // A dense layer (DeepSeek's first_k_dense_replace): one SwiGLU FFN on the FFN norm.
        auto dense = matchSwiGLU(ffnNorm->output);
        if (error)
          return false;
        NodeOp add = dense ? residualAdd(h, dense->output) : NodeOp();
        if (!dense || !add) {
          std::string where = "layer " + std::to_string(layers.size()) +
                              "'s FFN has no router (TopK) and is not a SwiGLU FFN added to the "
                              "residual stream";
          fail(firstUser(ffnNorm->output), where);
          return false;
        }
        layer.dense = dense;
        layer.ffnResidualAdd = add;
        layer.moeOutput = dense->output;
        x = add.getOutputs()[0];
        layers.push_back(std::move(layer));
        continue;
      }
      layer.router = *router;
      auto experts = matchExperts(*router, layer.expertHidden, layer.form);
      if (!experts)
        return false;
      layer.experts = *experts;
      // Shared experts (DeepSeek): a SwiGLU FFN on the FFN norm output beside the router.
      layer.shared = matchSwiGLU(ffnNorm->output);
      if (error)
        return false;
      // x_next = h + moe_out: the Add on h that is not part of the norm.
      for (NodeOp add : consumers(h, "Add"))
        if (add != layer.attnResidualAdd && otherOperand(add, h) &&
            dependsOn(*otherOperand(add, h), router->ids))
          layer.ffnResidualAdd = add;
      if (!layer.ffnResidualAdd) {
        fail(router->topk, "expected the residual add h + moe(h) after the experts");
        return false;
      }
      layer.moeOutput = *otherOperand(layer.ffnResidualAdd, h);
      if (layer.shared) {
        // The shared output must be summed with the routed output into that add:
        // h + (routed + shared).
        NodeOp sum = producer(skipDataMovement(layer.moeOutput), {"Add"});
        bool ok = sum && llvm::any_of(sum.getInputs(), [&](Value in) {
                    return skipDataMovement(in) == layer.shared->output;
                  });
        if (!ok) {
          fail(firstUser(layer.shared->output),
               "shared experts: expected the residual add h + (experts(h) + shared(h))");
          return false;
        }
      }
      x = layer.ffnResidualAdd.getOutputs()[0];
      layers.push_back(std::move(layer));
    }
    embeddingOut = embedding.getOutputs()[0];
    return !error;
  }

  /// A layer whose router and experts are one com.microsoft.MoE node reading `xn`, added to h.
  bool matchContribLayer(NodeOp node, Value xn, Value h, LayerMatch &layer) {
    llvm::Expected<ContribMoeMatch> m = matchContribMoe(node, xn);
    if (!m) {
      llvm::handleAllErrors(
          m.takeError(), [&](const ContribMoeError &e) { fail(e.at, e.message); },
          [&](const llvm::ErrorInfoBase &e) { fail(node, e.message()); });
      return false;
    }
    RouterMatch &r = layer.router;
    r.input = xn;
    r.topk = node;
    r.weight = m->routerWeight;
    r.bias = m->routerBias;
    r.numExperts = m->numExperts;
    r.topK = m->topK;
    r.scoring = m->scoring;
    layer.expertHidden = m->expertHidden;
    layer.form = ExpertForm{m->oai, m->limit, m->alpha, m->fusedGateUp, m->activation};
    auto at_ = [](const SmallVector<WeightOp> &list, int64_t e) {
      return list.empty() ? WeightOp() : list[e];
    };
    for (int64_t e = 0; e < m->numExperts; ++e)
      layer.experts.push_back(ExpertMatch{e, m->w1[e], at_(m->w3, e), m->w2[e], at_(m->b1, e),
                                          at_(m->b3, e), at_(m->b2, e)});
    for (NodeOp add : consumers(h, "Add"))
      if (otherOperand(add, h) && skipDataMovement(*otherOperand(add, h)) == m->output)
        layer.ffnResidualAdd = add;
    if (!layer.ffnResidualAdd) {
      fail(node, "com.microsoft.MoE: expected the residual add h + MoE(norm(h))");
      return false;
    }
    layer.moeOutput = *otherOperand(layer.ffnResidualAdd, h);
    return true;
  }

  void fail(Operation *at, const std::string &message) {
    if (!error)
      error = MatchError{at, message};
  }

  std::nullopt_t fail(NodeOp at, const std::string &message) {
    fail(at.getOperation(), message);
    return std::nullopt;
  }

private:
  func::FuncOp func;
  MaskAnalysis masks; // every layer adds the same mask constant: read it once

  static NodeOp single(const SmallVector<NodeOp> &nodes) {
    return nodes.size() == 1 ? nodes.front() : NodeOp();
  }

  Operation *firstUser(Value v) {
    return v.getUsers().empty() ? v.getParentBlock()->getParentOp() : *v.getUsers().begin();
  }

  /// Every node of `opType`, in block order, from an index of the function's nodes by op type
  /// built by one walk on first use (recognition creates and erases no node): the recogniser asks
  /// once per layer, which walked the whole graph every time.
  SmallVector<NodeOp> allNodes(StringRef opType) {
    if (!nodesByType) {
      nodesByType.emplace();
      func.walk([&](NodeOp node) { (*nodesByType)[node.getOpType()].push_back(node); });
    }
    auto it = nodesByType->find(opType);
    return it == nodesByType->end() ? SmallVector<NodeOp>() : it->second;
  }
  std::optional<llvm::StringMap<SmallVector<NodeOp>>> nodesByType;

  /// First node of `opType` reachable forwards from `v` (breadth-first). With needWeight, only a
  /// MatMul whose second input is a weight counts. Does not walk past weighted MatMuls.
  NodeOp findDownstream(Value v, StringRef opType, bool needWeight = false, int budget = 128) {
    llvm::DenseSet<Operation *> seen;
    std::deque<Value> work{v};
    while (!work.empty() && budget-- > 0) {
      Value cur = work.front();
      work.pop_front();
      for (Operation *user : cur.getUsers()) {
        auto node = dyn_cast<NodeOp>(user);
        if (!node || !seen.insert(node).second)
          continue;
        bool weighted = node.getOpType() == "MatMul" && weightOf(node.getInputs()[1]);
        if (node.getOpType() == opType && (!needWeight || weighted))
          return node;
        if (weighted)
          continue;
        for (Value out : node.getOutputs())
          work.push_back(out);
      }
    }
    return nullptr;
  }

  /// Nodes on the chain from `from`'s output to `to` (exclusive), following single-user links.
  SmallVector<NodeOp> between(NodeOp from, NodeOp to) {
    SmallVector<NodeOp> chain;
    Value cur = from.getOutputs()[0];
    for (int i = 0; i < 8; ++i) {
      auto users = cur.getUsers();
      if (users.empty())
        break;
      auto node = dyn_cast<NodeOp>(*users.begin());
      if (!node || node == to)
        break;
      chain.push_back(node);
      cur = node.getOutputs()[0];
    }
    return chain;
  }

  /// The projection's Reshape to [b, s, heads, head_dim] agrees with (heads, headDim), where the
  /// shape is known (statically typed result, or constant trailing entries of its shape Concat;
  /// heads may be -1, as in `view(b, s, -1, head_dim)`).
  bool checkHeadsInReshape(Value projOut, int64_t heads, int64_t headDim) {
    NodeOp reshape = single(consumers(projOut, "Reshape"));
    if (!reshape)
      return true; // no explicit head split to compare with
    auto shape = staticShape(reshape.getOutputs()[0]);
    if (shape.size() == 4)
      return shape[2] == heads && shape[3] == headDim;
    if (auto concat = producer(reshape.getInputs()[1], {"Concat"})) {
      auto n = concat.getInputs().size();
      auto h = n >= 2 ? constantValues(concat.getInputs()[n - 2]) : std::nullopt;
      auto d = n >= 2 ? constantValues(concat.getInputs()[n - 1]) : std::nullopt;
      if (h && d && h->size() == 1 && d->size() == 1)
        return ((*h)[0] == heads || (*h)[0] == -1) && (*d)[0] == headDim;
    }
    return true;
  }

  /// A float constant with `count` values upstream of the RoPE angles.
  std::optional<SmallVector<double>> findInverseFrequencies(Value angles, int64_t count) {
    llvm::DenseSet<Value> seen;
    std::deque<Value> work{angles};
    for (int budget = 256; !work.empty() && budget-- > 0;) {
      Value v = work.front();
      work.pop_front();
      if (!seen.insert(v).second)
        continue;
      if (auto values = constantValues(v))
        if (static_cast<int64_t>(values->size()) == count)
          return values;
      if (Operation *def = v.getDefiningOp())
        for (Value operand : def->getOperands())
          work.push_back(operand);
    }
    return std::nullopt;
  }

  /// An additive causal mask: -inf strictly above the diagonal of [query, key], built either as
  /// Trilu(upper = 1) of a -inf tensor, or as Where(key > query, -inf, 0) with key and query the
  /// positions Range(0, seq) unsqueezed along axes 0 and 1 (exports before opset 14 lack Trilu).
  bool isCausalMask(Value mask) {
    if (findUpstream(mask, "Trilu", 16)) {
      for (NodeOp trilu : trilusOf(mask)) {
        auto upper = trilu.getOnnxAttrs().getAs<IntegerAttr>("upper");
        if (!upper || upper.getInt() == 1)
          return true;
      }
      return false;
    }
    NodeOp where = producer(skipDataMovement(mask), {"Where"});
    if (!where || where.getInputs().size() != 3)
      return false;
    auto masked = scalarConstant(where.getInputs()[1]), kept = scalarConstant(where.getInputs()[2]);
    if (!masked || !kept || *kept != 0.0 || *masked > -1e4)
      return false;
    NodeOp cmp = producer(where.getInputs()[0], {"Greater", "Less"});
    if (!cmp)
      return false;
    // Greater(key, query) or Less(query, key), key = positions along the last axis.
    Value key = cmp.getInputs()[cmp.getOpType() == "Greater" ? 0 : 1];
    Value query = cmp.getInputs()[cmp.getOpType() == "Greater" ? 1 : 0];
    return positionsAlong(key, 0) && positionsAlong(query, 1);
  }

  /// Trilu nodes of an additive mask built from -inf tensors: the mask itself, or a sum of them.
  SmallVector<NodeOp> trilusOf(Value mask) {
    SmallVector<NodeOp> out;
    std::deque<Value> work{skipDataMovement(mask)};
    for (int budget = 16; !work.empty() && budget-- > 0;) {
      Value v = skipDataMovement(work.front());
      work.pop_front();
      if (NodeOp t = producer(v, {"Trilu"}))
        out.push_back(t);
      else if (NodeOp add = producer(v, {"Add"}))
        for (Value in : add.getInputs())
          work.push_back(in);
    }
    return out;
  }

  /// The sliding window w of a causal mask that also adds Trilu(-inf, k = -w, upper = 0) (keys
  /// j <= i - w hidden, HF's sliding_window_overlay); 0 for a plain causal mask.
  int64_t slidingWindowOf(Value mask) {
    for (NodeOp trilu : trilusOf(mask)) {
      auto upper = trilu.getOnnxAttrs().getAs<IntegerAttr>("upper");
      if (!upper || upper.getInt() != 0 || trilu.getInputs().size() < 2)
        continue;
      auto k = scalarConstant(trilu.getInputs()[1]);
      if (k && *k <= -1)
        return static_cast<int64_t>(-*k);
      fail(trilu, "attention: a lower-triangular mask whose diagonal offset is not a negative "
                  "constant (sliding window)");
    }
    return 0;
  }

  /// `v` is Unsqueeze(Range(0, n, 1), axes = [axis]).
  bool positionsAlong(Value v, int64_t axis) {
    NodeOp unsqueeze = producer(v, {"Unsqueeze"});
    if (!unsqueeze)
      return false;
    std::optional<SmallVector<double>> axes;
    if (unsqueeze.getInputs().size() == 2)
      axes = constantValues(unsqueeze.getInputs()[1]); // opset >= 13: axes is an input
    else if (auto attr = unsqueeze.getOnnxAttrs().getAs<ArrayAttr>("axes"))
      axes = SmallVector<double>{static_cast<double>(llvm::cast<IntegerAttr>(attr[0]).getInt())};
    NodeOp range = producer(unsqueeze.getInputs()[0], {"Range"});
    auto start = range ? scalarConstant(range.getInputs()[0]) : std::nullopt;
    auto step = range ? scalarConstant(range.getInputs()[2]) : std::nullopt;
    return axes && axes->size() == 1 && (*axes)[0] == axis && start && *start == 0 && step &&
           *step == 1;
  }

  /// Expert id whose one-hot row selects `rows`: Gather(mask', e) upstream of rows, where mask' is
  /// the OneHot output (possibly transposed).
  std::optional<int64_t> expertIndexOf(Value rows, NodeOp oneHot) {
    // The walk from `rows` does not depend on `oneHot`: its candidates (Gathers with a constant
    // index, by the mask they read) are kept per `rows`, so each expert's rows are walked once,
    // not once per layer. The first candidate on `oneHot`'s mask is the one the walk meets first.
    auto [cached, fresh] = expertCandidates.try_emplace(rows);
    if (fresh) {
      llvm::DenseSet<Value> seen;
      std::deque<Value> work{rows};
      for (int budget = 128; !work.empty() && budget-- > 0;) {
        Value v = work.front();
        work.pop_front();
        if (!seen.insert(v).second)
          continue;
        NodeOp node = producer(v);
        if (!node)
          continue;
        if (node.getOpType() == "Gather" && node.getInputs().size() == 2)
          if (auto e = scalarConstant(node.getInputs()[1]))
            cached->second.push_back(
                {skipTranspose(node.getInputs()[0]), static_cast<int64_t>(*e)});
        if (node.getOpType() == "MatMul" && weightOf(node.getInputs()[1]))
          continue; // another component's projection: stop here
        for (Value operand : node.getInputs())
          work.push_back(operand);
      }
    }
    for (auto [mask, e] : cached->second)
      if (mask == oneHot.getOutputs()[0])
        return e;
    return std::nullopt;
  }
  /// expertIndexOf's candidates per rows value: (mask, expert id), in walk order.
  llvm::DenseMap<Value, SmallVector<std::pair<Value, int64_t>, 2>> expertCandidates;

  static Value skipTranspose(Value v) {
    while (auto t = producer(v, {"Transpose"}))
      v = t.getInputs()[0];
    return v;
  }

  /// The Add node computing x + y (either operand order).
  NodeOp residualAdd(Value x, Value y) {
    for (NodeOp add : consumers(y, "Add"))
      if (otherOperand(add, y) && *otherOperand(add, y) == x)
        return add;
    return nullptr;
  }
};

struct RaiseOnnxToMoePass : impl::RaiseOnnxToMoeBase<RaiseOnnxToMoePass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto funcs = llvm::to_vector(module.getOps<func::FuncOp>());
    if (funcs.size() != 1 || funcs[0].getNumArguments() < 1) {
      module.emitError("raise-onnx-to-moe: expected one function with the token ids as its "
                       "first argument");
      return signalPassFailure();
    }
    func::FuncOp func = funcs[0];
    // Before the op check: a traced moe_infer also holds ops we do not support (ScatterND), and
    // the baked token counts are the diagnosis its author needs.
    if (failed(checkDispatchDataflow(func)))
      return signalPassFailure();
    if (failed(checkSupportedOps(func)))
      return signalPassFailure();
    foldWeightTransposes(func);
    if (failed(raise(func)))
      return signalPassFailure();
  }

  /// Exports without constant folding read `nn.Linear` weights ([out, in] on disk) through
  /// `Transpose(W)`; replace each such node by a reference marked `transposed` whose type is the
  /// [in, out] matrix the MatMul sees, so the recogniser sees weights in one orientation.
  void foldWeightTransposes(func::FuncOp func) {
    SmallVector<NodeOp> transposes;
    func.walk([&](NodeOp node) {
      if (node.getOpType() == "Transpose" && weightOf(node.getInputs()[0]))
        transposes.push_back(node);
    });
    for (NodeOp node : transposes) {
      WeightOp w = weightOf(node.getInputs()[0]);
      auto type = llvm::cast<RankedTensorType>(w.getResult().getType());
      if (type.getRank() != 2 || w.getTransposed())
        continue;
      if (auto perm = node.getOnnxAttrs().getAs<ArrayAttr>("perm")) {
        auto p = llvm::to_vector(
            llvm::map_range(perm, [](Attribute a) { return llvm::cast<IntegerAttr>(a).getInt(); }));
        if (p != SmallVector<int64_t>{1, 0})
          continue;
      }
      OpBuilder b(w);
      auto transposed = b.create<WeightOp>(
          w.getLoc(),
          RankedTensorType::get({type.getDimSize(1), type.getDimSize(0)}, type.getElementType()),
          w.getWeightNameAttr(), w.getFileAttr(), w.getOffsetAttr(), w.getLengthAttr(),
          /*value=*/ElementsAttr(), b.getUnitAttr());
      node.getOutputs()[0].replaceAllUsesWith(transposed.getResult());
      node.erase();
    }
  }

  /// Reports every node whose op type the recogniser does not know, all at once.
  LogicalResult checkSupportedOps(func::FuncOp func) {
    bool ok = true;
    func.walk([&](NodeOp node) {
      if (isContribMoe(node))
        return; // onnxruntime's fused MoE (ContribMoeMatcher.h)
      if (!node.getDomain().empty() && node.getDomain() != "ai.onnx") {
        node.emitError() << describe(node) << ": domain '" << node.getDomain()
                         << "' is not supported";
        ok = false;
      } else if (!supportedOpTypes().contains(node.getOpType())) {
        node.emitError() << describe(node) << ": op type " << node.getOpType()
                         << " is not supported";
        ok = false;
      }
    });
    return success(ok);
  }

  LogicalResult raise(func::FuncOp func) {
    Recogniser rec(func);
    Value embeddingOut;
    NodeOp embedding, head;
    std::vector<LayerMatch> layers;
    NormMatch finalNorm;
    bool ok = rec.recognise(embeddingOut, embedding, layers, finalNorm, head);
    if (ok && llvm::none_of(layers, [](const LayerMatch &l) { return !l.dense; }))
      rec.fail(head, "the model has no MoE layer (no router TopK on any FFN)");
    if (!ok || rec.error) {
      auto &err = *rec.error;
      if (auto node = dyn_cast<NodeOp>(err.at))
        node.emitError() << describe(node) << ": " << err.message;
      else
        err.at->emitError() << err.message;
      return failure();
    }
    // The components are found by their anchors; every node between them must have a role too.
    if (failed(checkEveryNodeExplained(func)))
      return failure();

    // Build the moe ops at the end of the function, then route the graph output through them.
    // Types come from the token ids [batch, seq] and the weight shapes, not from ONNX shape
    // inference, which leaves many values without static shapes.
    auto ret = cast<func::ReturnOp>(func.getBody().front().getTerminator());
    OpBuilder b(ret);
    Location loc = func.getLoc();
    auto idsType = llvm::cast<RankedTensorType>(func.getArgument(0).getType());
    auto embedShape = staticShape(weightOf(embedding.getInputs()[0]).getResult());
    auto headShape = staticShape(weightOf(head.getInputs()[1]).getResult());
    const int64_t batch = idsType.getDimSize(0), seq = idsType.getDimSize(1);
    const int64_t tokens = ShapedType::isDynamic(batch) || ShapedType::isDynamic(seq)
                               ? ShapedType::kDynamic
                               : batch * seq;
    auto actType = RankedTensorType::get({batch, seq, embedShape[1]}, b.getF32Type());
    auto logitsType = RankedTensorType::get({batch, seq, headShape[1]}, b.getF32Type());
    auto norm = [&](NormMatch m, Value x, int64_t layer, StringRef role) {
      return b
          .create<moe::RmsNormOp>(loc, actType, x, m.weight.getResult(), llvm::APFloat(m.eps),
                                  layer, role)
          .getResult();
    };
    Value x = b.create<moe::EmbeddingOp>(embedding.getLoc(), actType, func.getArgument(0),
                                         weightOf(embedding.getInputs()[0]).getResult())
                  .getResult();
    for (auto [l, layer] : llvm::enumerate(layers)) {
      int64_t li = static_cast<int64_t>(l);
      Value xn = norm(layer.attnNorm, x, li, "attn_norm");
      AttentionMatch a = layer.attention;
      Value attn;
      if (layer.mla) {
        MlaMatch m = *layer.mla;
        attn = b.create<moe::MlaAttentionOp>(
            loc, actType, xn, m.wq.getResult(), m.wkvA.getResult(), m.kvNorm.getResult(),
            m.wkvB.getResult(), m.wo.getResult(), b.getI64IntegerAttr(li),
            b.getI64IntegerAttr(m.heads), b.getI64IntegerAttr(m.nope), b.getI64IntegerAttr(m.rope),
            b.getI64IntegerAttr(m.v), b.getI64IntegerAttr(m.rank), b.getF64FloatAttr(m.kvNormEps),
            b.getF64FloatAttr(m.ropeTheta), b.getF64FloatAttr(m.softmaxScale),
            m.interleaved ? b.getUnitAttr() : UnitAttr());
      } else {
        auto opt = [](WeightOp w) { return w ? w.getResult() : Value(); };
        attn = b.create<moe::AttentionOp>(
            loc, actType, xn, a.wq.getResult(), a.wk.getResult(), a.wv.getResult(),
            a.wo.getResult(), opt(a.bq), opt(a.bk), opt(a.bv), opt(a.bo), opt(a.qNorm),
            opt(a.kNorm), opt(a.sinks), b.getI64IntegerAttr(li), b.getI64IntegerAttr(a.heads),
            b.getI64IntegerAttr(a.kvHeads), b.getI64IntegerAttr(a.headDim),
            b.getF64FloatAttr(a.ropeTheta), a.qNorm ? b.getF64FloatAttr(a.qkNormEps) : FloatAttr(),
            a.slidingWindow > 0 ? b.getI64IntegerAttr(a.slidingWindow) : IntegerAttr());
      }
      Value h = b.create<arith::AddFOp>(loc, x, attn);
      Value hn = norm(layer.ffnNorm, h, li, "ffn_norm");
      auto ffn = [&](FfnMatch f, StringRef role, IntegerAttr numShared) {
        return b
            .create<moe::DenseFfnOp>(loc, actType, hn, f.w1.getResult(), f.w3.getResult(),
                                     f.w2.getResult(), b.getI64IntegerAttr(li),
                                     b.getStringAttr(role), b.getI64IntegerAttr(f.inner), numShared,
                                     /*side=*/StringAttr())
            .getResult();
      };
      if (layer.dense) {
        x = b.create<arith::AddFOp>(loc, h, ffn(*layer.dense, "dense", IntegerAttr()));
        continue;
      }
      RouterMatch r = layer.router;
      auto router = b.create<moe::RouterOp>(
          loc, RankedTensorType::get({tokens, r.topK}, b.getI64Type()),
          RankedTensorType::get({tokens, r.topK}, b.getF32Type()), hn, r.weight.getResult(),
          r.bias ? r.bias.getResult() : Value(), b.getI64IntegerAttr(li),
          b.getI64IntegerAttr(r.numExperts), b.getI64IntegerAttr(r.topK),
          b.getStringAttr(r.scoring),
          r.scalingFactor > 0 ? b.getF64FloatAttr(r.scalingFactor) : FloatAttr());
      // r_l = h_l + shared(norm(h_l)) runs on the attention side; the experts' output is added
      // to it (docs/architecture.md, "Exchanges").
      Value residual = h;
      if (layer.shared) {
        int64_t inner = layer.shared->inner;
        IntegerAttr count = layer.expertHidden > 0 && inner % layer.expertHidden == 0
                                ? b.getI64IntegerAttr(inner / layer.expertHidden)
                                : b.getI64IntegerAttr(1);
        residual = b.create<arith::AddFOp>(loc, h, ffn(*layer.shared, "shared", count));
      }
      SmallVector<Value> w1, w3, w2, b1, b3, b2;
      for (ExpertMatch e : layer.experts) {
        w1.push_back(e.w1);
        if (e.w3)
          w3.push_back(e.w3);
        w2.push_back(e.w2);
        if (e.b1)
          b1.push_back(e.b1);
        if (e.b3)
          b3.push_back(e.b3);
        if (e.b2)
          b2.push_back(e.b2);
      }
      // (A structured binding cannot be captured by a lambda before C++20: clang refuses it.)
      const size_t expertCount = layer.experts.size();
      auto allOrNone = [&](SmallVector<Value> &list, const char *what) {
        if (!list.empty() && list.size() != expertCount) {
          func.emitError() << "layer " << li << ": only some experts have a " << what;
          return false;
        }
        return true;
      };
      if (!allOrNone(b1, "gate bias") || !allOrNone(b3, "up bias") || !allOrNone(b2, "down bias"))
        return failure();
      const ExpertForm &form = layer.form;
      Value moeOut = b.create<moe::ExpertsOp>(
          loc, actType, hn, router.getIds(), router.getGates(), w1, w3, w2, b1, b3, b2,
          b.getI64IntegerAttr(li), b.getI64IntegerAttr(r.numExperts),
          b.getI64IntegerAttr(layer.expertHidden),
          form.oai              ? b.getStringAttr("swiglu_oai")
          : !form.plain.empty() ? b.getStringAttr(form.plain)
                                : StringAttr(),
          form.oai ? b.getF64FloatAttr(form.limit) : FloatAttr(),
          form.oai ? b.getF64FloatAttr(form.alpha) : FloatAttr(),
          form.fusedGateUp.value_or(form.oai) ? b.getUnitAttr() : UnitAttr());
      x = b.create<arith::AddFOp>(loc, residual, moeOut);
    }
    Value xn = norm(finalNorm, x, -1, "final_norm");
    Value logits = b.create<moe::HeadOp>(head.getLoc(), logitsType, xn,
                                         weightOf(head.getInputs()[1]).getResult());
    if (ret.getNumOperands() != 1 || ret.getOperand(0) != head.getOutputs()[0]) {
      head.emitError() << describe(head)
                       << ": the language-model head must produce the only graph output";
      return failure();
    }
    func.setFunctionType(b.getFunctionType(func.getArgumentTypes(), {logitsType}));
    ret->setOperand(0, logits);
    return eraseRecognisedGraph(func);
  }

  /// Every ONNX node is now dead; one that is still used sits outside every recognised component.
  LogicalResult eraseRecognisedGraph(func::FuncOp func) {
    Block &body = func.getBody().front();
    for (Operation &op : llvm::make_early_inc_range(llvm::reverse(body)))
      if (isa<NodeOp, onnxir::NoneOp>(op) && op.use_empty())
        op.erase();
    for (Operation &op : body)
      if (auto node = dyn_cast<NodeOp>(op)) {
        node.emitError() << describe(node)
                         << ": not part of any recognised component (embedding, RMSNorm, "
                            "attention, router, experts, dense or shared FFN, head)";
        return failure();
      }
    for (Operation &op : llvm::make_early_inc_range(body))
      if (auto w = dyn_cast<WeightOp>(op); w && w->use_empty())
        w->erase();
    return success();
  }
};
} // namespace
} // namespace disagmoe
