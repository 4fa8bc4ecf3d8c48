//===- RaiseOnnxToMoe.cpp - the match stage: ONNX graph -> moe component ops -----===//
//
// The last stage of raising (normalize -> fold -> match). Runs on the normalized, folded graph:
//   1. refusals that need the whole graph: the traced MoE dispatch with baked token counts
//      (DispatchDataflowCheck.h), then every op type outside the supported set, all at once;
//   2. the component patterns (patterns/ComponentMatcher.h), one per component variant, each
//      rooted at its anchor op, in three phases;
//   3. the assembly of the residual stream (ResidualStream.h): layers numbered, norm and dense FFN
//      roles set, residual Adds as arith.addf;
//   4. legality: every data node must have a role in a recognised component (ComponentCoverage.h,
//      read on the graph before the patterns, so a node a pattern absorbed silently is still
//      named), and no ONNX node may be left once the components are built.
// A pattern that found its anchor but not the rest of its component recorded why; when the
// stream does not assemble, the earliest such failure is the error (one line naming the node).
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"
#include "passes/raise/ComponentCoverage.h"
#include "passes/raise/ContribMoeMatcher.h"
#include "passes/raise/DispatchDataflowCheck.h"
#include "passes/raise/GraphMatchers.h"
#include "passes/raise/ResidualStream.h"
#include "passes/raise/normalize/NormalizePatterns.h"
#include "passes/raise/patterns/ComponentMatcher.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/StringSet.h"

#include <string>
#include <vector>

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
                                        "GatherElements",
                                        "Not",
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
/// Error diagnostics held back: the coverage check reads the graph before the patterns change it,
/// but its findings come after the recognition errors.
struct HeldDiagnostics {
  std::vector<std::pair<Location, std::string>> errors;
  void emit() const {
    for (const auto &[loc, message] : errors)
      emitError(loc) << message;
  }
};

struct RaiseOnnxToMoePass : impl::RaiseOnnxToMoeBase<RaiseOnnxToMoePass> {
  using RaiseOnnxToMoeBase::RaiseOnnxToMoeBase;

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
    if (failed(raise(func)))
      return signalPassFailure();
  }

  /// Reports every node whose op type no component pattern knows, all at once.
  LogicalResult checkSupportedOps(func::FuncOp func) {
    bool ok = true;
    // One line for a partially traced expert_hit loop (every layer's Split says the same).
    for (NodeOp node : func.getOps<NodeOp>())
      if (std::string why = normalize::nonZeroSplitMismatch(node); !why.empty()) {
        node.emitError() << describe(node) << ": experts: " << why;
        return failure();
      }
    func.walk([&](NodeOp node) {
      if (isContribMoe(node))
        return; // onnxruntime's fused MoE (ContribMoeMatcher.h)
      if (std::string why = normalize::rotaryEmbeddingMismatch(node); !why.empty()) {
        node.emitError() << describe(node) << ": RotaryEmbedding: " << why;
        ok = false;
        return;
      }
      if (std::string why = normalize::groupQueryAttentionMismatch(node); !why.empty()) {
        node.emitError() << describe(node) << ": GroupQueryAttention: " << why;
        ok = false;
        return;
      }
      if (node.getDomain() == "com.microsoft" && node.getOpType() == "QMoE") {
        // onnxruntime's quantised MoE (int4/int8 expert weights with per-row scales): a model to
        // train needs its expert weights in floating point.
        auto bits = node.getOnnxAttrs().getAs<IntegerAttr>("expert_weight_bits");
        node.emitError() << describe(node)
                         << ": com.microsoft.QMoE (quantised experts, expert_weight_bits = "
                         << (bits ? std::to_string(bits.getInt()) : std::string("unset"))
                         << ") is not imported: training needs floating-point expert weights "
                            "(export com.microsoft.MoE, or the unfused experts)";
        ok = false;
        return;
      }
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

  /// The embedding width: the table Gather(W[vocab, hidden], ids) reads.
  static std::optional<int64_t> hiddenSize(func::FuncOp func) {
    std::optional<int64_t> hidden;
    for (NodeOp gather : consumers(func.getArgument(0), "Gather"))
      if (WeightOp w = weightOf(gather.getInputs()[0]);
          w && gather.getInputs()[1] == func.getArgument(0))
        if (auto shape = staticShape(w.getResult()); shape.size() == 2)
          hidden = shape[1];
    return hidden;
  }

  LogicalResult raise(func::FuncOp func) {
    auto idsType = llvm::dyn_cast<RankedTensorType>(func.getArgument(0).getType());
    std::optional<int64_t> hidden = hiddenSize(func);
    if (!hidden || !idsType || idsType.getRank() != 2)
      return func.emitError("no token embedding: the token-id input feeds no Gather from a weight");
    HeldDiagnostics coverage;
    if (!matchOnly) {
      ScopedDiagnosticHandler hold(func.getContext(), [&](Diagnostic &d) {
        if (d.getSeverity() != DiagnosticSeverity::Error)
          return failure(); // not ours to hold
        coverage.errors.emplace_back(d.getLocation(), d.str());
        return success();
      });
      (void)checkEveryNodeExplained(func);
    }

    MatchContext ctx(func, *hidden);
    if (failed(applyMatchPatterns(ctx)))
      return func.emitError("raise-onnx-to-moe: the match patterns did not converge");
    if (matchOnly) {
      // The per-pattern lit tests: every recorded failure still anchored in the IR.
      bool ok = true;
      while (auto recorded = ctx.earliestFailure()) {
        emitError(recorded->second.loc) << recorded->second.message;
        ctx.notifyOperationErased(recorded->first); // reported: forget it
        ok = false;
      }
      return success(ok);
    }
    ComponentMatcher m(ctx);
    if (failed(assembleResidualStream(m))) {
      auto recorded = ctx.earliestFailure();
      const MatchError &err = recorded ? recorded->second : *m.error;
      emitError(err.loc) << err.message;
      return failure();
    }
    if (!coverage.errors.empty()) {
      coverage.emit();
      return failure();
    }
    return eraseRecognisedGraph(func, ctx);
  }

  /// Every ONNX node is now dead; one that is still used sits outside every recognised component.
  LogicalResult eraseRecognisedGraph(func::FuncOp func, MatchContext &ctx) {
    Block &body = func.getBody().front();
    for (Operation &op : llvm::make_early_inc_range(llvm::reverse(body)))
      if (isa<NodeOp, onnxir::NoneOp>(op) && op.use_empty()) {
        ctx.notifyOperationErased(&op);
        op.erase();
      }
    for (Operation &op : body)
      if (auto node = dyn_cast<NodeOp>(op)) {
        if (auto recorded = ctx.earliestFailure()) {
          emitError(recorded->second.loc) << recorded->second.message;
          return failure();
        }
        return node.emitError() << describe(node)
                                << ": not part of any recognised component (embedding, RMSNorm, "
                                   "attention, router, experts, dense or shared FFN, head)";
      }
    for (Operation &op : llvm::make_early_inc_range(body))
      if (auto w = dyn_cast<WeightOp>(op); w && w->use_empty())
        w->erase();
    return success();
  }
};
} // namespace
} // namespace disagmoe
