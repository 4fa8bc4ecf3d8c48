//===- OnnxStaticShapes.cpp - static shapes and shape-computation values ---===//
//
// ShapeInference::Static (OnnxLoader.h): one pass over the topologically sorted nodes that types
// every output it can (element type, rank, static dims, -1 where a dim is data-dependent such as
// NonZero's count) and computes the contents of small integer and boolean tensors (Shape of a
// static value, Gather/Concat/Unsqueeze/Slice/Cast/arithmetic of such values, ...). Once the input
// dims are static, the shape computations of an export (Shape -> Gather -> Unsqueeze -> Concat ->
// Reshape) thus become known constants, and the shapes they feed static, in time linear in the
// graph, where ONNX's own inference costs tens of microseconds per node.
//
// It follows the ONNX operator specifications (opsets 13-23) for the ops of the supported decoder
// exports; outputs of any other op stay untyped, as do outputs of ops whose operands are not
// typed enough. Where a value is declared (value_info, graph outputs), declared dims win and
// only the unknown ones are filled. Nothing here fails: inconsistent operands give unknown dims.
//
//===----------------------------------------------------------------------===//
#include "frontends/onnx/OnnxLoader.h"

#include <algorithm>
#include <cstring>
#include <string_view>
#include <unordered_map>

namespace disagmoe::onnxfe {
namespace {

using Dims = std::vector<int64_t>;

/// A tensor whose contents are known: integer and boolean types only, values widened to int64.
struct Known {
  ElemType type = ElemType::Undefined;
  Dims dims;
  std::vector<int64_t> v;
};

bool trackedType(ElemType t) {
  return t == ElemType::Int64 || t == ElemType::Int32 || t == ElemType::Bool;
}

bool product(const Dims &dims, int64_t &n) {
  n = 1;
  for (int64_t d : dims)
    if (d < 0 || __builtin_mul_overflow(n, d, &n))
      return false;
  return true;
}

bool allStatic(const Dims &dims) {
  return std::all_of(dims.begin(), dims.end(), [](int64_t d) { return d >= 0; });
}

/// Known contents of a tensor's bytes (little-endian, as the loader stores them).
bool decode(const TensorData &t, Known &k) {
  if (!trackedType(t.type))
    return false;
  int64_t n;
  if (!product(t.dims, n) || n > kMaxKnownElements)
    return false;
  const int64_t esz = elemTypeSize(t.type);
  if (static_cast<int64_t>(t.bytes.size()) != n * esz)
    return false;
  k.type = t.type;
  k.dims = t.dims;
  k.v.resize(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    const char *p = t.bytes.data() + i * esz;
    if (t.type == ElemType::Int64) {
      std::memcpy(&k.v[i], p, 8);
    } else if (t.type == ElemType::Int32) {
      int32_t x;
      std::memcpy(&x, p, 4);
      k.v[i] = x;
    } else {
      k.v[i] = *p != 0;
    }
  }
  return true;
}

std::shared_ptr<TensorData> encode(const Known &k) {
  auto t = std::make_shared<TensorData>();
  t->type = k.type;
  t->dims = k.dims;
  const int64_t esz = elemTypeSize(k.type);
  t->bytes.resize(k.v.size() * static_cast<size_t>(esz));
  for (size_t i = 0; i < k.v.size(); ++i) {
    char *p = t->bytes.data() + i * esz;
    if (k.type == ElemType::Int64) {
      std::memcpy(p, &k.v[i], 8);
    } else if (k.type == ElemType::Int32) {
      int32_t x = static_cast<int32_t>(k.v[i]);
      std::memcpy(p, &x, 4);
    } else {
      *p = k.v[i] != 0;
    }
  }
  return t;
}

/// Numpy-style multidirectional broadcast of two dims lists; -1 where unknown (or inconsistent).
Dims broadcast(const Dims &a, const Dims &b) {
  const size_t rank = std::max(a.size(), b.size());
  Dims out(rank, -1);
  for (size_t i = 0; i < rank; ++i) {
    int64_t x = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    int64_t y = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (x == y)
      out[i] = x;
    else if (x == 1)
      out[i] = y;
    else if (y == 1)
      out[i] = x;
    else if (x < 0 && y > 1)
      out[i] = y;
    else if (y < 0 && x > 1)
      out[i] = x;
    else
      out[i] = -1; // unknown against 1 or unknown, or inconsistent
  }
  return out;
}

/// Flat index into `in` (dims broadcast to `out`) of output position `pos` (row-major).
int64_t broadcastIndex(const Dims &in, const Dims &out, int64_t pos) {
  int64_t idx = 0, stride = 1;
  for (size_t i = out.size(); i-- > 0;) {
    int64_t coord = pos % out[i];
    pos /= out[i];
    size_t j = i + in.size() - out.size();
    if (i >= out.size() - in.size()) {
      if (in[j] != 1)
        idx += coord * stride;
      stride *= in[j];
    }
  }
  return idx;
}

int64_t normAxis(int64_t axis, int64_t rank) { return axis < 0 ? axis + rank : axis; }

/// Largest rank taken from a shape tensor's length when its values are unknown: ONNX sets no
/// limit, the decoders we raise use at most 6, and the length is an untrusted declared dim (a
/// fuzzed file declared 1.7e18) that must not size an allocation.
constexpr int64_t kMaxRank = 64;

class Propagator {
public:
  explicit Propagator(Graph &g) : g_(g) {}

  void run() {
    known_.reserve(g_.nodes.size());
    for (const Initializer &init : g_.initializers)
      if (init.data) {
        Known k;
        if (decode(*init.data, k))
          known_.emplace(init.info.name, std::move(k));
      }
    for (const Graph::BoundInput &in : g_.boundInputs) { // attention_mask, position_ids
      Known k;
      if (decode(*in.value, k))
        known_.emplace(in.info.name, std::move(k));
    }
    for (const Node &n : g_.nodes)
      if (n.domain.empty())
        visit(n);
      else if (n.domain == "com.microsoft")
        visitContrib(n);
    for (const Node &n : g_.nodes) {
      if (n.opType == "Constant")
        continue; // already a constant
      for (const std::string &o : n.outputs) {
        auto it = o.empty() ? known_.end() : known_.find(o);
        if (it != known_.end())
          g_.knownValues.emplace(o, encode(it->second));
      }
    }
  }

private:
  Graph &g_;
  std::unordered_map<std::string_view, Known> known_;
  const Node *node_ = nullptr;
  /// The current node's inputs: their types and shapes, and their values where known (looked up
  /// once per node; elements of unordered maps stay where they are when the maps grow).
  std::vector<const ValueInfo *> ins_;
  std::vector<const Known *> knownIns_;

  // --- operand access -------------------------------------------------------------------
  size_t numInputs() const { return node_->inputs.size(); }
  bool has(size_t i) const { return i < node_->inputs.size() && !node_->inputs[i].empty(); }
  const ValueInfo *info(size_t i) const { return i < ins_.size() ? ins_[i] : nullptr; }
  ElemType typeOf(size_t i) const {
    const ValueInfo *vi = info(i);
    return vi ? vi->type : ElemType::Undefined;
  }
  /// Dims of input i, or null when its rank is unknown.
  const Dims *dimsOf(size_t i) const {
    const ValueInfo *vi = info(i);
    return vi && vi->hasShape ? &vi->dims : nullptr;
  }
  const Known *knownOf(size_t i) const { return i < knownIns_.size() ? knownIns_[i] : nullptr; }
  /// Values of a known 1-D or scalar input.
  const std::vector<int64_t> *valuesOf(size_t i) const {
    const Known *k = knownOf(i);
    return k && k->dims.size() <= 1 ? &k->v : nullptr;
  }
  const Attribute *attr(const char *name) const {
    for (const auto &[n, a] : node_->attributes)
      if (n == name)
        return &a;
    return nullptr;
  }
  int64_t intAttr(const char *name, int64_t def) const {
    const Attribute *a = attr(name);
    return a && a->kind == Attribute::Kind::Int ? a->i : def;
  }
  const std::vector<int64_t> *intsAttr(const char *name) const {
    const Attribute *a = attr(name);
    return a && a->kind == Attribute::Kind::Ints ? &a->ints : nullptr;
  }

  // --- results ----------------------------------------------------------------------------
  /// Types output i; declared information wins, unknown declared dims are filled.
  void setOut(size_t i, ElemType type, const Dims *dims) {
    if (i >= node_->outputs.size() || node_->outputs[i].empty())
      return;
    ValueInfo &vi = g_.valueInfo[node_->outputs[i]];
    if (vi.type == ElemType::Undefined)
      vi.type = type;
    if (!dims)
      return;
    if (!vi.hasShape) {
      vi.hasShape = true;
      vi.dims = *dims;
    } else if (vi.dims.size() == dims->size()) {
      for (size_t d = 0; d < dims->size(); ++d)
        if (vi.dims[d] < 0)
          vi.dims[d] = (*dims)[d];
    }
  }
  void setOut(size_t i, ElemType type, const Dims &dims) { setOut(i, type, &dims); }
  void setKnown(size_t i, Known k) {
    if (i >= node_->outputs.size() || node_->outputs[i].empty() || !trackedType(k.type) ||
        static_cast<int64_t>(k.v.size()) > kMaxKnownElements)
      return;
    setOut(i, k.type, k.dims);
    known_[node_->outputs[i]] = std::move(k);
  }
  /// Same type and shape as input `from` (and same values: `keepValues`).
  void same(size_t from, bool keepValues = false) {
    setOut(0, typeOf(from), dimsOf(from));
    if (keepValues)
      if (const Known *k = knownOf(from))
        setKnown(0, *k);
  }

  // --- the ops ------------------------------------------------------------------------------
  /// Makes `n` the current node: its inputs' types and known values.
  void bind(const Node &n) {
    node_ = &n;
    ins_.assign(n.inputs.size(), nullptr);
    knownIns_.assign(n.inputs.size(), nullptr);
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      if (n.inputs[i].empty())
        continue;
      if (auto it = g_.valueInfo.find(n.inputs[i]); it != g_.valueInfo.end())
        ins_[i] = &it->second;
      if (auto it = known_.find(n.inputs[i]); it != known_.end())
        knownIns_[i] = &it->second;
    }
  }

  void visit(const Node &n) {
    bind(n);
    const std::string &op = n.opType;
    if (op == "Constant")
      constant();
    else if (op == "Identity")
      same(0, true);
    else if (op == "Cast")
      cast();
    else if (op == "Shape")
      shape();
    else if (op == "Gather")
      gather();
    else if (op == "Concat")
      concat();
    else if (op == "Unsqueeze")
      unsqueeze();
    else if (op == "Squeeze")
      squeeze();
    else if (op == "Reshape")
      reshape();
    else if (op == "Flatten")
      flatten();
    else if (op == "Expand")
      expand();
    else if (op == "Add" || op == "Sub" || op == "Mul" || op == "Div" || op == "Pow" ||
             op == "Equal" || op == "Less" || op == "Greater" || op == "LessOrEqual" ||
             op == "GreaterOrEqual" || op == "And" || op == "Or" || op == "Xor" || op == "Min" ||
             op == "Max" || op == "Where")
      elementwise(op);
    else if (op == "Neg") {
      same(0);
      negate();
    } else if (op == "Not") { // masking_utils' ~mask
      same(0);
      logicalNot();
    } else if (op == "Cos" || op == "Sin" || op == "Sigmoid" || op == "Sqrt" || op == "Softmax" ||
               op == "Clip" || op == "Trilu" || op == "ScatterElements" || op == "Relu" ||
               op == "Tanh" || op == "Exp" || op == "Erf" || op == "Reciprocal" || op == "Abs" ||
               op == "LogSoftmax")
      same(0);
    else if (op == "MatMul")
      matmul();
    else if (op == "Gemm")
      gemm();
    else if (op == "NonZero")
      setOut(0, ElemType::Int64,
             dimsOf(0) ? Dims{static_cast<int64_t>(dimsOf(0)->size()), -1} : Dims{-1, -1});
    else if (op == "OneHot")
      oneHot();
    else if (op == "Range")
      range();
    else if (op == "ReduceMean" || op == "ReduceSum" || op == "ReduceMax" || op == "ReduceMin" ||
             op == "ReduceProd" || op == "ReduceSumSquare" || op == "ReduceL2")
      reduce();
    else if (op == "Attention")
      attention();
    else if (op == "RMSNormalization" || op == "SimplifiedLayerNormalization" ||
             op == "RotaryEmbedding")
      same(0); // opset 23, and onnxruntime's ONNX-domain contrib op: Y has X's type
    else if (op == "Slice")
      slice();
    else if (op == "Split")
      split();
    else if (op == "Tile")
      tile();
    else if (op == "TopK")
      topk();
    else if (op == "Transpose")
      transpose();
    else if (op == "ConstantOfShape")
      constantOfShape();
  }

  /// onnxruntime's contrib operators (docs/ContribOperators.md) whose outputs the normalize
  /// patterns read.
  void visitContrib(const Node &n) {
    bind(n);
    if (n.opType == "RotaryEmbedding") {
      same(0);
    } else if (n.opType == "GroupQueryAttention") {
      // With separate key and value, the output is the query's [batch, seq, num_heads * head];
      // a packed query [batch, seq, (num_heads + 2 kv_num_heads) * head] gives [batch, seq,
      // num_heads * head] (left untyped when the width does not divide).
      if (n.inputs.size() > 2 && !n.inputs[1].empty() && !n.inputs[2].empty()) {
        same(0);
      } else if (const Dims *q = dimsOf(0); q && q->size() == 3 && (*q)[2] > 0) {
        const int64_t heads = intAttr("num_heads", 0), kv = intAttr("kv_num_heads", 0);
        if (heads > 0 && kv > 0 && (*q)[2] % (heads + 2 * kv) == 0)
          setOut(0, typeOf(0), Dims{(*q)[0], (*q)[1], heads * ((*q)[2] / (heads + 2 * kv))});
      }
    } else if (n.opType == "SkipSimplifiedLayerNormalization") { // Y and the residual sum
      same(0);
      setOut(3, typeOf(0), dimsOf(0));
    }
  }

  /// Attention-23 on 4-D inputs: Y is [batch, q_heads, q_seq, v_head_dim] (3-D inputs, which the
  /// loader refuses, stay untyped).
  void attention() {
    const Dims *q = dimsOf(0), *v = dimsOf(2);
    if (!q || !v || q->size() != 4 || v->size() != 4)
      return setOut(0, typeOf(0), nullptr);
    setOut(0, typeOf(0), Dims{(*q)[0], (*q)[1], (*q)[2], (*v)[3]});
  }

  void constant() {
    for (const auto &[name, a] : node_->attributes) {
      if (name == "value" && a.kind == Attribute::Kind::Tensor && a.tensor) {
        setOut(0, a.tensor->type, a.tensor->dims);
        Known k;
        if (decode(*a.tensor, k))
          setKnown(0, std::move(k));
      } else if (name == "value_int" && a.kind == Attribute::Kind::Int) {
        setKnown(0, Known{ElemType::Int64, {}, {a.i}});
      } else if (name == "value_ints" && a.kind == Attribute::Kind::Ints) {
        setKnown(0, Known{ElemType::Int64, {static_cast<int64_t>(a.ints.size())}, a.ints});
      } else if (name == "value_float" && a.kind == Attribute::Kind::Float) {
        setOut(0, ElemType::Float, Dims{});
      } else if (name == "value_floats" && a.kind == Attribute::Kind::Floats) {
        setOut(0, ElemType::Float, Dims{static_cast<int64_t>(a.floats.size())});
      }
    }
  }

  void cast() {
    const Attribute *to = attr("to");
    if (!to || to->kind != Attribute::Kind::Int)
      return;
    ElemType t = static_cast<ElemType>(to->i);
    if (elemTypeSize(t) == 0 && t != ElemType::String)
      t = ElemType::Undefined;
    setOut(0, t, dimsOf(0));
    if (const Known *k = knownOf(0); k && trackedType(t)) {
      Known c = *k;
      c.type = t;
      for (int64_t &x : c.v)
        x = t == ElemType::Bool ? x != 0 : t == ElemType::Int32 ? static_cast<int32_t>(x) : x;
      setKnown(0, std::move(c));
    }
  }

  void shape() {
    const Dims *d = dimsOf(0);
    if (!d)
      return setOut(0, ElemType::Int64, Dims{-1});
    const int64_t rank = static_cast<int64_t>(d->size());
    int64_t start = std::clamp(normAxis(intAttr("start", 0), rank), int64_t{0}, rank);
    int64_t end = std::clamp(normAxis(intAttr("end", rank), rank), int64_t{0}, rank);
    Dims part(d->begin() + start, d->begin() + std::max(start, end));
    setOut(0, ElemType::Int64, Dims{static_cast<int64_t>(part.size())});
    if (allStatic(part))
      setKnown(0, Known{ElemType::Int64, {static_cast<int64_t>(part.size())}, part});
  }

  void gather() {
    const Dims *data = dimsOf(0), *idx = dimsOf(1);
    if (!data || !idx)
      return setOut(0, typeOf(0), nullptr);
    const int64_t rank = static_cast<int64_t>(data->size());
    const int64_t axis = normAxis(intAttr("axis", 0), rank);
    if (axis < 0 || axis >= rank)
      return setOut(0, typeOf(0), nullptr);
    Dims out(data->begin(), data->begin() + axis);
    out.insert(out.end(), idx->begin(), idx->end());
    out.insert(out.end(), data->begin() + axis + 1, data->end());
    setOut(0, typeOf(0), out);
    const Known *kd = knownOf(0), *ki = knownOf(1);
    if (!kd || !ki || !allStatic(out))
      return;
    // out[outer, idx..., inner] = data[outer, idx[...], inner]
    int64_t outer = 1, inner = 1;
    for (int64_t i = 0; i < axis; ++i)
      outer *= kd->dims[i];
    for (int64_t i = axis + 1; i < rank; ++i)
      inner *= kd->dims[i];
    const int64_t n = kd->dims[axis];
    Known k{kd->type, out, {}};
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t j : ki->v) {
        int64_t jj = j < 0 ? j + n : j;
        if (jj < 0 || jj >= n)
          return;
        for (int64_t in = 0; in < inner; ++in)
          k.v.push_back(kd->v[(o * n + jj) * inner + in]);
      }
    setKnown(0, std::move(k));
  }

  void concat() {
    const Dims *first = nullptr;
    for (size_t i = 0; i < numInputs(); ++i)
      if (const Dims *d = dimsOf(i)) {
        first = d;
        break;
      }
    if (!first)
      return setOut(0, typeOf(0), nullptr);
    const int64_t rank = static_cast<int64_t>(first->size());
    const int64_t axis = normAxis(intAttr("axis", 0), rank);
    if (axis < 0 || axis >= rank)
      return setOut(0, typeOf(0), nullptr);
    Dims out(*first);
    out[axis] = 0;
    bool allKnown = true;
    for (size_t i = 0; i < numInputs(); ++i) {
      const Dims *d = dimsOf(i);
      if (!d || static_cast<int64_t>(d->size()) != rank) {
        out[axis] = -1;
        allKnown = false; // its value cannot be known either (it may even be known-less: null)
        continue;
      }
      for (int64_t j = 0; j < rank; ++j)
        if (j != axis && out[j] < 0)
          out[j] = (*d)[j];
      if ((*d)[axis] < 0 || out[axis] < 0)
        out[axis] = -1;
      else
        out[axis] += (*d)[axis];
      allKnown &= knownOf(i) != nullptr;
    }
    setOut(0, typeOf(0), out);
    if (allKnown && rank == 1) {
      Known k{typeOf(0), out, {}};
      for (size_t i = 0; i < numInputs(); ++i)
        k.v.insert(k.v.end(), knownOf(i)->v.begin(), knownOf(i)->v.end());
      k.type = knownOf(0)->type;
      setKnown(0, std::move(k));
    }
  }

  /// Axes from the second input (opset >= 13) or the `axes` attribute; null if unknown.
  bool axesOf(std::vector<int64_t> &axes) const {
    if (has(1)) {
      const std::vector<int64_t> *v = valuesOf(1);
      if (!v)
        return false;
      axes = *v;
      return true;
    }
    if (const std::vector<int64_t> *a = intsAttr("axes")) {
      axes = *a;
      return true;
    }
    axes.clear();
    return true;
  }

  void reshaped(const Dims &out) {
    setOut(0, typeOf(0), out);
    if (const Known *k = knownOf(0); k && allStatic(out)) {
      Known r = *k;
      r.dims = out;
      int64_t n;
      if (product(out, n) && n == static_cast<int64_t>(r.v.size()))
        setKnown(0, std::move(r));
    }
  }

  void unsqueeze() {
    const Dims *d = dimsOf(0);
    std::vector<int64_t> axes;
    if (!d || !axesOf(axes))
      return setOut(0, typeOf(0), nullptr);
    const int64_t rank = static_cast<int64_t>(d->size() + axes.size());
    Dims out(rank, -2);
    for (int64_t a : axes) {
      a = normAxis(a, rank);
      if (a < 0 || a >= rank || out[a] == 1)
        return setOut(0, typeOf(0), nullptr);
      out[a] = 1;
    }
    size_t j = 0;
    for (int64_t &o : out)
      if (o == -2)
        o = (*d)[j++];
    reshaped(out);
  }

  void squeeze() {
    const Dims *d = dimsOf(0);
    std::vector<int64_t> axes;
    if (!d || !axesOf(axes))
      return setOut(0, typeOf(0), nullptr);
    const int64_t rank = static_cast<int64_t>(d->size());
    std::vector<bool> drop(rank, false);
    if (axes.empty()) {
      for (int64_t i = 0; i < rank; ++i) {
        if ((*d)[i] < 0)
          return setOut(0, typeOf(0), nullptr);
        drop[i] = (*d)[i] == 1;
      }
    }
    for (int64_t a : axes) {
      a = normAxis(a, rank);
      if (a < 0 || a >= rank)
        return setOut(0, typeOf(0), nullptr);
      drop[a] = true;
    }
    Dims out;
    for (int64_t i = 0; i < rank; ++i)
      if (!drop[i])
        out.push_back((*d)[i]);
    reshaped(out);
  }

  void reshape() {
    const std::vector<int64_t> *target = valuesOf(1);
    if (!target) {
      const Dims *sd = dimsOf(1);
      if (sd && sd->size() == 1 && (*sd)[0] >= 0 && (*sd)[0] <= kMaxRank)
        return setOut(0, typeOf(0), Dims(static_cast<size_t>((*sd)[0]), -1));
      return setOut(0, typeOf(0), nullptr);
    }
    const Dims *d = dimsOf(0);
    const bool allowZero = intAttr("allowzero", 0) != 0;
    Dims out(*target);
    int inferAt = -1;
    for (size_t i = 0; i < out.size(); ++i) {
      if (out[i] == 0 && !allowZero)
        out[i] = d && i < d->size() ? (*d)[i] : -1;
      else if (out[i] == -1) {
        if (inferAt >= 0)
          return setOut(0, typeOf(0), nullptr);
        inferAt = static_cast<int>(i);
      } else if (out[i] < 0)
        return setOut(0, typeOf(0), nullptr);
    }
    if (inferAt >= 0) {
      int64_t total, rest = 1;
      bool ok = d && product(*d, total);
      for (size_t i = 0; ok && i < out.size(); ++i)
        if (static_cast<int>(i) != inferAt) {
          if (out[i] < 0)
            ok = false;
          else
            rest *= out[i];
        }
      out[inferAt] = ok && rest > 0 && total % rest == 0 ? total / rest : -1;
    }
    reshaped(out);
  }

  void flatten() {
    const Dims *d = dimsOf(0);
    if (!d)
      return setOut(0, typeOf(0), nullptr);
    const int64_t rank = static_cast<int64_t>(d->size());
    const int64_t axis = normAxis(intAttr("axis", 1), rank);
    if (axis < 0 || axis > rank)
      return setOut(0, typeOf(0), nullptr);
    Dims a(d->begin(), d->begin() + axis), b(d->begin() + axis, d->end());
    int64_t x, y;
    Dims out{product(a, x) ? x : -1, product(b, y) ? y : -1};
    reshaped(out);
  }

  /// Output dims of a broadcast over every input (rank unknown if any input's rank is).
  bool broadcastInputs(Dims &out) const {
    out.clear();
    for (size_t i = 0; i < numInputs(); ++i) {
      const Dims *d = dimsOf(i);
      if (!d)
        return false;
      out = broadcast(out, *d);
    }
    return true;
  }

  /// Values of a broadcast elementwise op over every (known) input.
  template <typename F> void broadcastValues(ElemType type, const Dims &out, F f) {
    std::vector<const Known *> ins;
    for (size_t i = 0; i < numInputs(); ++i) {
      const Known *k = knownOf(i);
      if (!k)
        return;
      ins.push_back(k);
    }
    int64_t n;
    if (!allStatic(out) || !product(out, n) || n > kMaxKnownElements)
      return;
    Known k{type, out, std::vector<int64_t>(static_cast<size_t>(n))};
    std::vector<int64_t> args(ins.size());
    for (int64_t pos = 0; pos < n; ++pos) {
      for (size_t i = 0; i < ins.size(); ++i)
        args[i] = ins[i]->v[broadcastIndex(ins[i]->dims, out, pos)];
      if (!f(args, k.v[pos]))
        return;
    }
    setKnown(0, std::move(k));
  }

  void elementwise(const std::string &op) {
    const bool compare = op == "Equal" || op == "Less" || op == "Greater" || op == "LessOrEqual" ||
                         op == "GreaterOrEqual";
    const ElemType type = compare ? ElemType::Bool : typeOf(op == "Where" ? 1 : 0);
    Dims out;
    if (!broadcastInputs(out))
      return setOut(0, type, nullptr);
    setOut(0, type, out);
    if (!trackedType(type) && !compare)
      return;
    broadcastValues(type, out, [&](const std::vector<int64_t> &a, int64_t &r) {
      if (op == "Where")
        return r = a[0] ? a[1] : a[2], true;
      if (op == "Min" || op == "Max") {
        r = a[0];
        for (int64_t x : a)
          r = op == "Min" ? std::min(r, x) : std::max(r, x);
        return true;
      }
      if (a.size() != 2)
        return false;
      int64_t x = a[0], y = a[1];
      if (op == "Add")
        return !__builtin_add_overflow(x, y, &r);
      if (op == "Sub")
        return !__builtin_sub_overflow(x, y, &r);
      if (op == "Mul")
        return !__builtin_mul_overflow(x, y, &r);
      if (op == "Div")
        return y > 0 && x >= 0 ? (r = x / y, true) : false; // trunc = floor here
      if (op == "Equal")
        return r = x == y, true;
      if (op == "Less")
        return r = x < y, true;
      if (op == "Greater")
        return r = x > y, true;
      if (op == "LessOrEqual")
        return r = x <= y, true;
      if (op == "GreaterOrEqual")
        return r = x >= y, true;
      if (op == "And")
        return r = (x != 0) && (y != 0), true;
      if (op == "Or")
        return r = (x != 0) || (y != 0), true;
      if (op == "Xor")
        return r = (x != 0) != (y != 0), true;
      return false; // Pow
    });
  }

  void logicalNot() {
    const Known *k = knownOf(0);
    if (!k || k->type != ElemType::Bool)
      return;
    Known r = *k;
    for (int64_t &x : r.v)
      x = x == 0;
    setKnown(0, std::move(r));
  }

  void negate() {
    const Known *k = knownOf(0);
    if (!k || k->type == ElemType::Bool)
      return;
    Known r = *k;
    for (int64_t &x : r.v) {
      if (x == INT64_MIN)
        return;
      x = -x;
    }
    setKnown(0, std::move(r));
  }

  void expand() {
    const Dims *d = dimsOf(0);
    const std::vector<int64_t> *shape = valuesOf(1);
    if (!d)
      return setOut(0, typeOf(0), nullptr);
    if (!shape) {
      const Dims *sd = dimsOf(1);
      if (sd && sd->size() == 1 && (*sd)[0] >= 0 && (*sd)[0] <= kMaxRank)
        return setOut(0, typeOf(0), Dims(std::max<size_t>(d->size(), (*sd)[0]), -1));
      return setOut(0, typeOf(0), nullptr);
    }
    Dims out = broadcast(*d, *shape);
    setOut(0, typeOf(0), out);
    if (const Known *k = knownOf(0)) {
      // Values: broadcast of the data alone (the shape operand only shapes).
      int64_t n;
      if (!allStatic(out) || !product(out, n) || n > kMaxKnownElements)
        return;
      Known r{k->type, out, std::vector<int64_t>(static_cast<size_t>(n))};
      for (int64_t pos = 0; pos < n; ++pos)
        r.v[pos] = k->v[broadcastIndex(k->dims, out, pos)];
      setKnown(0, std::move(r));
    }
  }

  void matmul() {
    const Dims *a = dimsOf(0), *b = dimsOf(1);
    if (!a || !b || a->empty() || b->empty())
      return setOut(0, typeOf(0), nullptr);
    Dims x(*a), y(*b);
    const bool vecA = x.size() == 1, vecB = y.size() == 1;
    if (vecA)
      x.insert(x.begin(), 1);
    if (vecB)
      y.push_back(1);
    Dims batch = broadcast(Dims(x.begin(), x.end() - 2), Dims(y.begin(), y.end() - 2));
    if (!vecA)
      batch.push_back(x[x.size() - 2]);
    if (!vecB)
      batch.push_back(y.back());
    setOut(0, typeOf(0), batch);
  }

  void gemm() {
    const Dims *a = dimsOf(0), *b = dimsOf(1);
    if (!a || !b || a->size() != 2 || b->size() != 2)
      return setOut(0, typeOf(0), nullptr);
    int64_t m = intAttr("transA", 0) ? (*a)[1] : (*a)[0];
    int64_t n = intAttr("transB", 0) ? (*b)[0] : (*b)[1];
    setOut(0, typeOf(0), Dims{m, n});
  }

  void oneHot() {
    const Dims *d = dimsOf(0);
    const ElemType type = typeOf(2);
    if (!d)
      return setOut(0, type, nullptr);
    const int64_t rank = static_cast<int64_t>(d->size()) + 1;
    const int64_t axis = normAxis(intAttr("axis", -1), rank);
    if (axis < 0 || axis >= rank)
      return setOut(0, type, nullptr);
    const std::vector<int64_t> *depth = valuesOf(1);
    Dims out(*d);
    out.insert(out.begin() + axis,
               depth && depth->size() == 1 && (*depth)[0] > 0 ? (*depth)[0] : -1);
    setOut(0, type, out);
  }

  void range() {
    const std::vector<int64_t> *s = valuesOf(0), *l = valuesOf(1), *dl = valuesOf(2);
    int64_t len = -1;
    if (s && l && dl && s->size() == 1 && l->size() == 1 && dl->size() == 1 && (*dl)[0] != 0) {
      // max(ceil((limit - start) / delta), 0); the values themselves are data, not tracked.
      const int64_t diff = (*l)[0] - (*s)[0], delta = (*dl)[0];
      int64_t q = diff / delta;
      if (q * delta != diff && ((diff > 0) == (delta > 0)))
        ++q;
      len = std::max<int64_t>(q, 0);
    }
    setOut(0, typeOf(0), Dims{len});
  }

  /// Every Reduce*: axes from the `axes` attribute (opset < 18; ReduceSum < 13) or the second
  /// input (opset >= 18; ReduceSum >= 13); a node has one or the other, never both.
  void reduce() {
    const Dims *d = dimsOf(0);
    const ElemType type = typeOf(0);
    const bool keep = intAttr("keepdims", 1) != 0;
    if (!d)
      return setOut(0, type, nullptr);
    const int64_t rank = static_cast<int64_t>(d->size());
    std::vector<int64_t> axes;
    bool axesKnown;
    if (has(1)) {
      const std::vector<int64_t> *v = valuesOf(1);
      axesKnown = v != nullptr;
      if (v)
        axes = *v;
    } else {
      axesKnown = true;
      if (const std::vector<int64_t> *a = intsAttr("axes"))
        axes = *a;
    }
    if (!axesKnown) {
      if (keep)
        return setOut(0, type, Dims(static_cast<size_t>(rank), -1));
      return setOut(0, type, nullptr);
    }
    std::vector<bool> reduced(rank, false);
    if (axes.empty()) {
      if (intAttr("noop_with_empty_axes", 0))
        return setOut(0, type, *d);
      std::fill(reduced.begin(), reduced.end(), true);
    }
    for (int64_t a : axes) {
      a = normAxis(a, rank);
      if (a < 0 || a >= rank)
        return setOut(0, type, nullptr);
      reduced[a] = true;
    }
    Dims out;
    for (int64_t i = 0; i < rank; ++i)
      if (!reduced[i])
        out.push_back((*d)[i]);
      else if (keep)
        out.push_back(1);
    setOut(0, type, out);
  }

  void slice() {
    const Dims *d = dimsOf(0);
    if (!d)
      return setOut(0, typeOf(0), nullptr);
    const int64_t rank = static_cast<int64_t>(d->size());
    const std::vector<int64_t> *starts = valuesOf(1), *ends = valuesOf(2);
    const std::vector<int64_t> *axesIn = has(3) ? valuesOf(3) : nullptr;
    const std::vector<int64_t> *stepsIn = has(4) ? valuesOf(4) : nullptr;
    if ((has(3) && !axesIn) || (has(4) && !stepsIn) || !starts || !ends ||
        starts->size() != ends->size()) {
      // Which axes are sliced is unknown (or how): only the rank is.
      if (has(3) && axesIn) {
        Dims out(*d);
        for (int64_t a : *axesIn)
          if (normAxis(a, rank) >= 0 && normAxis(a, rank) < rank)
            out[normAxis(a, rank)] = -1;
        return setOut(0, typeOf(0), out);
      }
      return setOut(0, typeOf(0), Dims(static_cast<size_t>(rank), -1));
    }
    std::vector<int64_t> axes, steps(starts->size(), 1);
    if (axesIn)
      axes = *axesIn;
    else
      for (size_t i = 0; i < starts->size(); ++i)
        axes.push_back(static_cast<int64_t>(i));
    if (stepsIn)
      steps = *stepsIn;
    if (axes.size() != starts->size() || steps.size() != starts->size())
      return setOut(0, typeOf(0), nullptr);
    Dims out(*d);
    std::vector<int64_t> from(rank, 0), step(rank, 1);
    for (int64_t i = 0; i < rank; ++i)
      from[i] = 0;
    bool valuesOk = true;
    for (size_t i = 0; i < axes.size(); ++i) {
      int64_t a = normAxis(axes[i], rank);
      if (a < 0 || a >= rank || steps[i] == 0)
        return setOut(0, typeOf(0), nullptr);
      const int64_t dim = (*d)[a];
      if (dim < 0) {
        out[a] = -1;
        valuesOk = false;
        continue;
      }
      int64_t s = (*starts)[i], e = (*ends)[i], st = steps[i];
      if (s < 0)
        s += dim;
      if (e < 0)
        e += dim;
      if (st > 0) {
        s = std::clamp<int64_t>(s, 0, dim);
        e = std::clamp<int64_t>(e, 0, dim);
        out[a] = e > s ? (e - s + st - 1) / st : 0;
      } else {
        s = std::clamp<int64_t>(s, 0, dim - 1);
        e = std::clamp<int64_t>(e, -1, dim - 1);
        out[a] = s > e ? (s - e + (-st) - 1) / (-st) : 0;
      }
      from[a] = s;
      step[a] = st;
    }
    setOut(0, typeOf(0), out);
    const Known *k = knownOf(0);
    if (!k || !valuesOk || rank != 1)
      return;
    Known r{k->type, out, {}};
    for (int64_t i = 0; i < out[0]; ++i)
      r.v.push_back(k->v[from[0] + i * step[0]]);
    setKnown(0, std::move(r));
  }

  void split() {
    const Dims *d = dimsOf(0);
    const size_t parts = node_->outputs.size();
    if (!d || parts == 0) {
      for (size_t i = 0; i < parts; ++i)
        setOut(i, typeOf(0), nullptr);
      return;
    }
    const int64_t rank = static_cast<int64_t>(d->size());
    const int64_t axis = normAxis(intAttr("axis", 0), rank);
    if (axis < 0 || axis >= rank)
      return;
    std::vector<int64_t> sizes;
    if (has(1)) {
      if (const std::vector<int64_t> *v = valuesOf(1))
        sizes = *v;
    } else if (const std::vector<int64_t> *a = intsAttr("split")) {
      sizes = *a;
    } else if (int64_t n = intAttr("num_outputs", 0); n > 0 && (*d)[axis] >= 0) {
      // Split-18's num_outputs: ceil(dim / n) each, the last one smaller if it does not divide.
      const int64_t chunk = ((*d)[axis] + n - 1) / n;
      for (int64_t i = 0, left = (*d)[axis]; i < n; ++i, left -= chunk)
        sizes.push_back(std::max<int64_t>(std::min(chunk, left), 0));
    } else if ((*d)[axis] >= 0 && (*d)[axis] % static_cast<int64_t>(parts) == 0) {
      sizes.assign(parts, (*d)[axis] / static_cast<int64_t>(parts));
    }
    for (size_t i = 0; i < parts; ++i) {
      Dims out(*d);
      out[axis] = sizes.size() == parts ? sizes[i] : -1;
      setOut(i, typeOf(0), out);
    }
  }

  void tile() {
    const Dims *d = dimsOf(0);
    const std::vector<int64_t> *reps = valuesOf(1);
    if (!d)
      return setOut(0, typeOf(0), nullptr);
    Dims out(*d);
    for (size_t i = 0; i < out.size(); ++i)
      out[i] = reps && reps->size() == out.size() && out[i] >= 0 ? out[i] * (*reps)[i] : -1;
    setOut(0, typeOf(0), out);
  }

  void topk() {
    const Dims *d = dimsOf(0);
    if (!d) {
      setOut(0, typeOf(0), nullptr);
      setOut(1, ElemType::Int64, nullptr);
      return;
    }
    const int64_t rank = static_cast<int64_t>(d->size());
    const int64_t axis = normAxis(intAttr("axis", -1), rank);
    if (axis < 0 || axis >= rank)
      return;
    const std::vector<int64_t> *k = valuesOf(1);
    Dims out(*d);
    out[axis] = k && k->size() == 1 ? (*k)[0] : -1;
    setOut(0, typeOf(0), out);
    setOut(1, ElemType::Int64, out);
  }

  void transpose() {
    const Dims *d = dimsOf(0);
    if (!d)
      return setOut(0, typeOf(0), nullptr);
    const int64_t rank = static_cast<int64_t>(d->size());
    std::vector<int64_t> perm;
    if (const std::vector<int64_t> *p = intsAttr("perm"))
      perm = *p;
    else
      for (int64_t i = rank; i-- > 0;)
        perm.push_back(i);
    if (static_cast<int64_t>(perm.size()) != rank)
      return setOut(0, typeOf(0), nullptr);
    Dims out;
    for (int64_t p : perm) {
      if (p < 0 || p >= rank)
        return setOut(0, typeOf(0), nullptr);
      out.push_back((*d)[p]);
    }
    setOut(0, typeOf(0), out);
    if (const Known *k = knownOf(0); k && rank <= 1)
      setKnown(0, *k);
  }

  void constantOfShape() {
    ElemType type = ElemType::Float;
    const Attribute *value = attr("value");
    Known fill{ElemType::Float, {}, {0}};
    if (value && value->kind == Attribute::Kind::Tensor && value->tensor) {
      type = value->tensor->type;
      Known k;
      if (decode(*value->tensor, k) && k.v.size() == 1)
        fill = k;
      else
        fill.type = ElemType::Undefined;
    }
    const std::vector<int64_t> *shape = valuesOf(0);
    if (!shape) {
      const Dims *sd = dimsOf(0);
      if (sd && sd->size() == 1 && (*sd)[0] >= 0 && (*sd)[0] <= kMaxRank)
        return setOut(0, type, Dims(static_cast<size_t>((*sd)[0]), -1));
      return setOut(0, type, nullptr);
    }
    setOut(0, type, *shape);
    int64_t n;
    if (trackedType(fill.type) && product(*shape, n) && n <= kMaxKnownElements)
      setKnown(0,
               Known{fill.type, *shape, std::vector<int64_t>(static_cast<size_t>(n), fill.v[0])});
  }
};

} // namespace

void propagateStaticShapes(Graph &graph) noexcept { Propagator(graph).run(); }

} // namespace disagmoe::onnxfe
