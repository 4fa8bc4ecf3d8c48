//===- ContribMoeMatcher.cpp - onnxruntime's fused com.microsoft.MoE as moe ops -===//
//
// Semantics, defaults and sources: ContribMoeMatcher.h. Every attribute is read with
// onnxruntime's default; a form moe.experts cannot express, or weights whose shapes contradict the
// attributes, are refused rather than guessed.
//
//===----------------------------------------------------------------------===//
#include "passes/raise/ContribMoeMatcher.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"

#include <cfloat>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>

namespace disagmoe::raise {
using namespace mlir;

namespace {

std::string shapeString(ArrayRef<int64_t> shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

/// Input `i` of the node, or a null Value when absent or left empty ("").
Value optionalInput(NodeOp node, unsigned i) {
  if (i >= node.getInputs().size())
    return Value();
  Value v = node.getInputs()[i];
  return isa_and_nonnull<onnxir::NoneOp>(v.getDefiningOp()) ? Value() : v;
}

/// Rows [row0, row0 + rows) of expert e's [outRows, in] slice of a stacked weight [E, outRows, in]
/// (or of a bias [E, outRows] when `in` is 0), as a reference into the same bytes: a weight is
/// referenced as its transpose [in, rows] (marked `transposed`), a bias as [rows]. The rows must be
/// contiguous on disk, which holds for row ranges of one expert.
WeightOp rowSlice(WeightOp w, int64_t e, int64_t row0, int64_t rows, StringRef part) {
  auto type = llvm::cast<RankedTensorType>(w.getResult().getType());
  const int64_t outRows = type.getDimSize(1);
  const int64_t in = type.getRank() == 3 ? type.getDimSize(2) : 1;
  const int64_t elem = static_cast<int64_t>(w.getLength()) / (type.getDimSize(0) * outRows * in);
  OpBuilder b(w);
  b.setInsertionPointAfter(w);
  SmallVector<int64_t> shape =
      type.getRank() == 3 ? SmallVector<int64_t>{in, rows} : SmallVector<int64_t>{rows};
  return b.create<WeightOp>(
      w.getLoc(), RankedTensorType::get(shape, type.getElementType()),
      b.getStringAttr(w.getWeightName().str() + "[" + std::to_string(e) + "]" + part.str()),
      w.getFileAttr(),
      b.getI64IntegerAttr(static_cast<int64_t>(w.getOffset()) + ((e * outRows + row0) * in) * elem),
      b.getI64IntegerAttr(rows * in * elem), /*value=*/ElementsAttr(),
      type.getRank() == 3 ? b.getUnitAttr() : UnitAttr(), /*row_stride=*/IntegerAttr(),
      w.getStoredTypeAttr());
}

/// A reference to the 2-D weight `w` as its transpose (marked `transposed`, as
/// normalize-onnx's FoldWeightTranspose does), for a router weight that a Gemm reads with transB
/// = 1.
WeightOp transposedRef(WeightOp w) {
  auto type = llvm::cast<RankedTensorType>(w.getResult().getType());
  if (type.getRank() != 2)
    return w; // the shape check below names it
  OpBuilder b(w);
  b.setInsertionPointAfter(w);
  return b.create<WeightOp>(
      w.getLoc(),
      RankedTensorType::get({type.getDimSize(1), type.getDimSize(0)}, type.getElementType()),
      w.getWeightNameAttr(), w.getFileAttr(), w.getOffsetAttr(), w.getLengthAttr(),
      /*value=*/ElementsAttr(), b.getUnitAttr(), /*row_stride=*/IntegerAttr(),
      w.getStoredTypeAttr());
}

/// A float attribute as written (1.702, 7, inf), for messages.
std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

/// An fp32 attribute as the shortest decimal that rounds to the same fp32 (1.70200002 -> 1.702):
/// the digits beyond are the float32 storage's, not the model's.
double shortestF32(double v) {
  const float f = static_cast<float>(v);
  for (int digits = 1; digits <= 9; ++digits) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*g", digits, v);
    const double d = std::strtod(buf, nullptr);
    if (static_cast<float>(d) == f)
      return d;
  }
  return v;
}

} // namespace

bool isContribMoe(NodeOp node) {
  return node && node.getDomain() == "com.microsoft" && node.getOpType() == "MoE";
}

NodeOp findContribMoe(Value x) {
  SmallVector<Value, 4> views{x};
  for (size_t i = 0; i < views.size() && i < 8; ++i)
    for (Operation *user : views[i].getUsers())
      if (auto node = dyn_cast<NodeOp>(user)) {
        if (isContribMoe(node) && !node.getInputs().empty() && node.getInputs()[0] == views[i])
          return node;
        StringRef op = node.getOpType();
        if (node.getDomain().empty() && (op == "Reshape" || op == "Flatten" || op == "Squeeze" ||
                                         op == "Unsqueeze" || op == "Identity" || op == "Cast"))
          views.push_back(node.getOutputs()[0]);
      }
  return nullptr;
}

char ContribMoeError::ID = 0;

llvm::Expected<ContribMoeMatch> matchContribMoe(NodeOp node, Value x) {
  auto fail = [&](const std::string &message) -> llvm::Error {
    return llvm::make_error<ContribMoeError>(node.getOperation(), "com.microsoft.MoE: " + message);
  };
  DictionaryAttr attrs = node.getOnnxAttrs();
  auto intAttr = [&](StringRef name, int64_t dflt) {
    auto a = attrs ? attrs.getAs<IntegerAttr>(name) : IntegerAttr();
    return a ? a.getInt() : dflt;
  };
  auto floatAttr = [&](StringRef name, double dflt) {
    auto a = attrs ? attrs.getAs<FloatAttr>(name) : FloatAttr();
    return a ? shortestF32(a.getValueAsDouble()) : dflt;
  };
  auto strAttr = [&](StringRef name, StringRef dflt) {
    auto a = attrs ? attrs.getAs<StringAttr>(name) : StringAttr();
    return a ? a.getValue().str() : dflt.str();
  };
  if (attrs)
    for (NamedAttribute a : attrs) {
      StringRef n = a.getName().getValue();
      if (n != "k" && n != "activation_type" && n != "normalize_routing_weights" &&
          n != "swiglu_fusion" && n != "swiglu_limit" && n != "activation_alpha" &&
          n != "activation_beta" && n != "use_sparse_mixer")
        return fail("attribute '" + n.str() +
                    "' is not one of the op's (k, activation_type, "
                    "normalize_routing_weights, swiglu_fusion, swiglu_limit, activation_alpha, "
                    "activation_beta, use_sparse_mixer)");
    }

  if (node.getOutputs().size() != 1)
    return fail("expected one output, got " + std::to_string(node.getOutputs().size()));
  ContribMoeMatch m;
  m.node = node;
  m.output = node.getOutputs()[0];
  const std::string activation = strAttr("activation_type", "relu");
  const int64_t k = intAttr("k", 1);
  const int64_t normalize = intAttr("normalize_routing_weights", 0);
  const int64_t fusion = intAttr("swiglu_fusion", 0);
  const double limit = floatAttr("swiglu_limit", std::numeric_limits<double>::infinity());
  const double alpha = floatAttr("activation_alpha", 1.0);
  const double beta = floatAttr("activation_beta", 0.0);
  if (activation != "relu" && activation != "gelu" && activation != "silu" &&
      activation != "identity" && activation != "swiglu")
    return fail("attribute 'activation_type' = '" + activation +
                "' is not one of relu, gelu, silu, identity, swiglu");
  if (normalize != 0 && normalize != 1)
    return fail("attribute 'normalize_routing_weights' = " + std::to_string(normalize) +
                " must be 0 or 1");
  if (fusion < 0 || fusion > 2)
    return fail("attribute 'swiglu_fusion' = " + std::to_string(fusion) +
                " must be 0 (separate), 1 (interleaved) or 2 (concatenated)");
  if (fusion != 0 && activation != "swiglu")
    return fail("attribute 'swiglu_fusion' = " + std::to_string(fusion) +
                " fuses a SwiGLU, but 'activation_type' is '" + activation + "'");
  if (activation == "swiglu" && fusion == 0)
    return fail("attribute 'activation_type' = 'swiglu' needs 'swiglu_fusion' 1 (interleaved) or 2 "
                "(concatenated): with 0, fc1 holds no value half");
  if (intAttr("use_sparse_mixer", 0) != 0)
    return fail("attribute 'use_sparse_mixer' = 1 (sparse-mixer routing) is not supported");

  // Weights: present, f32 weights (initializers), of the layout that the attributes imply.
  if (node.getInputs().size() < 5)
    return fail("expected at least 5 inputs (input, router_probs, fc1_experts_weights, "
                "fc1_experts_bias, fc2_experts_weights), got " +
                std::to_string(node.getInputs().size()));
  static const char *const names[] = {"input",
                                      "router_probs",
                                      "fc1_experts_weights",
                                      "fc1_experts_bias",
                                      "fc2_experts_weights",
                                      "fc2_experts_bias",
                                      "fc3_experts_weights",
                                      "fc3_experts_bias"};
  if (node.getInputs().size() > 8)
    return fail("expected at most 8 inputs, got " + std::to_string(node.getInputs().size()));
  WeightOp w[8];
  for (unsigned i = 2; i < 8; ++i) {
    Value v = optionalInput(node, i);
    if (!v)
      continue;
    w[i] = weightOf(v);
    if (!w[i])
      return fail(std::string("input '") + names[i] + "' is not an initializer");
    if (w[i].getTransposed())
      return fail(std::string("input '") + names[i] + "' is read through a Transpose");
    if (!llvm::cast<RankedTensorType>(w[i].getResult().getType()).getElementType().isF32())
      return fail(std::string("input '") + names[i] + "' is not float32");
  }
  if (!w[2] || !w[4])
    return fail("fc1_experts_weights and fc2_experts_weights are required");
  auto shape = [&](unsigned i) {
    return w[i] ? staticShape(w[i].getResult()) : SmallVector<int64_t>{};
  };
  auto fc1 = shape(2), fc2 = shape(4);
  auto xShape = staticShape(node.getInputs()[0]);
  if (fc1.size() != 3 || fc2.size() != 3)
    return fail("fc1_experts_weights " + shapeString(fc1) + " and fc2_experts_weights " +
                shapeString(fc2) + " must be 3-D [experts, out, in]");
  const int64_t E = fc1[0], H = fc2[1], I = fc2[2];
  if (E <= 0 || H <= 0 || I <= 0)
    return fail("fc1_experts_weights " + shapeString(fc1) + " and fc2_experts_weights " +
                shapeString(fc2) + " must have positive experts, hidden and inter sizes");
  if (!xShape.empty() && xShape.back() != H)
    return fail("fc2_experts_weights " + shapeString(fc2) +
                " is not [experts, hidden, inter] for "
                "the input's hidden size " +
                std::to_string(xShape.back()) +
                " (onnxruntime >= 1.22 stores weights [out, in]; the pre-1.22 layout "
                "[experts, inter, hidden] is refused)");
  const bool fused = activation == "swiglu";
  const int64_t f = fused ? 2 : 1;
  if (fc2[0] != E || fc1[1] != f * I || fc1[2] != H) {
    std::string want = "[" + std::to_string(E) + ", " + (fused ? "2*" : "") + std::to_string(I) +
                       ", " + std::to_string(H) + "]";
    return fail("fc1_experts_weights " + shapeString(fc1) + " contradicts attribute " +
                (fused ? "'swiglu_fusion' = " + std::to_string(fusion) + " (fused gate and value: "
                       : "'activation_type' = '" + activation + "' (one projection: ") +
                "expected [experts, " + (fused ? "2*inter" : "inter") + ", hidden] = " + want +
                " from fc2_experts_weights " + shapeString(fc2) + ")");
  }
  if (w[3] && shape(3) != SmallVector<int64_t>{E, f * I})
    return fail("fc1_experts_bias " + shapeString(shape(3)) + " is not [experts, " +
                (fused ? "2*inter" : "inter") + "] = " + shapeString({E, f * I}));
  if (w[5] && shape(5) != SmallVector<int64_t>{E, H})
    return fail("fc2_experts_bias " + shapeString(shape(5)) +
                " is not [experts, hidden] = " + shapeString({E, H}));
  if (w[6] && fused)
    return fail("fc3_experts_weights is given with 'swiglu_fusion' = " + std::to_string(fusion) +
                ", whose fc1 already holds the value projection");
  if (w[7] && !w[6])
    return fail("fc3_experts_bias without fc3_experts_weights");
  if (w[6] && shape(6) != SmallVector<int64_t>{E, I, H})
    return fail("fc3_experts_weights " + shapeString(shape(6)) +
                " is not [experts, inter, hidden] = " + shapeString({E, I, H}));
  if (w[7] && shape(7) != SmallVector<int64_t>{E, I})
    return fail("fc3_experts_bias " + shapeString(shape(7)) +
                " is not [experts, inter] = " + shapeString({E, I}));
  if (k < 1 || k > E)
    return fail("attribute 'k' = " + std::to_string(k) + " is outside 1.." + std::to_string(E) +
                " (the experts in fc1_experts_weights)");

  // The expert form moe.experts expresses.
  if (!fused) {
    // fc3 gates only silu (SwiGLU); onnxruntime's CUDA provider multiplies any activation by fc3,
    // but no model uses e.g. relu(fc1) * fc3, so that form is refused rather than half-supported.
    if (w[6] && activation != "silu")
      return fail(
          "attribute 'activation_type' = '" + activation +
          "' with fc3_experts_weights is not supported: only silu is gated by fc3 (SwiGLU)");
    if (!w[6])
      m.activation = activation == "gelu" ? "gelu_tanh" : activation; // w1 -> act -> w2
  } else if (beta == 1.0) {
    if (!(alpha > 0))
      return fail("attribute 'activation_alpha' = " + num(alpha) + " must be positive");
    if (!(limit > 0))
      return fail("attribute 'swiglu_limit' = " + num(limit) + " must be positive");
    m.oai = true;
    m.alpha = alpha;
    m.limit = std::isinf(limit) ? static_cast<double>(FLT_MAX) : limit;
  } else if (beta != 0.0 || alpha != 1.0 || !std::isinf(limit)) {
    return fail("attributes 'activation_alpha' = " + num(alpha) +
                ", 'activation_beta' = " + num(beta) + ", 'swiglu_limit' = " + num(limit) +
                " are not supported: expected beta 1 (clamped SwiGLU), or alpha 1, beta 0 and "
                "no limit (SwiGLU)");
  }

  // router_probs: MatMul(x', Wg) [+ b] or Gemm(x', Wg [transB], b) with x' the node's input (or
  // another view of x).
  NodeOp logits = producer(node.getInputs()[1], {"MatMul", "Add", "Gemm"});
  bool gemmTransB = false;
  if (logits && logits.getOpType() == "Gemm") {
    // Gemm(A, B, C) = alpha * A' B' + beta * C (ONNX Gemm): only alpha = beta = 1 and transA = 0
    // are the plain logits x Wg + b; a scaled logit would change the softmax, so other values are
    // refused rather than dropped.
    DictionaryAttr g = logits.getOnnxAttrs();
    auto gInt = [&](StringRef name) {
      auto a = g ? g.getAs<IntegerAttr>(name) : IntegerAttr();
      return a ? a.getInt() : 0;
    };
    auto gFloat = [&](StringRef name) {
      auto a = g ? g.getAs<FloatAttr>(name) : FloatAttr();
      return a ? shortestF32(a.getValueAsDouble()) : 1.0;
    };
    Value c = logits.getInputs().size() > 2 ? logits.getInputs()[2] : Value();
    if (c && isa_and_nonnull<onnxir::NoneOp>(c.getDefiningOp()))
      c = Value();
    auto failGemm = [&](const std::string &message) -> llvm::Error {
      return llvm::make_error<ContribMoeError>(
          logits.getOperation(), "com.microsoft.MoE: input 'router_probs' is a Gemm " + message);
    };
    if (gInt("transA") != 0)
      return failGemm("with transA = " + std::to_string(gInt("transA")) +
                      " (expected 0: the tokens are the rows of input A)");
    if (gFloat("alpha") != 1.0)
      return failGemm("with alpha = " + num(gFloat("alpha")) +
                      " (expected 1: a scaled logit changes the routing softmax)");
    if (c && gFloat("beta") != 1.0)
      return failGemm("with beta = " + num(gFloat("beta")) + " (expected 1 with a bias C)");
    if (c) {
      m.routerBias = weightOf(c);
      if (!m.routerBias)
        return failGemm("whose bias C is not an initializer");
    }
    gemmTransB = gInt("transB") != 0;
  } else if (logits && logits.getOpType() == "Add") {
    for (Value in : logits.getInputs())
      if (NodeOp mm = producer(in, {"MatMul"})) {
        m.routerBias = weightOf(*otherOperand(logits, in));
        logits = mm;
        break;
      }
    if (!m.routerBias)
      logits = NodeOp();
  }
  if (!logits) {
    if (producer(skipDataMovement(node.getInputs()[1]), {"Softmax"}))
      return fail("input 'router_probs' is a Softmax output, but the op applies softmax to "
                  "router_probs itself (routing would use softmax(softmax(logits)))");
    return fail("input 'router_probs' is not MatMul(input, router weight) [+ bias] or "
                "Gemm(input, router weight, bias)");
  }
  if (skipDataMovement(logits.getInputs()[0]) != skipDataMovement(x) ||
      skipDataMovement(node.getInputs()[0]) != skipDataMovement(x))
    return fail("input 'router_probs' is not computed from the node's own input");
  m.routerWeight = weightOf(logits.getInputs()[1]);
  if (m.routerWeight && gemmTransB) { // B = Wg^T [experts, hidden]: reference its transpose
    if (m.routerWeight.getTransposed())
      return fail("input 'router_probs' is a Gemm with transB = 1 of a weight that is already "
                  "transposed");
    m.routerWeight = transposedRef(m.routerWeight);
  }
  auto rw = m.routerWeight ? staticShape(m.routerWeight.getResult()) : SmallVector<int64_t>{};
  if (rw != SmallVector<int64_t>{H, E})
    return fail("input 'router_probs' comes from a router weight " + shapeString(rw) +
                " that is not [hidden, experts] = " + shapeString({H, E}));
  if (m.routerBias && staticShape(m.routerBias.getResult()) != SmallVector<int64_t>{E})
    return fail("the router logits' bias is not [experts] = " + shapeString({E}));

  m.numExperts = E;
  m.topK = k;
  m.expertHidden = I;
  m.scoring = normalize ? "softmax_topk_renorm" : "softmax_topk";
  m.fusedGateUp = fused && fusion == 1;
  for (int64_t e = 0; e < E; ++e) {
    if (fusion == 2) { // [gate; value] rows: two contiguous halves
      m.w1.push_back(rowSlice(w[2], e, 0, I, ".gate"));
      m.w3.push_back(rowSlice(w[2], e, I, I, ".value"));
      if (w[3]) {
        m.b1.push_back(rowSlice(w[3], e, 0, I, ".gate"));
        m.b3.push_back(rowSlice(w[3], e, I, I, ".value"));
      }
    } else {
      m.w1.push_back(rowSlice(w[2], e, 0, f * I, ""));
      if (w[3])
        m.b1.push_back(rowSlice(w[3], e, 0, f * I, ""));
      if (w[6])
        m.w3.push_back(rowSlice(w[6], e, 0, I, ""));
      if (w[7])
        m.b3.push_back(rowSlice(w[7], e, 0, I, ""));
    }
    m.w2.push_back(rowSlice(w[4], e, 0, H, ""));
    if (w[5])
      m.b2.push_back(rowSlice(w[5], e, 0, H, ""));
  }
  return m;
}

} // namespace disagmoe::raise
