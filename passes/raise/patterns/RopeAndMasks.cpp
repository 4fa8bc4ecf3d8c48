//===- RopeAndMasks.cpp - the rotary embedding and causal masks of the attention patterns ---===//
//
// What AttentionPattern and MlaAttentionPattern read around the scores: the head split, the RoPE
// inverse frequencies and the causal / sliding-window mask in its structural forms (a mask the
// fold stage made a constant is read by value, MaskAnalysis in GraphMatchers.h).
//
//===----------------------------------------------------------------------===//
#include "passes/raise/patterns/ComponentMatcher.h"

#include "llvm/ADT/APFloat.h"
#include "llvm/ADT/DenseSet.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <deque>

using namespace mlir;

namespace disagmoe::raise {

/// Trilu nodes of an additive mask built from -inf tensors: the mask itself, or a sum of them.
static SmallVector<NodeOp> trilusOf(Value mask) {
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

/// Trilu's diagonal offset k: its second input, 0 when absent; nullopt if not a constant.
static std::optional<double> triluOffset(NodeOp trilu) {
  if (trilu.getInputs().size() < 2 ||
      isa_and_nonnull<onnxir::NoneOp>(trilu.getInputs()[1].getDefiningOp()))
    return 0.0;
  return scalarConstant(trilu.getInputs()[1]);
}

/// Why the tensor a mask Trilu keeps a triangle of does not hide scores (a value above -1e4, as
/// MaskAnalysis reads masks: finfo.min or -inf hide, 0 or +inf do not); nullopt when it does or
/// when its values are not known here (Constant, ConstantOfShape, through Expand and reshapes).
static std::optional<std::string> notHiddenFill(NodeOp trilu) {
  Value v = trilu.getInputs()[0];
  while (NodeOp n = producer(
             v, {"Expand", "Cast", "Reshape", "Unsqueeze", "Squeeze", "Flatten", "Identity"}))
    v = n.getInputs()[0];
  std::optional<double> fill;
  if (auto values = constantValues(v); values && !values->empty()) {
    fill = *std::max_element(values->begin(), values->end());
  } else if (NodeOp ofShape = producer(v, {"ConstantOfShape"})) {
    auto dense = ofShape.getOnnxAttrs().getAs<DenseElementsAttr>("value");
    if (!dense) // ConstantOfShape's default value is 0
      fill = 0.0;
    else if (dense.isSplat() && llvm::isa<FloatType>(dense.getElementType()))
      fill = dense.getSplatValue<APFloat>().convertToDouble();
  }
  if (!fill || *fill <= -1e4)
    return std::nullopt;
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", *fill);
  return std::string("keeps a triangle of ") + buf +
         ", which hides no key (a mask adds -inf or finfo.min)";
}

/// `v` is Unsqueeze(Range(0, n, 1), axes = [axis]).
static bool positionsAlong(Value v, int64_t axis) {
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

/// The projection's Reshape to [b, s, heads, head_dim] agrees with (heads, headDim), where the
/// shape is known (statically typed result, or constant trailing entries of its shape Concat;
/// heads may be -1, as in `view(b, s, -1, head_dim)`).
bool ComponentMatcher::checkHeadsInReshape(Value projOut, int64_t heads, int64_t headDim) {
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

/// The `count` values of `values` (a constant of static `shape`) along an axis of that size, if
/// the constant is the same along every other axis: a [count] vector broadcast, e.g. inv_freq
/// expanded to [batch, count, 1] by `inv_freq[None, :, None].expand(position_ids.shape[0], -1, 1)`
/// and folded at the compiled batch.
static std::optional<SmallVector<double>> broadcastVector(ArrayRef<double> values,
                                                          ArrayRef<int64_t> shape, int64_t count) {
  if (static_cast<int64_t>(values.size()) == count)
    return SmallVector<double>(values.begin(), values.end());
  int64_t stride = 1;
  for (size_t a = shape.size(); a-- > 0; stride *= shape[a]) {
    if (shape[a] != count)
      continue;
    bool same = true;
    for (size_t k = 0; same && k < values.size(); ++k)
      same = values[k] == values[((k / stride) % count) * stride];
    if (same) {
      SmallVector<double> out;
      for (int64_t i = 0; i < count; ++i)
        out.push_back(values[i * stride]);
      return out;
    }
  }
  return std::nullopt;
}

/// A float constant with `count` values upstream of the RoPE angles (or such a vector
/// broadcast along other axes).
std::optional<SmallVector<double>> ComponentMatcher::findInverseFrequencies(Value angles,
                                                                            int64_t count) {
  llvm::DenseSet<Value> seen;
  std::deque<Value> work{angles};
  for (int budget = 256; !work.empty() && budget-- > 0;) {
    Value v = work.front();
    work.pop_front();
    if (!seen.insert(v).second)
      continue;
    if (auto values = constantValues(v))
      if (auto vector = broadcastVector(*values, staticShape(v), count))
        return vector;
    if (Operation *def = v.getDefiningOp())
      for (Value operand : def->getOperands())
        work.push_back(operand);
  }
  return std::nullopt;
}

/// An additive causal mask: -inf strictly above the diagonal of [query, key], built either as
/// Trilu(upper = 1) of a -inf tensor, or as Where(key > query, -inf, 0) with key and query the
/// positions Range(0, seq) unsqueezed along axes 0 and 1 (exports before opset 14 lack Trilu).
bool ComponentMatcher::isCausalMask(Value mask) {
  if (findUpstream(mask, "Trilu", 16)) {
    for (NodeOp trilu : trilusOf(mask)) {
      auto upper = trilu.getOnnxAttrs().getAs<IntegerAttr>("upper");
      if (upper && upper.getInt() != 1)
        continue;
      // triu(full(-inf), diagonal = 1): -inf on the keys j >= i + 1 only. Another diagonal hides
      // the query's own key (k = 0) or lets it see later keys (k >= 2); another fill hides none.
      auto k = triluOffset(trilu);
      if (!k || *k != 1) {
        fail(trilu, "attention: the causal Trilu(upper = 1) must hide the keys after the query "
                    "(k = 1), not " +
                        (k ? "k = " + std::to_string(static_cast<int64_t>(*k))
                           : std::string("a non-constant k")));
        return false;
      }
      if (auto why = notHiddenFill(trilu)) {
        fail(trilu, "attention: the causal Trilu " + *why);
        return false;
      }
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

/// The sliding window w of a causal mask that also adds Trilu(-inf, k = -w, upper = 0) (keys
/// j <= i - w hidden, HF's sliding_window_overlay); 0 for a plain causal mask.
int64_t ComponentMatcher::slidingWindowOf(Value mask) {
  for (NodeOp trilu : trilusOf(mask)) {
    auto upper = trilu.getOnnxAttrs().getAs<IntegerAttr>("upper");
    if (!upper || upper.getInt() != 0 || trilu.getInputs().size() < 2)
      continue;
    auto k = scalarConstant(trilu.getInputs()[1]);
    if (auto why = notHiddenFill(trilu)) {
      fail(trilu, "attention: the sliding-window Trilu " + *why);
      return 0;
    }
    if (k && *k <= -1)
      return static_cast<int64_t>(-*k);
    fail(trilu, "attention: a lower-triangular mask whose diagonal offset is not a negative "
                "constant (sliding window)");
  }
  return 0;
}

/// Every inverse frequency equals theta^(-2i/dim) to fp32 precision (so the frequencies are plain
/// RoPE's and no scaling such as YaRN changed some of them).
bool ComponentMatcher::isPlainRope(ArrayRef<double> invFreq, int64_t dim, double theta) {
  for (size_t i = 0; i < invFreq.size(); ++i) {
    double want = std::pow(theta, -2.0 * static_cast<double>(i) / static_cast<double>(dim));
    if (std::abs(invFreq[i] - want) > 1e-5 * want)
      return false;
  }
  return true;
}

/// theta from inverse frequencies inv_freq[i] = theta^(-2i/d) (RoFormer, eq. 15), averaged over
/// i and kept to 6 significant digits (the constant is fp32).
double ComponentMatcher::thetaOf(ArrayRef<double> invFreq, int64_t dim) {
  double logTheta = 0;
  for (size_t i = 1; i < invFreq.size(); ++i)
    logTheta += -static_cast<double>(dim) / (2.0 * i) * std::log(invFreq[i]);
  double theta = std::exp(logTheta / static_cast<double>(invFreq.size() - 1));
  double magnitude = std::pow(10.0, std::floor(std::log10(theta)) - 5);
  return std::round(theta / magnitude) * magnitude;
}

/// Significant decimal digits of `x` (10000: 1, 9980.5: 5), up to 17.
static int significantDigits(double x) {
  for (int digits = 1; digits < 17; ++digits) {
    const double step = std::pow(10.0, std::floor(std::log10(std::abs(x))) - digits + 1);
    if (std::abs(std::round(x / step) * step - x) <= 1e-12 * std::abs(x))
      return digits;
  }
  return 17;
}

std::optional<double> ComponentMatcher::ropeTheta(ArrayRef<double> invFreq, int64_t dim) {
  // A non-positive frequency has no theta (its log is NaN, which every tolerance test passes).
  if (llvm::any_of(invFreq, [](double f) { return !(f > 0.0) || !std::isfinite(f); }))
    return std::nullopt;
  const double theta = thetaOf(invFreq, dim);
  const bool plain = isPlainRope(invFreq, dim, theta);
  std::optional<double> rounded = roundedRopeTheta(invFreq, dim);
  // Both readings fit where few frequencies leave theta loose (head_dim 4: one free value): the
  // theta with fewer digits wins (a config's rope_theta), the fp32 reading on a tie.
  if (rounded && (!plain || significantDigits(*rounded) < significantDigits(theta)))
    return rounded;
  return plain ? std::optional<double>(theta) : std::nullopt;
}

/// `v` rounded to `sem` (round to nearest even, as torch's .to(dtype)), as a double.
static double roundedTo(double v, const llvm::fltSemantics &sem) {
  APFloat f(v);
  bool inexact = false;
  (void)f.convert(sem, APFloat::rmNearestTiesToEven, &inexact);
  (void)f.convert(APFloat::IEEEdouble(), APFloat::rmNearestTiesToEven, &inexact);
  return f.convertToDouble();
}

/// A float16 / bfloat16 model (model.to(dtype)) rounds the inv_freq buffer too: transformers'
/// rotary embedding then computes angles from inv_freq.float(), so the export's constant holds
/// theta^(-2i/d) rounded to the dtype. The theta is found from the interval each rounded value
/// allows (the reals that round to it lie within half an ulp on either side), as the number with
/// the fewest significant digits in their intersection, and accepted only if rounding its
/// frequencies gives every value back exactly. The plan's RoPE computes the frequencies from theta
/// in fp32 (not rounded): what PyTorch computes for the model in float32.
std::optional<double> ComponentMatcher::roundedRopeTheta(ArrayRef<double> invFreq, int64_t dim) {
  if (invFreq.size() < 2 || invFreq[0] != 1.0 || dim <= 0)
    return std::nullopt;
  for (const llvm::fltSemantics *sem : {&APFloat::BFloat(), &APFloat::IEEEhalf()}) {
    double logLo = -INFINITY, logHi = INFINITY; // the interval of log theta
    bool representable = true;
    for (size_t i = 1; representable && i < invFreq.size(); ++i) {
      const double v = invFreq[i];
      representable = v > 0 && roundedTo(v, *sem) == v;
      if (!representable)
        break;
      APFloat up(v), down(v);
      bool inexact = false;
      (void)up.convert(*sem, APFloat::rmNearestTiesToEven, &inexact);
      (void)down.convert(*sem, APFloat::rmNearestTiesToEven, &inexact);
      (void)up.next(/*nextDown=*/false);
      (void)down.next(/*nextDown=*/true);
      (void)up.convert(APFloat::IEEEdouble(), APFloat::rmNearestTiesToEven, &inexact);
      (void)down.convert(APFloat::IEEEdouble(), APFloat::rmNearestTiesToEven, &inexact);
      const double lo = (v + down.convertToDouble()) / 2, hi = (v + up.convertToDouble()) / 2;
      // theta^(-2i/d) in [lo, hi]  <=>  log theta in [-d/(2i) log hi, -d/(2i) log lo].
      const double k = static_cast<double>(dim) / (2.0 * static_cast<double>(i));
      logLo = std::max(logLo, -k * std::log(hi));
      logHi = std::min(logHi, lo > 0 ? -k * std::log(lo) : INFINITY);
    }
    if (!representable || !(logLo <= logHi) || !std::isfinite(logLo))
      continue;
    const double thetaLo = std::exp(logLo), thetaHi = std::exp(logHi);
    for (int digits = 1; digits <= 7; ++digits) {
      const double step = std::pow(10.0, std::floor(std::log10(thetaLo)) - digits + 1);
      const double theta = std::ceil(thetaLo / step) * step;
      if (theta > thetaHi)
        continue;
      bool exact = true;
      for (size_t i = 0; exact && i < invFreq.size(); ++i)
        exact = roundedTo(std::pow(theta, -2.0 * static_cast<double>(i) / static_cast<double>(dim)),
                          *sem) == invFreq[i];
      if (exact)
        return theta;
    }
  }
  return std::nullopt;
}

/// The nodes between the scores' operand `side` and the projection MatMul(x, W) it comes from
/// (not past it), breadth-first.
static SmallVector<NodeOp> nodesAboveUntilProjection(Value side) {
  SmallVector<NodeOp> out;
  llvm::DenseSet<Operation *> seen;
  std::deque<Value> work{side};
  for (int budget = 512; !work.empty() && budget-- > 0;) {
    NodeOp node = producer(work.front());
    work.pop_front();
    if (!node || !seen.insert(node).second ||
        (node.getOpType() == "MatMul" && weightOf(node.getInputs()[1])))
      continue;
    out.push_back(node);
    for (Value in : node.getInputs())
      work.push_back(in);
  }
  return out;
}

std::optional<std::string> ComponentMatcher::rotateHalfMismatch(Value side, int64_t rotaryDim) {
  SmallVector<NodeOp> nodes = nodesAboveUntilProjection(side);
  auto has = [&](StringRef op) {
    return llvm::any_of(nodes, [&](NodeOp n) { return n.getOpType() == op; });
  };
  // rotate_half(x) = Concat(-x[..., d/2:], x[..., :d/2]) (HF, RoFormer eq. 34), or the halves'
  // products subtracted, x1 cos - x2 sin (GPT-OSS): without a Neg or a Sub there is no rotation.
  if (!has("Neg") && !has("Sub"))
    return std::string("no rotate-half sign (a Neg of the second half, or a Sub of the rotated "
                       "products) between the projection and the scores");
  // Where the halves are Slices with constant bounds on the last axis, they must meet at d/2.
  const int64_t half = rotaryDim / 2;
  for (NodeOp neg : nodes) {
    if (neg.getOpType() != "Neg")
      continue;
    NodeOp slice = producer(neg.getInputs()[0], {"Slice"});
    if (!slice || slice.getInputs().size() < 3)
      continue;
    auto starts = constantValues(slice.getInputs()[1]);
    if (starts && starts->size() == 1 && (*starts)[0] != static_cast<double>(half))
      return "rotate_half negates from index " +
             std::to_string(static_cast<int64_t>((*starts)[0])) +
             ", not from the middle of the rotary dims (" + std::to_string(half) + ")";
  }
  for (NodeOp slice : nodes) {
    if (slice.getOpType() != "Slice" || slice.getInputs().size() < 3)
      continue;
    auto starts = constantValues(slice.getInputs()[1]), ends = constantValues(slice.getInputs()[2]);
    if (!starts || !ends || starts->size() != 1 || ends->size() != 1)
      continue;
    const double lo = (*starts)[0], hi = (*ends)[0];
    bool firstHalf = lo == 0 && hi < static_cast<double>(rotaryDim);
    if (firstHalf && hi != static_cast<double>(half))
      return "rotate_half's first half ends at " + std::to_string(static_cast<int64_t>(hi)) +
             ", not at the middle of the rotary dims (" + std::to_string(half) + ")";
  }
  return std::nullopt;
}

std::optional<std::string> ComponentMatcher::ropePairsMismatch(Value side, int64_t rotaryDim,
                                                               RopePairs &pairs) {
  pairs = RopePairs();
  const SmallVector<NodeOp> nodes = nodesAboveUntilProjection(side);
  auto above = [](NodeOp node, StringRef op) {
    return llvm::any_of(nodesAboveUntilProjection(node.getInputs()[0]),
                        [&](NodeOp n) { return n.getOpType() == op; });
  };
  const int64_t half = rotaryDim / 2;
  NodeOp deinterleave;
  for (NodeOp node : nodes) {
    if (node.getOpType() != "Transpose")
      continue;
    auto perm = node.getOnnxAttrs().getAs<ArrayAttr>("perm");
    if (!perm || perm.size() != 5)
      continue; // the heads' [b, s, h, d] <-> [b, h, s, d] transposes
    auto p = llvm::to_vector(
        llvm::map_range(perm, [](Attribute a) { return llvm::cast<IntegerAttr>(a).getInt(); }));
    SmallVector<int64_t> in = staticShape(node.getInputs()[0]);
    // Before the rotation (no Cos/Sin above): [.., d/2, 2] -> [.., 2, d/2], the de-interleave;
    // after it: [.., 2, d/2] -> [.., d/2, 2], its inverse.
    const bool rotated = above(node, "Cos") || above(node, "Sin");
    const bool swapsLast = p == SmallVector<int64_t>{0, 1, 2, 4, 3} && in.size() == 5;
    const bool shapeFits =
        swapsLast && (rotated ? in[3] == 2 && in[4] == half : in[3] == half && in[4] == 2);
    if (!shapeFits)
      return "node '" + node.getNodeName().str() + "' permutes the rotary dims " +
             (rotated ? "after" : "before") + " RoPE otherwise than GPT-J's " +
             (rotated ? "interleave ([.., 2, " + std::to_string(half) + "]"
                      : "de-interleave ([.., " + std::to_string(half) + ", 2]") +
             " with perm [0, 1, 2, 4, 3])";
    if (rotated) {
      ++pairs.inverses;
      continue;
    }
    if (deinterleave)
      return "nodes '" + deinterleave.getNodeName().str() + "' and '" + node.getNodeName().str() +
             "' both de-interleave the rotary dims";
    deinterleave = node;
  }
  if (!deinterleave)
    return std::nullopt;
  // moe.attention applies the q/k RMSNorm weight in the projection's layout, then de-interleaves.
  const bool normAbove = above(deinterleave, "ReduceMean");
  const bool normAnywhere =
      llvm::any_of(nodes, [](NodeOp n) { return n.getOpType() == "ReduceMean"; });
  if (normAnywhere && !normAbove)
    return "node '" + deinterleave.getNodeName().str() +
           "' de-interleaves the head dims before the q/k RMSNorm (its weight would act on the "
           "permuted dims)";
  pairs.interleaved = true;
  return std::nullopt;
}

std::optional<double> ComponentMatcher::trigScale(NodeOp trig) {
  Value v = trig.getOutputs()[0];
  for (int steps = 0; steps < 8; ++steps) {
    if (!v.hasOneUse())
      return v.use_empty() ? std::optional<double>() : std::optional<double>(1.0);
    auto user = llvm::dyn_cast<NodeOp>(*v.getUsers().begin());
    if (!user || user.getOutputs().size() != 1)
      return 1.0;
    StringRef op = user.getOpType();
    if (op == "Mul") {
      for (Value in : user.getInputs())
        if (in != v)
          if (auto c = constantValues(in); c && c->size() == 1)
            return (*c)[0];
      return 1.0; // the Mul with q or k itself: no factor
    }
    if (op != "Unsqueeze" && op != "Reshape" && op != "Cast" && op != "Expand" &&
        op != "Identity" && op != "Squeeze")
      return 1.0;
    v = user.getOutputs()[0];
  }
  return 1.0;
}

bool ComponentMatcher::isLastAxisSoftmax(NodeOp softmax) {
  auto axis = softmax.getOnnxAttrs().getAs<IntegerAttr>("axis");
  if (!axis || axis.getInt() == -1)
    return true; // opset >= 13's default is the last axis
  const int64_t rank = rankOf(softmax.getInputs()[0]);
  return rank > 0 && axis.getInt() == rank - 1;
}

} // namespace disagmoe::raise
