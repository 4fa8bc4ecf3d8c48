//===- FoldOnnxConstants.cpp - fold-onnx-constants: the Fold stage of raising ===//
//
// Every `onnx.node` whose inputs are all known at the compiled static shape (Constant nodes,
// integer and boolean initializers with their values kept, and the static shapes that Shape reads)
// becomes a `Constant` node of the same name holding its values (ConstantEvaluator.h), in one walk
// in program order, so folded results feed the next node's folding. Causal and sliding-window
// masks, position ids and shape arithmetic thus reach raise-onnx-to-moe as dense constants, and
// the matcher recognises a mask by its values, whatever ops built it (docs/architecture.md, "Raise:
// normalize, fold, match"). Float initializers are model parameters and are never folded (their
// bytes stay in the model file); neither are the transcendental ops of RoPE tables. A result above
// `max-elements` values stays unfolded, so folding never grows beyond the masks' own size. The
// normalize patterns are applied once more at the end, for those whose constants only folding
// reveals (torch's scaled_dot_product_attention scales q and k by sqrt(1/sqrt(E)) read from q's
// shape).
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"
#include "passes/raise/fold/ConstantEvaluator.h"

#include "passes/raise/normalize/NormalizePatterns.h"

#include "llvm/ADT/DenseMap.h"

#include <memory>

namespace disagmoe {
#define GEN_PASS_DEF_FOLDONNXCONSTANTS
#include "passes/Passes.h.inc"

namespace {
using namespace mlir;
using fold::HostTensor;
using onnxir::NodeOp;

struct FoldOnnxConstantsPass : impl::FoldOnnxConstantsBase<FoldOnnxConstantsPass> {
  using FoldOnnxConstantsBase::FoldOnnxConstantsBase;

  void runOnOperation() override {
    if (maxElements < 1) {
      getOperation().emitError() << "fold-onnx-constants: max-elements must be at least 1, got "
                                 << static_cast<int64_t>(maxElements);
      return signalPassFailure();
    }
    // Values known so far, by SSA value (each read from its attribute once).
    llvm::DenseMap<Value, std::unique_ptr<HostTensor>> known;
    auto valueOf = [&](Value v) -> const HostTensor * {
      auto it = known.find(v);
      if (it != known.end())
        return it->second.get();
      std::optional<HostTensor> t;
      if (auto node = v.getDefiningOp<NodeOp>()) {
        if (node.getOpType() == "Constant" && node.getDomain().empty())
          t = fold::fromAttr(node.getOnnxAttrs().getAs<ElementsAttr>("value"), maxElements);
      } else if (auto weight = v.getDefiningOp<onnxir::WeightOp>()) {
        // Integer and boolean initializers are shape data; float ones are parameters.
        auto type = llvm::cast<ShapedType>(weight.getType());
        if (weight.getValue() && !llvm::isa<FloatType>(type.getElementType()))
          t = fold::fromAttr(*weight.getValue(), maxElements);
      }
      if (!t)
        return nullptr;
      return (known[v] = std::make_unique<HostTensor>(std::move(*t))).get();
    };

    SmallVector<NodeOp> nodes;
    getOperation().walk([&](NodeOp node) { nodes.push_back(node); });
    OpBuilder b(&getContext());
    for (NodeOp node : nodes) {
      if (node.getOpType() == "Constant" || !fold::isFoldable(node.getOpType()))
        continue;
      // Trailing empty optional inputs (onnx.none) are absent; an empty one in the middle is not
      // folded.
      auto operands = node.getInputs();
      size_t count = operands.size();
      while (count > 0 && llvm::isa<NoneType>(operands[count - 1].getType()))
        --count;
      SmallVector<const HostTensor *> ins;
      bool unknown = false;
      for (size_t k = 0; k < count; ++k) {
        const HostTensor *t =
            llvm::isa<NoneType>(operands[k].getType()) ? nullptr : valueOf(operands[k]);
        unknown |= t == nullptr;
        ins.push_back(t);
      }
      // Shape reads only its input's static type, ConstantOfShape only its result type.
      if (unknown && node.getOpType() != "Shape" && node.getOpType() != "ConstantOfShape")
        continue;
      std::optional<HostTensor> result = fold::evaluate(node, ins, maxElements);
      if (!result)
        continue;
      auto type = llvm::cast<RankedTensorType>(node.getOutputs()[0].getType());
      b.setInsertionPoint(node);
      auto constant = b.create<NodeOp>(
          node.getLoc(), TypeRange{type}, b.getStringAttr("Constant"), ValueRange{},
          node.getNodeNameAttr(), b.getStringAttr(""),
          b.getDictionaryAttr({b.getNamedAttr("value", fold::toAttr(*result, type))}));
      known[constant.getResult(0)] = std::make_unique<HostTensor>(std::move(*result));
      node.getOutputs()[0].replaceAllUsesWith(constant.getResult(0));
      known.erase(node.getOutputs()[0]);
      SmallVector<Value> inputs(node.getInputs());
      node.erase();
      // An input read by nothing else needs its host copy no more (a mask's S x S steps would
      // otherwise all stay in memory until the end of the pass).
      for (Value v : inputs)
        if (v.use_empty())
          known.erase(v);
    }
    // Constants that only fed folded nodes (onnx.node is not Pure: nothing else removes them).
    SmallVector<NodeOp> dead;
    getOperation().walk([&](NodeOp node) {
      if (node.getOpType() == "Constant" && node->use_empty())
        dead.push_back(node);
    });
    for (NodeOp node : dead)
      node.erase();
    // The normalize patterns again: some match only once their constants are known (the scales
    // of torch's scaled_dot_product_attention, computed from q's shape).
    if (failed(normalize::applyNormalizeOnnxPatterns(getOperation()))) {
      getOperation().emitError("fold-onnx-constants: the normalize rewrites did not converge");
      signalPassFailure();
    }
  }
};

} // namespace
} // namespace disagmoe
