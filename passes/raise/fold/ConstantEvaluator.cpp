//===- ConstantEvaluator.cpp - ONNX nodes evaluated on constant inputs ----===//
#include "passes/raise/fold/ConstantEvaluator.h"

#include "mlir/IR/BuiltinAttributeInterfaces.h"
#include "llvm/ADT/APFloat.h"
#include "llvm/ADT/StringSwitch.h"

#include <algorithm>
#include <cmath>
#include <functional>

using namespace mlir;

namespace disagmoe::fold {

using Kind = HostTensor::Kind;

int64_t HostTensor::numel() const {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

std::optional<Kind> kindOf(Type elementType) {
  if (llvm::isa<FloatType>(elementType))
    return Kind::Float;
  if (auto integer = llvm::dyn_cast<IntegerType>(elementType))
    return integer.getWidth() == 1 ? Kind::Bool : Kind::Int;
  return std::nullopt;
}

std::optional<HostTensor> fromAttr(ElementsAttr attr, int64_t maxElements) {
  auto dense = llvm::dyn_cast_or_null<DenseElementsAttr>(attr);
  if (!dense)
    return std::nullopt;
  auto type = llvm::cast<ShapedType>(dense.getType());
  auto kind = kindOf(type.getElementType());
  if (!kind || !type.hasStaticShape() || type.getNumElements() > maxElements)
    return std::nullopt;
  HostTensor t;
  t.kind = *kind;
  t.shape.assign(type.getShape().begin(), type.getShape().end());
  const auto n = static_cast<size_t>(type.getNumElements());
  if (*kind == Kind::Float) {
    if (dense.isSplat()) {
      t.f.assign(n, dense.getSplatValue<APFloat>().convertToDouble());
    } else {
      t.f.reserve(n);
      for (const APFloat &v : dense.getValues<APFloat>()) {
        bool lost = false;
        APFloat d = v;
        d.convert(APFloat::IEEEdouble(), APFloat::rmNearestTiesToEven, &lost);
        t.f.push_back(d.convertToDouble());
      }
    }
  } else {
    const bool isBool = *kind == Kind::Bool;
    auto value = [&](const APInt &v) {
      return isBool ? static_cast<int64_t>(!v.isZero()) : v.getSExtValue();
    };
    if (dense.isSplat()) {
      t.i.assign(n, value(dense.getSplatValue<APInt>()));
    } else {
      t.i.reserve(n);
      for (const APInt &v : dense.getValues<APInt>())
        t.i.push_back(value(v));
    }
  }
  return t;
}

namespace {

APFloat roundTo(double v, FloatType type) {
  APFloat x(v);
  bool lost = false;
  x.convert(type.getFloatSemantics(), APFloat::rmNearestTiesToEven, &lost);
  return x;
}

bool allEqual(const HostTensor &t) {
  if (t.kind == Kind::Float)
    return std::all_of(t.f.begin(), t.f.end(), [&](double v) {
      return v == t.f.front() && std::signbit(v) == std::signbit(t.f.front());
    });
  return std::all_of(t.i.begin(), t.i.end(), [&](int64_t v) { return v == t.i.front(); });
}

} // namespace

DenseElementsAttr toAttr(const HostTensor &t, RankedTensorType type) {
  Type elem = type.getElementType();
  const bool splat = t.numel() > 0 && allEqual(t);
  if (auto floatType = llvm::dyn_cast<FloatType>(elem)) {
    if (splat)
      return DenseElementsAttr::get(type, roundTo(t.f.front(), floatType));
    if (floatType.isF32()) {
      std::vector<float> values(t.f.begin(), t.f.end()); // one rounding to nearest, as roundTo
      return DenseElementsAttr::get(type, llvm::ArrayRef<float>(values));
    }
    std::vector<APFloat> values;
    values.reserve(t.f.size());
    for (double v : t.f)
      values.push_back(roundTo(v, floatType));
    return DenseElementsAttr::get(type, values);
  }
  auto intType = llvm::cast<IntegerType>(elem);
  const unsigned width = intType.getWidth();
  if (width == 1) {
    if (splat)
      return DenseElementsAttr::get(type, t.i.front() != 0);
    llvm::SmallVector<bool> values;
    for (int64_t v : t.i)
      values.push_back(v != 0);
    return DenseElementsAttr::get(type, llvm::ArrayRef<bool>(values));
  }
  if (splat)
    return DenseElementsAttr::get(type, APInt(width, static_cast<uint64_t>(t.i.front()), true));
  std::vector<APInt> values;
  values.reserve(t.i.size());
  for (int64_t v : t.i)
    values.push_back(APInt(width, static_cast<uint64_t>(v), true));
  return DenseElementsAttr::get(type, values);
}

bool isFoldable(StringRef op) {
  return llvm::StringSwitch<bool>(op)
      .Cases("Add", "Sub", "Mul", "Div", "Pow", "Min", "Max", true)
      .Cases("Equal", "Less", "LessOrEqual", "Greater", "GreaterOrEqual", true)
      .Cases("And", "Or", "Xor", "Not", "Where", true)
      .Cases("Neg", "Abs", "Sqrt", "Reciprocal", "Floor", "Ceil", true)
      .Cases("Cast", "Identity", "Reshape", "Unsqueeze", "Squeeze", "Flatten", true)
      .Cases("Expand", "Transpose", "Concat", "Slice", "Gather", true)
      .Cases("Range", "ConstantOfShape", "Trilu", "Shape", "ReduceSum", true)
      .Default(false);
}

namespace {

/// Row-major strides of `shape`.
llvm::SmallVector<int64_t> stridesOf(llvm::ArrayRef<int64_t> shape) {
  llvm::SmallVector<int64_t> s(shape.size(), 1);
  for (int64_t d = static_cast<int64_t>(shape.size()) - 2; d >= 0; --d)
    s[d] = s[d + 1] * shape[d + 1];
  return s;
}

/// For each element of `out` (row-major), the index of the element of `in` that numpy-style
/// broadcasting reads; empty if `in` does not broadcast to `out`.
std::optional<std::vector<int64_t>> broadcastIndices(llvm::ArrayRef<int64_t> in,
                                                     llvm::ArrayRef<int64_t> out) {
  if (in.size() > out.size())
    return std::nullopt;
  const size_t lead = out.size() - in.size();
  llvm::SmallVector<int64_t> inStrides = stridesOf(in), step(out.size(), 0);
  for (size_t d = 0; d < in.size(); ++d) {
    if (in[d] != out[lead + d] && in[d] != 1)
      return std::nullopt;
    step[lead + d] = in[d] == 1 ? 0 : inStrides[d];
  }
  int64_t n = 1;
  for (int64_t d : out)
    n *= d;
  std::vector<int64_t> idx(static_cast<size_t>(n));
  llvm::SmallVector<int64_t> pos(out.size(), 0);
  int64_t at = 0;
  for (int64_t k = 0; k < n; ++k) {
    idx[static_cast<size_t>(k)] = at;
    for (int64_t d = static_cast<int64_t>(out.size()) - 1; d >= 0; --d) {
      at += step[d];
      if (++pos[d] < out[d])
        break;
      at -= step[d] * out[d];
      pos[d] = 0;
    }
  }
  return idx;
}

HostTensor empty(Kind kind, llvm::ArrayRef<int64_t> shape) {
  HostTensor t;
  t.kind = kind;
  t.shape.assign(shape.begin(), shape.end());
  (kind == Kind::Float ? t.f.resize(t.numel()) : t.i.resize(t.numel()));
  return t;
}

void set(HostTensor &t, int64_t k, double real, int64_t integer) {
  if (t.kind == Kind::Float)
    t.f[k] = real;
  else if (t.kind == Kind::Bool)
    t.i[k] = integer != 0;
  else
    t.i[k] = integer;
}

/// Copies element `from` of `src` to element `to` of `dst` (same kind).
void copyElement(const HostTensor &src, int64_t from, HostTensor &dst, int64_t to) {
  if (src.kind == Kind::Float)
    dst.f[to] = src.f[from];
  else
    dst.i[to] = src.i[from];
}

/// `t` with its element kind converted to `kind` (Cast; float -> int truncates toward zero, as
/// ONNX's Cast and C++ do; any nonzero -> true).
HostTensor convert(const HostTensor &t, Kind kind) {
  HostTensor out = empty(kind, t.shape);
  for (int64_t k = 0; k < t.numel(); ++k) {
    if (kind == Kind::Float)
      out.f[k] = t.real(k);
    else if (kind == Kind::Bool)
      out.i[k] = t.kind == Kind::Float ? t.f[k] != 0 : t.i[k] != 0;
    else
      out.i[k] = t.kind == Kind::Float ? static_cast<int64_t>(std::trunc(t.f[k])) : t.i[k];
  }
  return out;
}

std::optional<int64_t> intAttr(onnxir::NodeOp node, StringRef name) {
  if (auto a = node.getOnnxAttrs().getAs<IntegerAttr>(name))
    return a.getInt();
  return std::nullopt;
}

std::optional<llvm::SmallVector<int64_t>> intsAttr(onnxir::NodeOp node, StringRef name) {
  auto a = node.getOnnxAttrs().getAs<ArrayAttr>(name);
  if (!a)
    return std::nullopt;
  llvm::SmallVector<int64_t> out;
  for (Attribute x : a)
    if (auto i = llvm::dyn_cast<IntegerAttr>(x))
      out.push_back(i.getInt());
    else
      return std::nullopt;
  return out;
}

/// Elementwise op over broadcast inputs; `fn` maps the operands' reals and integers of one element
/// to the result's (real, integer).
std::optional<HostTensor> elementwise(
    llvm::ArrayRef<const HostTensor *> ins, llvm::ArrayRef<int64_t> outShape, Kind outKind,
    const std::function<std::pair<double, int64_t>(llvm::ArrayRef<double>, llvm::ArrayRef<int64_t>)>
        &fn) {
  std::vector<std::vector<int64_t>> idx;
  for (const HostTensor *in : ins) {
    auto b = broadcastIndices(in->shape, outShape);
    if (!b)
      return std::nullopt;
    idx.push_back(std::move(*b));
  }
  HostTensor out = empty(outKind, outShape);
  llvm::SmallVector<double, 3> reals(ins.size());
  llvm::SmallVector<int64_t, 3> ints(ins.size());
  for (int64_t k = 0; k < out.numel(); ++k) {
    for (size_t a = 0; a < ins.size(); ++a) {
      const int64_t at = idx[a][static_cast<size_t>(k)];
      reals[a] = ins[a]->real(at);
      ints[a] = ins[a]->kind == Kind::Float ? 0 : ins[a]->i[at];
    }
    auto [real, integer] = fn(reals, ints);
    set(out, k, real, integer);
  }
  return out;
}

std::optional<HostTensor> binary(StringRef op, const HostTensor &a, const HostTensor &b,
                                 llvm::ArrayRef<int64_t> outShape, Kind outKind) {
  const bool floats = a.kind == Kind::Float;
  if (a.kind != b.kind && !(a.kind != Kind::Float && b.kind != Kind::Float))
    return std::nullopt;
  using R = std::pair<double, int64_t>;
  std::function<R(double, double, int64_t, int64_t)> f;
  auto cmp = [&](auto pred) {
    return [floats, pred](double x, double y, int64_t p, int64_t q) -> R {
      const bool r = floats ? pred(x, y) : pred(p, q);
      return {r ? 1.0 : 0.0, r ? 1 : 0};
    };
  };
  if (op == "Add")
    f = [](double x, double y, int64_t p, int64_t q) -> R { return {x + y, p + q}; };
  else if (op == "Sub")
    f = [](double x, double y, int64_t p, int64_t q) -> R { return {x - y, p - q}; };
  else if (op == "Mul")
    f = [](double x, double y, int64_t p, int64_t q) -> R { return {x * y, p * q}; };
  else if (op == "Div")
    f = [floats](double x, double y, int64_t p, int64_t q) -> R {
      if (!floats && q == 0)
        return {0, 0}; // unreachable in a valid graph; never divide by zero here
      return {x / y, floats ? 0 : p / q};
    };
  else if (op == "Pow")
    f = [](double x, double y, int64_t, int64_t) -> R {
      const double r = std::pow(x, y);
      return {r, static_cast<int64_t>(r)};
    };
  else if (op == "Min")
    f = [](double x, double y, int64_t p, int64_t q) -> R {
      return {std::min(x, y), std::min(p, q)};
    };
  else if (op == "Max")
    f = [](double x, double y, int64_t p, int64_t q) -> R {
      return {std::max(x, y), std::max(p, q)};
    };
  else if (op == "Equal")
    f = cmp([](auto x, auto y) { return x == y; });
  else if (op == "Less")
    f = cmp([](auto x, auto y) { return x < y; });
  else if (op == "LessOrEqual")
    f = cmp([](auto x, auto y) { return x <= y; });
  else if (op == "Greater")
    f = cmp([](auto x, auto y) { return x > y; });
  else if (op == "GreaterOrEqual")
    f = cmp([](auto x, auto y) { return x >= y; });
  else if (op == "And")
    f = [](double, double, int64_t p, int64_t q) -> R { return {0, (p != 0) && (q != 0)}; };
  else if (op == "Or")
    f = [](double, double, int64_t p, int64_t q) -> R { return {0, (p != 0) || (q != 0)}; };
  else if (op == "Xor")
    f = [](double, double, int64_t p, int64_t q) -> R { return {0, (p != 0) != (q != 0)}; };
  else
    return std::nullopt;
  if ((op == "And" || op == "Or" || op == "Xor") && (a.kind != Kind::Bool || b.kind != Kind::Bool))
    return std::nullopt;
  // Integer Pow goes through double: exact for the small values of shape arithmetic.
  return elementwise({&a, &b}, outShape, outKind,
                     [&](llvm::ArrayRef<double> r, llvm::ArrayRef<int64_t> i) {
                       return f(r[0], r[1], i[0], i[1]);
                     });
}

std::optional<HostTensor> unary(StringRef op, const HostTensor &x, Kind outKind) {
  using R = std::pair<double, int64_t>;
  std::function<R(double, int64_t)> f;
  if (op == "Neg")
    f = [](double v, int64_t i) -> R { return {-v, -i}; };
  else if (op == "Abs")
    f = [](double v, int64_t i) -> R { return {std::fabs(v), i < 0 ? -i : i}; };
  else if (op == "Sqrt" && x.kind == Kind::Float)
    f = [](double v, int64_t) -> R { return {std::sqrt(v), 0}; };
  else if (op == "Reciprocal" && x.kind == Kind::Float)
    f = [](double v, int64_t) -> R { return {1.0 / v, 0}; };
  else if (op == "Floor")
    f = [](double v, int64_t i) -> R { return {std::floor(v), i}; };
  else if (op == "Ceil")
    f = [](double v, int64_t i) -> R { return {std::ceil(v), i}; };
  else if (op == "Not" && x.kind == Kind::Bool)
    f = [](double, int64_t i) -> R { return {0, i == 0}; };
  else
    return std::nullopt;
  return elementwise(
      {&x}, x.shape, outKind,
      [&](llvm::ArrayRef<double> r, llvm::ArrayRef<int64_t> i) { return f(r[0], i[0]); });
}

/// Values of a 1-D integer input, or nullopt.
std::optional<llvm::SmallVector<int64_t>> ints(const HostTensor *t) {
  if (!t || t->kind == Kind::Float || t->shape.size() > 1)
    return std::nullopt;
  return llvm::SmallVector<int64_t>(t->i.begin(), t->i.end());
}

std::optional<HostTensor> transpose(onnxir::NodeOp node, const HostTensor &x,
                                    llvm::ArrayRef<int64_t> outShape) {
  const size_t rank = x.shape.size();
  llvm::SmallVector<int64_t> perm;
  if (auto p = intsAttr(node, "perm"))
    perm = *p;
  else
    for (size_t d = 0; d < rank; ++d)
      perm.push_back(static_cast<int64_t>(rank - 1 - d));
  if (perm.size() != rank)
    return std::nullopt;
  HostTensor out = empty(x.kind, outShape);
  auto inStrides = stridesOf(x.shape);
  llvm::SmallVector<int64_t> pos(rank, 0);
  for (int64_t k = 0; k < out.numel(); ++k) {
    int64_t from = 0;
    for (size_t d = 0; d < rank; ++d)
      from += pos[d] * inStrides[perm[d]];
    copyElement(x, from, out, k);
    for (int64_t d = static_cast<int64_t>(rank) - 1; d >= 0; --d) {
      if (++pos[d] < outShape[d])
        break;
      pos[d] = 0;
    }
  }
  return out;
}

std::optional<HostTensor> concat(onnxir::NodeOp node, llvm::ArrayRef<const HostTensor *> ins,
                                 llvm::ArrayRef<int64_t> outShape) {
  auto axisAttr = intAttr(node, "axis");
  if (!axisAttr || ins.empty())
    return std::nullopt;
  const int64_t rank = static_cast<int64_t>(outShape.size());
  const int64_t axis = *axisAttr < 0 ? *axisAttr + rank : *axisAttr;
  if (axis < 0 || axis >= rank)
    return std::nullopt;
  HostTensor out = empty(ins[0]->kind, outShape);
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d)
    outer *= outShape[d];
  for (int64_t d = axis + 1; d < rank; ++d)
    inner *= outShape[d];
  int64_t offset = 0; // along the axis
  for (const HostTensor *in : ins) {
    if (in->kind != out.kind || static_cast<int64_t>(in->shape.size()) != rank)
      return std::nullopt;
    const int64_t len = in->shape[axis];
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t a = 0; a < len; ++a)
        for (int64_t i = 0; i < inner; ++i)
          copyElement(*in, (o * len + a) * inner + i, out,
                      (o * outShape[axis] + offset + a) * inner + i);
    offset += len;
  }
  return offset == outShape[axis] ? std::optional<HostTensor>(std::move(out)) : std::nullopt;
}

std::optional<HostTensor> slice(llvm::ArrayRef<const HostTensor *> ins,
                                llvm::ArrayRef<int64_t> outShape) {
  if (ins.size() < 3)
    return std::nullopt;
  const HostTensor &x = *ins[0];
  auto starts = ints(ins[1]), ends = ints(ins[2]);
  if (!starts || !ends || starts->size() != ends->size())
    return std::nullopt;
  const int64_t rank = static_cast<int64_t>(x.shape.size());
  llvm::SmallVector<int64_t> axes, steps(starts->size(), 1);
  if (ins.size() > 3 && ins[3]) {
    auto a = ints(ins[3]);
    if (!a || a->size() != starts->size())
      return std::nullopt;
    axes = *a;
  } else {
    for (size_t d = 0; d < starts->size(); ++d)
      axes.push_back(static_cast<int64_t>(d));
  }
  if (ins.size() > 4 && ins[4]) {
    auto s = ints(ins[4]);
    if (!s || s->size() != starts->size())
      return std::nullopt;
    steps = *s;
  }
  llvm::SmallVector<int64_t> first(rank, 0), step(rank, 1);
  for (size_t k = 0; k < axes.size(); ++k) {
    const int64_t axis = axes[k] < 0 ? axes[k] + rank : axes[k];
    if (axis < 0 || axis >= rank || steps[k] == 0)
      return std::nullopt;
    const int64_t dim = x.shape[axis];
    int64_t s = (*starts)[k];
    s = s < 0 ? s + dim : s;
    s = steps[k] > 0 ? std::clamp<int64_t>(s, 0, dim) : std::clamp<int64_t>(s, 0, dim - 1);
    first[axis] = s;
    step[axis] = steps[k];
  }
  HostTensor out = empty(x.kind, outShape);
  auto inStrides = stridesOf(x.shape);
  llvm::SmallVector<int64_t> pos(rank, 0);
  for (int64_t k = 0; k < out.numel(); ++k) {
    int64_t from = 0;
    for (int64_t d = 0; d < rank; ++d) {
      const int64_t at = first[d] + pos[d] * step[d];
      if (at < 0 || at >= x.shape[d])
        return std::nullopt; // the result type disagrees with the slice
      from += at * inStrides[d];
    }
    copyElement(x, from, out, k);
    for (int64_t d = rank - 1; d >= 0; --d) {
      if (++pos[d] < outShape[d])
        break;
      pos[d] = 0;
    }
  }
  return out;
}

std::optional<HostTensor> gather(onnxir::NodeOp node, const HostTensor &x,
                                 const HostTensor &indices, llvm::ArrayRef<int64_t> outShape) {
  if (indices.kind == Kind::Float)
    return std::nullopt;
  const int64_t rank = static_cast<int64_t>(x.shape.size());
  int64_t axis = intAttr(node, "axis").value_or(0);
  axis = axis < 0 ? axis + rank : axis;
  if (axis < 0 || axis >= rank)
    return std::nullopt;
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d)
    outer *= x.shape[d];
  for (int64_t d = axis + 1; d < rank; ++d)
    inner *= x.shape[d];
  const int64_t dim = x.shape[axis], count = indices.numel();
  HostTensor out = empty(x.kind, outShape);
  if (out.numel() != outer * count * inner)
    return std::nullopt;
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t c = 0; c < count; ++c) {
      int64_t at = indices.i[c] < 0 ? indices.i[c] + dim : indices.i[c];
      if (at < 0 || at >= dim)
        return std::nullopt;
      for (int64_t i = 0; i < inner; ++i)
        copyElement(x, (o * dim + at) * inner + i, out, (o * count + c) * inner + i);
    }
  return out;
}

std::optional<HostTensor> range(const HostTensor &start, const HostTensor &limit,
                                const HostTensor &delta, llvm::ArrayRef<int64_t> outShape,
                                Kind outKind) {
  if (start.numel() != 1 || limit.numel() != 1 || delta.numel() != 1 || outShape.size() != 1)
    return std::nullopt;
  HostTensor out = empty(outKind, outShape);
  for (int64_t k = 0; k < out.numel(); ++k) {
    if (outKind == Kind::Float)
      out.f[k] = start.real(0) + static_cast<double>(k) * delta.real(0);
    else
      out.i[k] = start.i[0] + k * delta.i[0];
  }
  // The count must be ONNX's max(ceil((limit - start) / delta), 0).
  const double n = std::max(std::ceil((limit.real(0) - start.real(0)) / delta.real(0)), 0.0);
  return static_cast<int64_t>(n) == out.numel() ? std::optional<HostTensor>(std::move(out))
                                                : std::nullopt;
}

std::optional<HostTensor> trilu(onnxir::NodeOp node, llvm::ArrayRef<const HostTensor *> ins) {
  const HostTensor &x = *ins[0];
  if (x.shape.size() < 2)
    return std::nullopt;
  int64_t k = 0;
  if (ins.size() > 1 && ins[1]) {
    if (ins[1]->kind == Kind::Float || ins[1]->numel() != 1)
      return std::nullopt;
    k = ins[1]->i[0];
  }
  const bool upper = intAttr(node, "upper").value_or(1) != 0;
  HostTensor out = x;
  const int64_t rows = x.shape[x.shape.size() - 2], cols = x.shape.back();
  for (int64_t e = 0; e < x.numel(); ++e) {
    const int64_t r = (e / cols) % rows, c = e % cols;
    // upper keeps j - i >= k; lower keeps j - i <= k
    if (upper ? c - r < k : c - r > k)
      set(out, e, 0.0, 0);
  }
  return out;
}

/// ReduceSum of integers, exact in int64 (onnxruntime-genai computes seqlens_k as
/// ReduceSum(attention_mask, axis 1) - 1). Axes from the attribute (opsets < 13) or the second
/// input (13+); keepdims (default 1) and noop_with_empty_axes (default 0) as ONNX defines them.
/// Float sums are not folded: their rounding depends on a summation order ONNX leaves open.
std::optional<HostTensor> reduceSum(onnxir::NodeOp node, llvm::ArrayRef<const HostTensor *> ins,
                                    llvm::ArrayRef<int64_t> outShape) {
  const HostTensor &x = *ins[0];
  if (x.kind != Kind::Int)
    return std::nullopt;
  const int64_t rank = static_cast<int64_t>(x.shape.size());
  llvm::SmallVector<int64_t> axes;
  if (auto a = intsAttr(node, "axes")) {
    axes = *a;
  } else if (ins.size() > 1) {
    auto a = ints(ins[1]);
    if (!a)
      return std::nullopt;
    axes = *a;
  }
  llvm::SmallVector<bool> reduced(rank, axes.empty() && !intAttr(node, "noop_with_empty_axes"));
  for (int64_t a : axes) {
    const int64_t axis = a < 0 ? a + rank : a;
    if (axis < 0 || axis >= rank)
      return std::nullopt;
    reduced[axis] = true;
  }
  const bool keep = intAttr(node, "keepdims").value_or(1) != 0;
  llvm::SmallVector<int64_t> kept; // the output's shape with every reduced axis kept as 1
  int64_t count = 1;
  for (int64_t d = 0; d < rank; ++d) {
    kept.push_back(reduced[d] ? 1 : x.shape[d]);
    if (keep || !reduced[d])
      count *= kept.back();
  }
  HostTensor out = empty(Kind::Int, outShape);
  if (out.numel() != count || (keep && static_cast<int64_t>(outShape.size()) != rank))
    return std::nullopt;
  std::fill(out.i.begin(), out.i.end(), 0);
  auto outStrides = stridesOf(kept);
  llvm::SmallVector<int64_t> pos(rank, 0);
  for (int64_t k = 0; k < x.numel(); ++k) {
    int64_t to = 0;
    for (int64_t d = 0; d < rank; ++d)
      to += (reduced[d] ? 0 : pos[d]) * outStrides[d];
    out.i[to] += x.i[k];
    for (int64_t d = rank - 1; d >= 0; --d) {
      if (++pos[d] < x.shape[d])
        break;
      pos[d] = 0;
    }
  }
  return out;
}

} // namespace

std::optional<HostTensor> evaluate(onnxir::NodeOp node, llvm::ArrayRef<const HostTensor *> ins,
                                   int64_t maxElements) {
  const StringRef op = node.getOpType();
  if (!node.getDomain().empty() || node.getOutputs().size() != 1 || !isFoldable(op))
    return std::nullopt;
  auto type = llvm::dyn_cast<RankedTensorType>(node.getOutputs()[0].getType());
  if (!type || !type.hasStaticShape() || type.getNumElements() > maxElements)
    return std::nullopt;
  auto outKind = kindOf(type.getElementType());
  if (!outKind)
    return std::nullopt;
  const llvm::SmallVector<int64_t> outShape(type.getShape());

  if (op == "Shape") { // needs only the static type of its input
    auto in = llvm::dyn_cast<RankedTensorType>(node.getInputs()[0].getType());
    if (!in || !in.hasStaticShape() || *outKind != Kind::Int)
      return std::nullopt;
    const int64_t rank = in.getRank();
    int64_t start = intAttr(node, "start").value_or(0), end = intAttr(node, "end").value_or(rank);
    start = std::clamp<int64_t>(start < 0 ? start + rank : start, 0, rank);
    end = std::clamp<int64_t>(end < 0 ? end + rank : end, 0, rank);
    HostTensor out = empty(Kind::Int, outShape);
    if (out.numel() != std::max<int64_t>(end - start, 0))
      return std::nullopt;
    for (int64_t d = start; d < end; ++d)
      out.i[d - start] = in.getDimSize(d);
    return out;
  }
  if (op == "ConstantOfShape") {
    HostTensor out = empty(*outKind, outShape);
    if (auto value = node.getOnnxAttrs().getAs<ElementsAttr>("value")) {
      auto v = fromAttr(value, 1);
      if (!v || v->numel() != 1)
        return std::nullopt;
      for (int64_t k = 0; k < out.numel(); ++k)
        set(out, k, v->real(0), v->kind == Kind::Float ? static_cast<int64_t>(v->f[0]) : v->i[0]);
    }
    return out;
  }
  // Every other op needs the values of its (present) inputs.
  for (const HostTensor *in : ins)
    if (!in)
      return std::nullopt;
  if (ins.empty())
    return std::nullopt;
  if (op == "Identity" || op == "Reshape" || op == "Unsqueeze" || op == "Squeeze" ||
      op == "Flatten") {
    HostTensor out = *ins[0]; // values in row-major order; the result type gives the shape
    if (out.numel() != type.getNumElements() || out.kind != *outKind)
      return std::nullopt;
    out.shape = outShape;
    return out;
  }
  if (op == "Cast") {
    HostTensor out = convert(*ins[0], *outKind);
    if (out.numel() != type.getNumElements())
      return std::nullopt;
    out.shape = outShape;
    return out;
  }
  if (op == "Expand")
    return elementwise({ins[0]}, outShape, *outKind,
                       [](llvm::ArrayRef<double> r, llvm::ArrayRef<int64_t> i) {
                         return std::pair<double, int64_t>{r[0], i[0]};
                       });
  if (op == "Where") {
    if (ins.size() != 3 || ins[0]->kind != Kind::Bool || ins[1]->kind != ins[2]->kind)
      return std::nullopt;
    return elementwise(ins, outShape, *outKind,
                       [](llvm::ArrayRef<double> r, llvm::ArrayRef<int64_t> i) {
                         return i[0] ? std::pair<double, int64_t>{r[1], i[1]}
                                     : std::pair<double, int64_t>{r[2], i[2]};
                       });
  }
  if ((op == "Min" || op == "Max") && ins.size() > 2) {
    std::optional<HostTensor> acc = *ins[0];
    for (size_t k = 1; k < ins.size() && acc; ++k)
      acc = binary(op, *acc, *ins[k], outShape, *outKind);
    return acc;
  }
  if (op == "ReduceSum")
    return reduceSum(node, ins, outShape);
  if (ins.size() == 2 && op != "Gather" && op != "Concat" && op != "Trilu" && op != "Expand")
    if (auto r = binary(op, *ins[0], *ins[1], outShape, *outKind))
      return r;
  if (ins.size() == 1 && op != "Concat" && op != "Transpose" && op != "Trilu")
    if (auto r = unary(op, *ins[0], *outKind))
      return r;
  if (op == "Transpose")
    return transpose(node, *ins[0], outShape);
  if (op == "Concat")
    return concat(node, ins, outShape);
  if (op == "Slice")
    return slice(ins, outShape);
  if (op == "Gather" && ins.size() == 2)
    return gather(node, *ins[0], *ins[1], outShape);
  if (op == "Range" && ins.size() == 3)
    return range(*ins[0], *ins[1], *ins[2], outShape, *outKind);
  if (op == "Trilu")
    return trilu(node, ins);
  return std::nullopt;
}

} // namespace disagmoe::fold
