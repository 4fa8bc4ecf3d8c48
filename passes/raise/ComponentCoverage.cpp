//===- ComponentCoverage.cpp - every computing node has a role in a recognised component -===//
#include "passes/raise/ComponentCoverage.h"

#include "passes/raise/GraphMatchers.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringSet.h"

#include <deque>

using namespace mlir;

namespace disagmoe::raise {
namespace {

/// Ops that only move, select, broadcast or scatter values: no role needed.
bool isMoving(StringRef op) {
  static const llvm::StringSet<> ops = {"Cast",
                                        "Reshape",
                                        "Unsqueeze",
                                        "Squeeze",
                                        "Flatten",
                                        "Identity",
                                        "Transpose",
                                        "Expand",
                                        "Tile",
                                        "Concat",
                                        "Split",
                                        "Slice",
                                        "Gather",
                                        "GatherElements",
                                        "NonZero",
                                        "OneHot",
                                        "Equal",
                                        "Where",
                                        "ScatterElements",
                                        "ScatterND",
                                        "Shape",
                                        "ConstantOfShape",
                                        "Less",
                                        "Greater",
                                        "Range",
                                        "Constant"};
  return ops.contains(op);
}

class Coverage {
public:
  explicit Coverage(func::FuncOp func) {
    // Data values: reachable from the token ids through values (a Shape cuts the dependence).
    std::deque<Value> work{func.getArgument(0)};
    while (!work.empty()) {
      Value v = work.front();
      work.pop_front();
      if (!data.insert(v).second)
        continue;
      for (Operation *user : v.getUsers())
        if (auto node = dyn_cast<NodeOp>(user); node && node.getOpType() != "Shape")
          for (Value out : node.getOutputs())
            work.push_back(out);
    }
    func.walk([&](NodeOp node) {
      nodes.push_back(node);
      if (node.getOpType() == "TopK" && node.getOutputs().size() == 2)
        gateSources.insert(node.getOutputs()[0]);
    });
    // DeepSeek-V3's gates: the sigmoid scores gathered at the router ids.
    for (NodeOp node : nodes)
      if (node.getOpType() == "GatherElements" && node.getInputs().size() == 2)
        if (NodeOp topk = producer(node.getInputs()[1], {"TopK"});
            topk && node.getInputs()[1] == topk.getOutputs()[1])
          gateSources.insert(node.getOutputs()[0]);
    // The dense score matrix ScatterElements(zeros, router ids, gates) also holds the gates.
    for (NodeOp node : nodes)
      if (node.getOpType() == "ScatterElements" && node.getInputs().size() == 3)
        if (NodeOp topk = producer(skipDataMovement(node.getInputs()[1]), {"TopK"});
            topk && skipDataMovement(node.getInputs()[1]) == topk.getOutputs()[1])
          gateSources.insert(node.getOutputs()[0]);
    claimNorms();
  }

  LogicalResult check() {
    bool ok = true;
    for (NodeOp node : nodes) {
      if (claimed.contains(node) || isMoving(node.getOpType()) ||
          llvm::none_of(node.getOutputs(), [&](Value v) { return data.contains(v); }))
        continue;
      if (hasRole(node))
        continue;
      node.emitError() << describe(node)
                       << ": not part of any recognised component (RMSNorm, attention, RoPE, "
                          "router, experts and their combine, dense or shared FFN, residual add): "
                          "the raised model would drop this "
                       << node.getOpType() << ", so the export is refused";
      ok = false;
    }
    return success(ok);
  }

private:
  SmallVector<NodeOp> nodes;
  llvm::DenseSet<Value> data;
  llvm::DenseSet<Value> gateSources;
  llvm::DenseSet<Operation *> claimed;
  llvm::DenseMap<Operation *, int> scalesPerSoftmax;
  mutable MaskAnalysis masks; // the layers' shared mask constant, read once

  bool isData(Value v) const { return data.contains(v); }

  /// A weight read through data movement, a Transpose, or a Gather of its rows by expert ids.
  static bool isWeight(Value v) {
    v = skipDataMovement(v);
    for (int i = 0; i < 4; ++i) {
      NodeOp n = producer(v, {"Transpose", "Expand", "Tile", "Gather"});
      if (!n)
        break;
      v = skipDataMovement(n.getInputs()[0]);
    }
    return static_cast<bool>(weightOf(v));
  }

  /// A value computed from constants only, with a node of one of `ops` upstream (e.g. the RoPE
  /// tables from Cos/Sin, the mask from Trilu/Where).
  bool staticFrom(Value v, ArrayRef<StringRef> ops) const {
    if (isData(v))
      return false;
    return llvm::any_of(ops,
                        [&](StringRef op) { return static_cast<bool>(findUpstream(v, op, 128)); });
  }

  /// RMSNorm chains Pow(x, 2) -> ReduceMean -> Add(eps) -> Sqrt -> Div -> [Mul(x, .)] -> Mul(w, .)
  /// (each link the single consumer of its kind, as RmsNormPattern's matchNorm requires).
  void claimNorms() {
    for (NodeOp pow : nodes) {
      if (pow.getOpType() != "Pow" || pow.getInputs().size() != 2 ||
          scalarConstant(pow.getInputs()[1]) != 2.0)
        continue;
      SmallVector<NodeOp> chain{pow};
      NodeOp cur = pow;
      bool complete = true;
      for (StringRef op : {"ReduceMean", "Add", "Sqrt", "Div"}) {
        auto next = consumers(cur.getOutputs()[0], op);
        if (next.size() != 1) {
          complete = false;
          break;
        }
        cur = next.front();
        chain.push_back(cur);
      }
      if (!complete)
        continue;
      for (int i = 0; i < 2; ++i) {
        auto next = consumers(cur.getOutputs()[0], "Mul");
        if (next.size() != 1)
          break;
        cur = next.front();
        chain.push_back(cur);
        if (i == 1 ||
            llvm::any_of(cur.getInputs(), [](Value in) { return static_cast<bool>(weightOf(in)); }))
          break;
      }
      for (NodeOp n : chain)
        claimed.insert(n);
    }
  }

  /// `v` carries the router's gates: a TopK's values (or the dense score matrix) through moving
  /// ops, Softmax, renormalisation (ReduceSum, Div, Add eps) and scaling by a constant.
  bool fromGates(Value v) const {
    llvm::DenseSet<Value> seen;
    std::deque<Value> work{v};
    for (int budget = 32; !work.empty() && budget-- > 0;) {
      Value x = work.front();
      work.pop_front();
      if (!seen.insert(x).second)
        continue;
      if (gateSources.contains(x))
        return true;
      NodeOp n = producer(x);
      if (!n)
        continue;
      StringRef op = n.getOpType();
      bool through = isMoving(op) || op == "Softmax" || op == "Div" || op == "ReduceSum" ||
                     op == "Add" || (op == "Mul" && llvm::any_of(n.getInputs(), [](Value in) {
                                       return static_cast<bool>(scalarConstant(in));
                                     }));
      if (through)
        for (Value in : n.getInputs())
          work.push_back(in);
    }
    return false;
  }

  /// The Softmax that `v` feeds through the attention's score ops (mask Add, sinks Concat/Sub,
  /// casts), or null.
  NodeOp softmaxFed(Value v) const {
    std::deque<Value> work{v};
    for (int budget = 12; !work.empty() && budget-- > 0;) {
      Value x = work.front();
      work.pop_front();
      for (Operation *user : x.getUsers()) {
        auto n = dyn_cast<NodeOp>(user);
        if (!n)
          continue;
        StringRef op = n.getOpType();
        if (op == "Softmax")
          return n;
        if (op == "Add" || op == "Concat" || op == "Sub" || op == "Cast" || op == "Where" ||
            op == "Reshape")
          for (Value out : n.getOutputs())
            work.push_back(out);
      }
    }
    return nullptr;
  }

  /// The attention's constant scale: the first Mul/Div by a scalar before each Softmax.
  /// Only an attention's Softmax has a scale: the scaled value is the scores Q K^T, a MatMul of
  /// two data values (a router's logits come from a projection and take no scale).
  bool isSoftmaxScale(NodeOp node) {
    NodeOp scores;
    for (Value in : node.getInputs())
      if (NodeOp mm = producer(skipDataMovement(in), {"MatMul", "Einsum"}))
        if (llvm::none_of(mm.getInputs(), [](Value v) { return isWeight(v); }))
          scores = mm;
    if (!scores)
      return false;
    NodeOp softmax = softmaxFed(node.getOutputs()[0]);
    return softmax && ++scalesPerSoftmax[softmax] == 1;
  }

  /// Some node of `opType` within `budget` nodes downstream of `v`.
  static bool reachesDownstream(Value v, StringRef opType, int budget) {
    std::deque<Value> work{v};
    while (!work.empty() && budget-- > 0) {
      Value x = work.front();
      work.pop_front();
      for (Operation *user : x.getUsers())
        if (auto n = dyn_cast<NodeOp>(user)) {
          if (n.getOpType() == opType)
            return true;
          for (Value out : n.getOutputs())
            work.push_back(out);
        }
    }
    return false;
  }

  /// Row-index arithmetic of the loop over experts (top_x * k + idx, indexing the gates): every
  /// data operand is an integer computed from a NonZero, so the node only selects rows.
  bool isIndexArithmetic(NodeOp node) const {
    auto type = llvm::dyn_cast<ShapedType>(node.getOutputs()[0].getType());
    if (!type || !type.getElementType().isInteger())
      return false;
    return llvm::all_of(node.getInputs(), [&](Value in) {
      return !isData(in) || static_cast<bool>(findUpstream(in, "NonZero", 8));
    });
  }

  /// The router's gates themselves (TopK's values, their renormalisation or softmax), where a
  /// constant routed_scaling_factor applies; not the per-expert gathers of them, where a constant
  /// factor would be a stray node.
  bool isRouterGates(Value v) const {
    // Directly: RouterPattern reads the factor only from a Mul on these values (matchRouter).
    NodeOp p = producer(v, {"TopK", "Div", "Softmax", "GatherElements"});
    if (!p)
      return false;
    if (p.getOpType() == "GatherElements")
      return gateSources.contains(v); // the sigmoid router's gates
    if (p.getOpType() == "TopK")
      return v == p.getOutputs()[0];
    return fromGates(p.getInputs()[0]);
  }

  bool isRopeProduct(Value v) const {
    NodeOp mul = producer(v, {"Mul"});
    return mul &&
           llvm::any_of(mul.getInputs(), [&](Value in) { return staticFrom(in, {"Cos", "Sin"}); });
  }

  bool hasRole(NodeOp node) {
    StringRef op = node.getOpType();
    auto ins = node.getInputs();
    auto anyIn = [&](auto pred) { return llvm::any_of(ins, pred); };
    auto isScalar = [](Value v) { return static_cast<bool>(scalarConstant(v)); };
    if (op == "MatMul" || op == "Gemm" || op == "Einsum") {
      if (anyIn([](Value v) { return isWeight(v); }))
        return true; // a projection
      // Q K^T feeds a Softmax; P V reads one; Einsum("bec,be->bc") combines with the gates.
      return reachesDownstream(node.getOutputs()[0], "Softmax", 24) ||
             anyIn([](Value v) { return static_cast<bool>(findUpstream(v, "Softmax", 8)); }) ||
             (op == "Einsum" && anyIn([&](Value v) { return fromGates(v); }));
    }
    if (op == "Softmax" || op == "TopK")
      return true;
    if (op == "MoE")
      return node.getDomain() == "com.microsoft";
    if (op == "Sigmoid") {
      if (routerTopKOf(node))
        return true; // DeepSeek-V3's router scores (the choice reaches a TopK)
      // SiLU x * Sigmoid(x), or GPT-OSS's Sigmoid(alpha * gate).
      Value x = ins[0];
      if (llvm::any_of(consumers(node.getOutputs()[0], "Mul"),
                       [&](NodeOp m) { return llvm::is_contained(m.getInputs(), x); }))
        return true;
      NodeOp scaled = producer(x, {"Mul"});
      return scaled && llvm::any_of(scaled.getInputs(), [](Value v) {
               return static_cast<bool>(producer(v, {"Clip"}));
             });
    }
    if ((op == "Mul" || op == "Add") && isIndexArithmetic(node))
      return true;
    if (op == "Mul" && ins.size() == 2) {
      for (Value in : ins)
        if (NodeOp s = producer(in, {"Sigmoid"}); s && llvm::is_contained(ins, s.getInputs()[0]))
          return true; // SiLU
      for (Value in : ins)
        if (NodeOp m = producer(in, {"Mul"}))
          if (llvm::any_of(m.getInputs(),
                           [](Value x) { return static_cast<bool>(producer(x, {"Sigmoid"})); }))
            return true; // silu(x W1) * (x W3), or GPT-OSS's (up + 1) * glu
      if (anyIn([&](Value v) { return staticFrom(v, {"Cos", "Sin"}); }))
        return true; // RoPE
      for (unsigned i = 0; i < 2; ++i) {
        Value gates = ins[i], other = ins[1 - i];
        if (!fromGates(gates))
          continue;
        if (isData(other) && !isScalar(other))
          return true; // an expert's output (or the stacked outputs) weighted by the gates
        // routed_scaling_factor on the router's final gates: nothing renormalises after it.
        if (isScalar(other) && isRouterGates(gates) &&
            llvm::none_of(node.getOutputs()[0].getUsers(), [](Operation *user) {
              auto n = dyn_cast<NodeOp>(user);
              return n &&
                     llvm::is_contained({"Div", "ReduceSum", "Softmax", "TopK"}, n.getOpType());
            }))
          return true;
      }
      if (anyIn([](Value v) { return static_cast<bool>(producer(v, {"Clip"})); }))
        return true; // GPT-OSS: alpha * gate, gate * Sigmoid(alpha * gate)
      for (Value in : ins)
        if (NodeOp add = producer(in, {"Add"}))
          if (llvm::any_of(add.getInputs(),
                           [](Value x) { return static_cast<bool>(producer(x, {"Clip"})); }))
            return true; // GPT-OSS: (Clip(up) + 1) * glu
      if (anyIn(isScalar))
        return isSoftmaxScale(node);
      return false;
    }
    if (op == "Div" && ins.size() == 2) {
      if (isScalar(ins[1]))
        return isSoftmaxScale(node);
      // Renormalisation of the top-k gates: values / (ReduceSum(values) [+ eps]).
      return fromGates(ins[0]) &&
             static_cast<bool>(producer(skipDataMovement(ins[1]), {"ReduceSum", "Add"}));
    }
    if (op == "Add" && ins.size() == 2) {
      if (isData(ins[0]) && isData(ins[1]))
        return true; // residual, RoPE's rotated halves, the experts' accumulation
      if (anyIn([](Value v) { return isWeight(v); }))
        return true; // bias
      if (anyIn([&](Value v) {
            return staticFrom(v, {"Trilu", "Where"}) || (!isData(v) && masks.of(v).has_value());
          }))
        return true; // additive causal / sliding-window mask (folded to a constant, or not)
      if (anyIn([](Value v) { return static_cast<bool>(producer(v, {"Clip"})); }) &&
          anyIn([](Value v) { return scalarConstant(v) == 1.0; }))
        return true; // GPT-OSS: Clip(up) + 1
      if (anyIn([](Value v) { return static_cast<bool>(producer(v, {"ReduceSum"})); }))
        return true; // the renormalisation's eps
      if (anyIn([](Value v) { return static_cast<bool>(producer(v, {"ScatterElements"})); }) &&
          anyIn([](Value v) {
            return static_cast<bool>(producer(v, {"ConstantOfShape"})) || isZeroConstant(v);
          }))
        return true; // index_add_: zeros + scattered expert outputs
      return false;
    }
    if (op == "ReduceSum") {
      if (fromGates(ins[0]))
        return true; // the renormalisation's sum
      NodeOp mul = producer(ins[0], {"Mul"});
      return mul && llvm::any_of(mul.getInputs(), [&](Value v) { return fromGates(v); });
    }
    if (op == "ReduceMax") // attention sinks: scores - max
      return !consumers(node.getOutputs()[0], "Sub").empty();
    if (op == "Sub" && ins.size() == 2)
      return anyIn([](Value v) { return static_cast<bool>(producer(v, {"ReduceMax"})); }) ||
             (isRopeProduct(ins[0]) && isRopeProduct(ins[1])); // x1 cos - x2 sin
    if (op == "Neg") { // rotate_half: Concat(-x2, x1), one Neg, first
      if (!producer(ins[0], {"Slice"}))
        return false;
      return llvm::any_of(consumers(node.getOutputs()[0], "Concat"), [&](NodeOp cat) {
        auto parts = cat.getInputs();
        return parts.size() == 2 && parts[0] == node.getOutputs()[0] &&
               !producer(parts[1], {"Neg"});
      });
    }
    if (op == "Not") // DeepSeek-V3's group mask: Where(~score_mask, 0, scores) before a TopK
      return llvm::any_of(consumers(node.getOutputs()[0], "Where"), [&](NodeOp where) {
        return where.getInputs()[0] == node.getOutputs()[0] &&
               !consumers(where.getOutputs()[0], "TopK").empty();
      });
    if (op == "Clip") // GPT-OSS: the clamped gate and up halves of gate_up
      return static_cast<bool>(producer(ins[0], {"Slice"}));
    return false;
  }
};

} // namespace

LogicalResult checkEveryNodeExplained(func::FuncOp func) { return Coverage(func).check(); }

} // namespace disagmoe::raise
