//===- ResidualStream.cpp - assembling the raised components into a decoder -------===//
#include "passes/raise/ResidualStream.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/Builders.h"

using namespace mlir;

namespace disagmoe::raise {
namespace {

/// The first user of `v` of type OpT reading `v` as its first operand, or null.
template <typename OpT> OpT userReading(Value v) {
  for (Operation *user : v.getUsers())
    if (auto op = dyn_cast<OpT>(user); op && op->getOperand(0) == v)
      return op;
  return nullptr;
}

/// The ONNX Add computing x + y (either order; y possibly reshaped), or null.
NodeOp residualAdd(Value x, Value y) {
  for (NodeOp add : consumers(x, "Add"))
    if (auto other = otherOperand(add, x); other && skipDataMovement(*other) == y)
      return add;
  return nullptr;
}

class Assembly {
public:
  explicit Assembly(ComponentMatcher &m) : m(m), func(m.ctx.func), b(func.getContext()) {}

  LogicalResult run() {
    moe::EmbeddingOp embedding;
    func.walk([&](moe::EmbeddingOp op) { embedding = embedding ? embedding : op; });
    if (!embedding)
      return fail(func, "no token embedding: the token-id input feeds no Gather from a weight");
    Value x = embedding.getResult();
    emitted.push_back(embedding);
    bool anyMoe = false, noRouter = true;
    func.walk([&](Operation *op) {
      auto node = dyn_cast<NodeOp>(op);
      if (isa<moe::RouterOp>(op) || (node && node.getOpType() == "TopK"))
        noRouter = false;
    });
    moe::HeadOp head;
    moe::RouterOp firstRouter;
    for (int64_t l = 0;; ++l) {
      auto norm = userReading<moe::RmsNormOp>(x);
      if (!norm)
        return fail(m.firstUser(x), "expected an RMSNorm on the residual stream here");
      Value xn = norm.getResult();
      Operation *attn = userReading<moe::AttentionOp>(xn);
      if (!attn)
        attn = userReading<moe::MlaAttentionOp>(xn);
      if (!attn) {
        // Not an attention: the final norm, followed by the head.
        head = userReading<moe::HeadOp>(xn);
        if (!head) {
          auto projs = m.projections(xn);
          if (!projs.empty())
            return fail(projs.back().first,
                        "the language-model head must produce the only graph output");
          return fail(m.firstUser(xn), "expected the language-model head MatMul(norm, W)");
        }
        setNorm(norm, -1, "final_norm");
        emitted.append({norm, head});
        break;
      }
      setNorm(norm, l, "attn_norm");
      setLayer(attn, l);
      emitted.append({norm, attn});
      Value a = attn->getResult(0);
      NodeOp attnAdd = residualAdd(x, a);
      if (!attnAdd)
        return fail(m.firstUser(a), "expected the residual add x + attention(x)");
      Value h = add(attnAdd, x, a);
      auto ffnNorm = userReading<moe::RmsNormOp>(h);
      if (!ffnNorm)
        return fail(m.firstUser(h), "expected the FFN RMSNorm after the attention residual");
      setNorm(ffnNorm, l, "ffn_norm");
      emitted.push_back(ffnNorm);
      Value hn = ffnNorm.getResult();
      auto router = userReading<moe::RouterOp>(hn);
      auto dense = userReading<moe::DenseFfnOp>(hn);
      std::string noRouterHere = "layer " + std::to_string(l) + "'s FFN has no router (TopK)";
      if (!router && noRouter)
        return fail(m.firstUser(hn), "the model has no MoE layer: " + noRouterHere);
      if (!router && !dense)
        return fail(m.firstUser(hn),
                    noRouterHere + " and is not a SwiGLU FFN added to the residual stream");
      if (!router) {
        // A dense layer (DeepSeek's first_k_dense_replace): one SwiGLU FFN on the FFN norm.
        setDense(dense, l, "dense", IntegerAttr());
        NodeOp ffnAdd = residualAdd(h, dense.getResult());
        if (!ffnAdd)
          return fail(m.firstUser(hn),
                      noRouterHere + " and is not a SwiGLU FFN added to the residual stream");
        emitted.push_back(dense);
        x = add(ffnAdd, h, dense.getResult());
        continue;
      }
      // The plan holds one expert count and top-k for the model (docs/plan-format.md, model).
      if (firstRouter && (router.getNumExperts() != firstRouter.getNumExperts() ||
                          router.getTopK() != firstRouter.getTopK()))
        return fail(router, "layer " + std::to_string(l) + "'s router has " +
                                std::to_string(router.getNumExperts()) + " experts, top-" +
                                std::to_string(router.getTopK()) + "; an earlier layer's has " +
                                std::to_string(firstRouter.getNumExperts()) + ", top-" +
                                std::to_string(firstRouter.getTopK()) +
                                ": every MoE layer must have the same expert count and top-k");
      if (!firstRouter)
        firstRouter = router;
      anyMoe = true;
      setLayer(router, l);
      auto experts = userReading<moe::ExpertsOp>(hn);
      if (!experts || experts.getIds() != router.getIds())
        return fail(router, "experts: the router's expert ids feed no OneHot mask (only the "
                            "unrolled Hugging Face loop over experts is supported here)");
      setLayer(experts, l);
      Value e = experts.getResult();
      if (!dense) {
        NodeOp ffnAdd = residualAdd(h, e);
        if (!ffnAdd)
          return fail(router, "expected the residual add h + moe(h) after the experts");
        emitted.append({router, experts});
        x = add(ffnAdd, h, e);
        continue;
      }
      // Shared experts (DeepSeek): h + (experts(hn) + shared(hn)); r = h + shared runs on the
      // attention side and the experts' output is added to it (docs/architecture.md,
      // "Exchanges").
      const int64_t inner = dense.getFfnHidden(), expertHidden = experts.getExpertHidden();
      setDense(dense, l, "shared",
               b.getI64IntegerAttr(
                   expertHidden > 0 && inner % expertHidden == 0 ? inner / expertHidden : 1));
      NodeOp sum = residualAdd(e, dense.getResult());
      NodeOp ffnAdd = sum ? residualAdd(h, sum.getOutputs()[0]) : NodeOp();
      if (!ffnAdd)
        return fail(m.firstUser(dense.getResult()),
                    "shared experts: expected the residual add h + (experts(h) + shared(h))");
      emitted.append({router, dense});
      b.setInsertionPoint(ffnAdd);
      Value r = b.create<arith::AddFOp>(ffnAdd.getLoc(), h, dense.getResult());
      emitted.append({r.getDefiningOp(), experts});
      x = add(ffnAdd, r, e);
    }
    if (!anyMoe)
      return fail(head, "the model has no MoE layer (no router TopK on any FFN)");
    auto ret = cast<func::ReturnOp>(func.getBody().front().getTerminator());
    if (ret.getNumOperands() != 1 || ret.getOperand(0) != head.getResult())
      return fail(head, "the language-model head must produce the only graph output");
    func.setFunctionType(b.getFunctionType(func.getArgumentTypes(), {head.getResult().getType()}));
    // The components in stream order at the end of the function, as later passes read them;
    // the ONNX nodes they replaced are dead from here on (the pass erases them).
    for (Operation *op : emitted)
      op->moveBefore(ret);
    return success();
  }

private:
  ComponentMatcher &m;
  func::FuncOp func;
  OpBuilder b;
  SmallVector<Operation *> emitted; // the components and residual adds, in stream order

  LogicalResult fail(Operation *at, const std::string &message) {
    m.fail(at, message);
    return failure();
  }

  /// arith.addf(a, c) in place of the ONNX residual Add `node`, whose readers it takes over.
  Value add(NodeOp node, Value a, Value c) {
    b.setInsertionPoint(node);
    Value sum = b.create<arith::AddFOp>(node.getLoc(), a, c);
    node.getOutputs()[0].replaceAllUsesWith(sum);
    emitted.push_back(sum.getDefiningOp());
    return sum;
  }

  void setNorm(moe::RmsNormOp norm, int64_t layer, StringRef role) {
    setLayer(norm, layer);
    norm.setRole(role);
  }
  void setLayer(Operation *op, int64_t layer) { op->setAttr("layer", b.getI64IntegerAttr(layer)); }
  void setDense(moe::DenseFfnOp dense, int64_t layer, StringRef role, IntegerAttr numShared) {
    setLayer(dense, layer);
    dense.setRole(role);
    if (numShared)
      dense.setNumSharedExpertsAttr(numShared);
  }
};

} // namespace

LogicalResult assembleResidualStream(ComponentMatcher &m) { return Assembly(m).run(); }

} // namespace disagmoe::raise
