// Unit tests of frontends/onnx/OnnxImporter: folding of the values that static shape inference
// computes (ImportOptions::foldKnownValues), on shape_chain.onnx from make_bad_models.py.
#include "frontends/onnx/OnnxImporter.h"

#include "dialects/onnx/OnnxDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Verifier.h"

#include <gtest/gtest.h>

#include <map>
#include <sys/stat.h>

using namespace disagmoe;
using namespace mlir;

namespace {

const std::string kModels = DISAGMOE_TEST_MODELS_DIR;

bool exists(const std::string &p) {
  struct stat st;
  return ::stat(p.c_str(), &st) == 0;
}

struct Imported {
  MLIRContext context;
  OwningOpRef<ModuleOp> module;
  std::map<std::string, onnxir::NodeOp> byName;
  std::map<std::string, int> opTypes;
};

void import(Imported &out, bool fold, onnxfe::ShapeInference engine) {
  const std::string path = kModels + "/shape_chain.onnx";
  onnxfe::LoadOptions opts;
  opts.inputShapeOverride = {2, 8};
  opts.shapeInference = engine;
  onnxfe::Graph graph;
  onnxfe::LoadResult r = onnxfe::loadOnnxModel(path, opts, graph);
  ASSERT_TRUE(r.ok) << r.error;
  onnxfe::ImportOptions io;
  io.foldKnownValues = fold;
  auto imported = onnxfe::importOnnxGraph(out.context, graph, io);
  ASSERT_TRUE(static_cast<bool>(imported)) << llvm::toString(imported.takeError());
  out.module = std::move(*imported);
  ASSERT_TRUE(succeeded(verify(*out.module)));
  out.module->walk([&](onnxir::NodeOp node) {
    out.byName[node.getNodeName().str()] = node;
    ++out.opTypes[node.getOpType().str()];
  });
}

std::vector<int64_t> ints(onnxir::NodeOp constant) {
  std::vector<int64_t> v;
  auto dense = llvm::dyn_cast_or_null<DenseElementsAttr>(constant.getOnnxAttrs().get("value"));
  if (dense)
    for (const APInt &i : dense.getValues<APInt>())
      v.push_back(i.getSExtValue());
  return v;
}

class OnnxImporter : public ::testing::Test {
protected:
  void SetUp() override {
    if (!exists(kModels + "/stamp"))
      GTEST_SKIP() << "test models not generated (needs a Python with the onnx package)";
  }
};

TEST_F(OnnxImporter, FoldsShapeComputations) {
  Imported m;
  import(m, /*fold=*/true, onnxfe::ShapeInference::Static);
  // Shape -> Gather -> Unsqueeze -> Concat became one constant, under the Concat's name; the
  // Shape nodes, the index Gathers, the Unsqueezes and the constants only they read are gone.
  EXPECT_EQ(m.opTypes.count("Shape"), 0u);
  EXPECT_EQ(m.opTypes.count("Unsqueeze"), 0u);
  EXPECT_EQ(m.opTypes.count("Concat"), 0u);
  EXPECT_EQ(m.opTypes.count("Equal"), 0u);
  EXPECT_EQ(m.opTypes["Gather"], 1); // the embedding
  EXPECT_FALSE(m.byName.count("zero_c"));
  ASSERT_TRUE(m.byName.count("concat"));
  onnxir::NodeOp target = m.byName.at("concat");
  EXPECT_EQ(target.getOpType(), "Constant");
  EXPECT_EQ(ints(target), (std::vector<int64_t>{2, 8, 2, 4}));
  onnxir::NodeOp reshape = m.byName.at("split_heads");
  EXPECT_EQ(reshape.getInputs()[1].getDefiningOp(), target.getOperation());
  auto type = llvm::dyn_cast<RankedTensorType>(reshape.getOutputs()[0].getType());
  ASSERT_TRUE(type);
  EXPECT_EQ(type.getShape(), (ArrayRef<int64_t>{2, 8, 2, 4}));
  // A boolean shape value folds too (into i1 elements), and the Cast that reads it stays.
  ASSERT_TRUE(m.byName.count("equal4"));
  onnxir::NodeOp is4 = m.byName.at("equal4");
  EXPECT_EQ(is4.getOpType(), "Constant");
  auto bits = llvm::cast<DenseElementsAttr>(is4.getOnnxAttrs().get("value"));
  EXPECT_TRUE(bits.getElementType().isInteger(1));
  EXPECT_EQ(llvm::to_vector(bits.getValues<bool>()),
            (SmallVector<bool>{false, false, false, true}));
  EXPECT_EQ(m.byName.at("cast_mask").getOpType(), "Cast");
  auto out = m.module->lookupSymbol<func::FuncOp>("main").getFunctionType().getResult(0);
  EXPECT_EQ(llvm::cast<RankedTensorType>(out).getShape(), (ArrayRef<int64_t>{2, 8, 2, 4}));
}

TEST_F(OnnxImporter, NoFoldingKeepsEveryNode) {
  Imported m;
  import(m, /*fold=*/false, onnxfe::ShapeInference::Static);
  EXPECT_EQ(m.opTypes["Shape"], 2);
  EXPECT_EQ(m.opTypes["Concat"], 1);
  EXPECT_EQ(m.byName.at("concat").getOpType(), "Concat");
  auto type =
      llvm::dyn_cast<RankedTensorType>(m.byName.at("split_heads").getOutputs()[0].getType());
  ASSERT_TRUE(type);
  EXPECT_EQ(type.getShape(), (ArrayRef<int64_t>{2, 8, 2, 4}));
}

TEST_F(OnnxImporter, FoldingNeedsKnownValues) {
  // ONNX's inference computes no values: nothing folds, every node stays.
  Imported m;
  import(m, /*fold=*/true, onnxfe::ShapeInference::Onnx);
  EXPECT_EQ(m.opTypes["Shape"], 2);
  EXPECT_EQ(m.byName.at("concat").getOpType(), "Concat");
}

} // namespace
