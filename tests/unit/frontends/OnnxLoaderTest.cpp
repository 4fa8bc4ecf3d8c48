// Unit tests of frontends/onnx/OnnxLoader: the models come from make_bad_models.py
// (generated into the build directory at build time).
#include "frontends/onnx/OnnxLoader.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <dirent.h>
#include <fstream>
#include <set>
#include <sstream>
#include <sys/stat.h>

namespace disagmoe_test {
bool loadWithoutExceptions(const std::string &path, std::string &error, size_t &numNodes);
std::string runFuzzerStages(const std::string &path, std::string &error); // FuzzStages.cpp
bool compileUpToRaise(const std::string &path, std::string &error);       // FuzzStages.cpp
} // namespace disagmoe_test

using namespace disagmoe::onnxfe;

namespace {

const std::string kModels = DISAGMOE_TEST_MODELS_DIR;

bool exists(const std::string &p) {
  struct stat st;
  return ::stat(p.c_str(), &st) == 0;
}

uint64_t fileSize(const std::string &p) {
  struct stat st;
  return ::stat(p.c_str(), &st) == 0 ? static_cast<uint64_t>(st.st_size) : 0;
}

std::vector<char> readRange(const std::string &p, uint64_t offset, uint64_t length) {
  std::ifstream f(p, std::ios::binary);
  std::vector<char> buf(length);
  f.seekg(static_cast<std::streamoff>(offset));
  f.read(buf.data(), static_cast<std::streamsize>(length));
  if (!f)
    buf.clear();
  return buf;
}

std::vector<float> asFloats(const std::vector<char> &bytes) {
  std::vector<float> v(bytes.size() / 4);
  std::memcpy(v.data(), bytes.data(), v.size() * 4);
  return v;
}

void expectTopological(const Graph &g) {
  std::set<std::string> defined;
  for (const auto &i : g.inputs)
    defined.insert(i.name);
  for (const auto &i : g.initializers)
    defined.insert(i.info.name);
  for (const auto &n : g.nodes) {
    for (const auto &in : n.inputs)
      EXPECT_TRUE(in.empty() || defined.count(in))
          << "node " << n.name << " uses " << in << " before its producer";
    for (const auto &o : n.outputs)
      defined.insert(o);
  }
}

class OnnxLoader : public ::testing::Test {
protected:
  void SetUp() override {
    if (!exists(kModels + "/stamp"))
      GTEST_SKIP() << "test models not generated (" << kModels
                   << "/stamp missing): needs a Python with the onnx package";
  }
  static std::string model(const std::string &name) { return kModels + "/" + name; }

  /// Loads a model that must fail; returns the error.
  static std::string loadError(const std::string &name, LoadOptions opts = {}) {
    Graph g;
    LoadResult r = loadOnnxModel(model(name), opts, g);
    EXPECT_FALSE(r.ok) << name << " loaded, but should not";
    EXPECT_EQ(r.error.find('\n'), std::string::npos) << "error should be one line: " << r.error;
    EXPECT_EQ(r.error.rfind(model(name) + ": ", 0), 0u)
        << "error should start with the file: " << r.error;
    return r.error;
  }

  static const Initializer *findInit(const Graph &g, const std::string &name) {
    for (const auto &i : g.initializers)
      if (i.info.name == name)
        return &i;
    return nullptr;
  }
};

#define EXPECT_HAS(haystack, needle)                                                               \
  EXPECT_NE((haystack).find(needle), std::string::npos)                                            \
      << "expected '" << (needle) << "' in: " << (haystack)

// --- Files that are not (complete) ONNX models --------------------------------------

TEST_F(OnnxLoader, MissingFile) {
  std::string e = loadError("does_not_exist.onnx");
  EXPECT_HAS(e, "cannot open");
}

TEST_F(OnnxLoader, EmptyFile) {
  std::string e = loadError("empty.onnx");
  EXPECT_HAS(e, "empty file");
}

TEST_F(OnnxLoader, TextFileIsNotOnnx) {
  std::string e = loadError("not_onnx.txt");
  EXPECT_HAS(e, "not an ONNX model");
}

TEST_F(OnnxLoader, TruncatedFile) {
  std::string e = loadError("truncated.onnx");
  EXPECT_HAS(e, "truncated");
}

TEST_F(OnnxLoader, NoNodes) {
  std::string e = loadError("no_nodes.onnx");
  EXPECT_HAS(e, ": graph: has no nodes");
}

// --- Bad tensors ----------------------------------------------------------------------

TEST_F(OnnxLoader, NegativeDim) {
  std::string e = loadError("negative_dim.onnx");
  EXPECT_HAS(e, "initializer 'emb'");
  EXPECT_HAS(e, "negative dimension -2 at axis 0");
}

TEST_F(OnnxLoader, OverflowingDims) {
  std::string e = loadError("overflow_dims.onnx");
  EXPECT_HAS(e, "initializer 'emb'");
  EXPECT_HAS(e, "overflows int64");
}

TEST_F(OnnxLoader, ShortRawData) {
  std::string e = loadError("short_raw.onnx");
  EXPECT_HAS(e, "initializer 'emb'");
  EXPECT_HAS(e, "raw_data has 20 bytes, but dims [4,2] of float need 32 bytes");
}

TEST_F(OnnxLoader, LongRawData) {
  std::string e = loadError("long_raw.onnx");
  EXPECT_HAS(e, "initializer 'emb'");
  EXPECT_HAS(e, "raw_data has 40 bytes");
}

// --- Bad structure ----------------------------------------------------------------------

TEST_F(OnnxLoader, Cycle) {
  std::string e = loadError("cycle.onnx");
  EXPECT_HAS(e, "node 'add_a' (Add): is on a cycle: 'add_a' -> 'relu_b' -> 'add_a'");
}

TEST_F(OnnxLoader, UndefinedInput) {
  std::string e = loadError("undefined_input.onnx");
  EXPECT_HAS(e, "node 'add_ghost' (Add): input 'ghost' is not produced by any node, initializer or "
                "graph input");
}

TEST_F(OnnxLoader, UnnamedNodesAreNamedByIndex) {
  std::string e = loadError("undefined_input_unnamed.onnx");
  EXPECT_HAS(e, "node '#1' (Add): input 'ghost'");
}

TEST_F(OnnxLoader, DuplicateProducer) {
  std::string e = loadError("duplicate_producer.onnx");
  EXPECT_HAS(e, "node 'sigmoid2' (Sigmoid): output 'out' is also produced by node 'relu1' (Relu)");
}

TEST_F(OnnxLoader, UnsupportedOpset) {
  std::string e = loadError("opset11.onnx");
  EXPECT_HAS(e, "opset_import: default-domain opset 11");
  EXPECT_HAS(e, "supported: 13..23");
}

TEST_F(OnnxLoader, OpsetAboveTheRange) {
  std::string e = loadError("opset24.onnx");
  EXPECT_HAS(e, "opset_import: default-domain opset 24 is not supported (supported: 13..23)");
}

// Opset-18 signatures that libonnx 1.12 cannot check (ReduceMean's axes input, Split's
// num_outputs) load, and static shapes follow their opset-18 semantics.
TEST_F(OnnxLoader, Opset18Forms) {
  LoadOptions opts;
  opts.inputShapeOverride = {2, 5};
  Graph g;
  LoadResult r = loadOnnxModel(model("opset18_forms.onnx"), opts, g);
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(g.opset, 18);
  EXPECT_EQ(g.valueInfo.at("m").dims, (std::vector<int64_t>{2, 5, 1}));
  // Split-18: ceil(8 / 3) = 3, 3, then the rest, 2.
  EXPECT_EQ(g.valueInfo.at("s0").dims, (std::vector<int64_t>{2, 5, 3}));
  EXPECT_EQ(g.valueInfo.at("s1").dims, (std::vector<int64_t>{2, 5, 3}));
  EXPECT_EQ(g.valueInfo.at("s2").dims, (std::vector<int64_t>{2, 5, 2}));
}

TEST_F(OnnxLoader, Opset23RmsNormalizationAtIrVersion11) {
  LoadOptions opts;
  opts.inputShapeOverride = {1, 3};
  Graph g;
  LoadResult r = loadOnnxModel(model("opset23_rmsnorm.onnx"), opts, g);
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(g.opset, 23);
  EXPECT_EQ(g.irVersion, 11);
  EXPECT_EQ(g.outputs[0].dims, (std::vector<int64_t>{1, 3, 8}));
}

// Every node the frontend does not import at the model's opset is named in one line.
TEST_F(OnnxLoader, NewerOpsetNodesNotImportedAllAtOnce) {
  std::string e = loadError("opset23_not_imported.onnx");
  EXPECT_HAS(e, "opset 23: 4 nodes not imported: ");
  EXPECT_HAS(e, "node 'mean_axes_attr' (ReduceMean): attribute 'axes' is not an attribute of "
                "ReduceMean-18");
  EXPECT_HAS(e, "node 'pad_axes' (Pad): written with the signature of a later opset (4 inputs");
  EXPECT_HAS(e, "node 'gelu20' (Gelu): an opset-20 operator the frontend does not import");
  EXPECT_HAS(e, "node 'attention23' (Attention): attribute kv_num_heads = 2: 3-D q/k/v are not "
                "imported");
  EXPECT_EQ(e.find('\n'), std::string::npos);
  // An operator before the opset that introduced it.
  EXPECT_HAS(loadError("opset18_rmsnorm.onnx"),
             "node 'rms23' (RMSNormalization): not an operator of opsets 13..23");
}

TEST_F(OnnxLoader, LocalFunctionsAreInlined) {
  LoadOptions opts;
  opts.inputShapeOverride = {1, 3};
  Graph g;
  LoadResult r = loadOnnxModel(model("local_function.onnx"), opts, g);
  ASSERT_TRUE(r.ok) << r.error;
  std::vector<std::string> ops, names;
  for (const auto &n : g.nodes) {
    ops.push_back(n.opType);
    names.push_back(n.name);
  }
  EXPECT_EQ(ops, (std::vector<std::string>{"Gather", "Constant", "Mul", "Relu"}));
  EXPECT_EQ(names, (std::vector<std::string>{"embed", "scaled/c", "scaled/mul", "scaled/relu"}));
  EXPECT_EQ(g.nodes[2].inputs, (std::vector<std::string>{"h", "scaled/c"}));
  EXPECT_EQ(g.nodes[3].outputs, (std::vector<std::string>{"out"}));
  EXPECT_EQ(g.outputs[0].dims, (std::vector<int64_t>{1, 3, 8}));
  EXPECT_HAS(loadError("local_function_other_opset.onnx"),
             "function 'pkg.test.Scaled' called by node 'scaled': imports opset 17 of domain "
             "'ai.onnx', the model 18");
}

TEST_F(OnnxLoader, FloatTokenIds) {
  std::string e = loadError("float_ids.onnx");
  EXPECT_HAS(e, "graph input 'input_ids'");
  EXPECT_HAS(e, "int64 or int32, not float");
  // The token-id input can be named ...
  LoadOptions named;
  named.tokenIdsInput = "ids";
  EXPECT_HAS(loadError("float_ids.onnx", named), "no runtime input named 'ids'");
  // ... and the check turned off.
  LoadOptions opts;
  opts.checkTokenIds = false;
  Graph g;
  LoadResult r = loadOnnxModel(model("float_ids.onnx"), opts, g);
  EXPECT_TRUE(r.ok) << r.error;
}

TEST_F(OnnxLoader, OptionalEmptyInputIsAllowed) {
  Graph g;
  LoadResult r = loadOnnxModel(model("optional_input.onnx"), {}, g);
  ASSERT_TRUE(r.ok) << r.error;
  ASSERT_EQ(g.nodes.size(), 2u);
  EXPECT_EQ(g.nodes[1].inputs, (std::vector<std::string>{"h", "", "mx"}));
}

TEST_F(OnnxLoader, BadOptions) {
  LoadOptions opts;
  opts.dimParams = {{"batch", 0}};
  std::string e = loadError("good.onnx", opts);
  EXPECT_HAS(e, "dimParams: 'batch' = 0 must be >= 1");
}

// --- The good model ---------------------------------------------------------------------

TEST_F(OnnxLoader, GoodModel) {
  LoadOptions opts;
  opts.dimParams = {{"batch", 2}, {"seq", 8}};
  Graph g;
  LoadResult r = loadOnnxModel(model("good.onnx"), opts, g);
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_TRUE(r.warnings.empty());
  EXPECT_EQ(g.path, model("good.onnx"));
  EXPECT_EQ(g.opset, 17);
  EXPECT_EQ(g.irVersion, 8);
  EXPECT_EQ(g.producerName, "make_bad_models");

  ASSERT_EQ(g.inputs.size(), 1u);
  EXPECT_EQ(g.inputs[0].name, "input_ids");
  EXPECT_EQ(g.inputs[0].type, ElemType::Int64);
  EXPECT_EQ(g.inputs[0].dims, (std::vector<int64_t>{2, 8}));
  ASSERT_EQ(g.outputs.size(), 1u);
  EXPECT_EQ(g.outputs[0].name, "logits");
  EXPECT_EQ(g.outputs[0].type, ElemType::Float);
  EXPECT_EQ(g.outputs[0].dims, (std::vector<int64_t>{2, 8, 4}));

  // Shape inference filled the intermediate values.
  ASSERT_TRUE(g.valueInfo.count("h"));
  EXPECT_EQ(g.valueInfo.at("h").dims, (std::vector<int64_t>{2, 8, 8}));
  EXPECT_EQ(g.valueInfo.at("y").dims, (std::vector<int64_t>{2, 8, 4}));
  EXPECT_EQ(g.valueInfo.at("z").type, ElemType::Float);
  EXPECT_TRUE(g.valueInfo.at("z").isStatic());
  EXPECT_EQ(g.valueInfo.at("shp").dims, (std::vector<int64_t>{3}));
  EXPECT_EQ(g.valueInfo.at("r").dims, (std::vector<int64_t>{2, 8, 4}));
  EXPECT_EQ(g.valueInfo.at("W").dims, (std::vector<int64_t>{8, 4}));

  ASSERT_EQ(g.initializers.size(), 4u);
  const std::string file = model("good.onnx");
  const uint64_t size = fileSize(file);

  // emb: raw_data, 9600 bytes > kSmallTensorBytes: a file range, no copy.
  const Initializer *emb = findInit(g, "emb");
  ASSERT_NE(emb, nullptr);
  EXPECT_EQ(emb->info.type, ElemType::Float);
  EXPECT_EQ(emb->info.dims, (std::vector<int64_t>{300, 8}));
  EXPECT_FALSE(emb->external);
  EXPECT_TRUE(emb->hasFileRange);
  EXPECT_EQ(emb->file, file);
  EXPECT_EQ(emb->length, 300u * 8 * 4);
  EXPECT_LE(emb->offset + emb->length, size);
  EXPECT_EQ(emb->data, nullptr);
  {
    std::vector<float> v = asFloats(readRange(file, emb->offset, emb->length));
    ASSERT_EQ(v.size(), 2400u);
    for (size_t i = 0; i < v.size(); ++i)
      ASSERT_EQ(v[i], static_cast<float>(i) * 0.001f) << "emb[" << i << "]";
  }

  // W: the MatMul weight, raw_data, small: a file range and a copy.
  const Initializer *w = findInit(g, "W");
  ASSERT_NE(w, nullptr);
  EXPECT_TRUE(w->hasFileRange);
  EXPECT_EQ(w->length, 128u);
  ASSERT_NE(w->data, nullptr);
  EXPECT_EQ(w->data->dims, (std::vector<int64_t>{8, 4}));
  {
    std::vector<char> bytes = readRange(file, w->offset, w->length);
    EXPECT_EQ(bytes, w->data->bytes);
    std::vector<float> v = asFloats(bytes);
    ASSERT_EQ(v.size(), 32u);
    for (size_t i = 0; i < v.size(); ++i)
      ASSERT_EQ(v[i], static_cast<float>(i) * 0.25f - 1.0f) << "W[" << i << "]";
  }

  // bias: packed float_data: contiguous little-endian floats in the file.
  const Initializer *bias = findInit(g, "bias");
  ASSERT_NE(bias, nullptr);
  EXPECT_TRUE(bias->hasFileRange);
  EXPECT_EQ(bias->length, 16u);
  EXPECT_EQ(asFloats(readRange(file, bias->offset, bias->length)),
            (std::vector<float>{1, 2, 3, 4}));
  ASSERT_NE(bias->data, nullptr);
  EXPECT_EQ(asFloats(bias->data->bytes), (std::vector<float>{1, 2, 3, 4}));

  // shape: int64_data varints: no file range, always a copy.
  const Initializer *shape = findInit(g, "shape");
  ASSERT_NE(shape, nullptr);
  EXPECT_EQ(shape->info.type, ElemType::Int64);
  EXPECT_FALSE(shape->hasFileRange);
  ASSERT_NE(shape->data, nullptr);
  ASSERT_EQ(shape->data->bytes.size(), 24u);
  int64_t sv[3];
  std::memcpy(sv, shape->data->bytes.data(), 24);
  EXPECT_EQ(sv[0], 0);
  EXPECT_EQ(sv[1], -1);
  EXPECT_EQ(sv[2], 4);

  // Nodes, in file order (already sorted), with the Constant's tensor.
  ASSERT_EQ(g.nodes.size(), 6u);
  std::vector<std::string> names;
  for (const auto &n : g.nodes)
    names.push_back(n.name);
  EXPECT_EQ(names, (std::vector<std::string>{"embed", "proj", "add_bias", "shape_const", "reshape1",
                                             "reshape2"}));
  const Node &c = g.nodes[3];
  EXPECT_EQ(c.opType, "Constant");
  EXPECT_EQ(c.domain, "");
  ASSERT_EQ(c.attributes.size(), 1u);
  EXPECT_EQ(c.attributes[0].first, "value");
  const Attribute &a = c.attributes[0].second;
  EXPECT_EQ(a.kind, Attribute::Kind::Tensor);
  ASSERT_NE(a.tensor, nullptr);
  EXPECT_EQ(a.tensor->type, ElemType::Int64);
  EXPECT_EQ(a.tensor->dims, (std::vector<int64_t>{3}));
  ASSERT_EQ(a.tensor->bytes.size(), 24u);
  std::memcpy(sv, a.tensor->bytes.data(), 24);
  EXPECT_EQ(sv[1], -1);
  expectTopological(g);
}

TEST_F(OnnxLoader, UnknownTopLevelFieldIsSkipped) {
  Graph g;
  LoadResult r = loadOnnxModel(model("unknown_field.onnx"), {}, g);
  ASSERT_TRUE(r.ok) << r.error;
  const Initializer *w = findInit(g, "W");
  ASSERT_NE(w, nullptr);
  ASSERT_NE(w->data, nullptr);
  EXPECT_EQ(readRange(model("unknown_field.onnx"), w->offset, w->length), w->data->bytes);
}

TEST_F(OnnxLoader, SymbolicDimsStayDynamicWithoutParams) {
  Graph g;
  LoadResult r = loadOnnxModel(model("good.onnx"), {}, g);
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(g.inputs[0].dims, (std::vector<int64_t>{-1, -1}));
  EXPECT_TRUE(g.inputs[0].hasShape);
  EXPECT_FALSE(g.inputs[0].isStatic());
  EXPECT_EQ(g.valueInfo.at("h").dims.size(), 3u);
  EXPECT_EQ(g.valueInfo.at("h").dims[2], 8);
}

TEST_F(OnnxLoader, UnusedDimParamIsAWarning) {
  LoadOptions opts;
  opts.dimParams = {{"batch", 2}, {"seq", 8}, {"heads", 4}};
  Graph g;
  LoadResult r = loadOnnxModel(model("good.onnx"), opts, g);
  ASSERT_TRUE(r.ok) << r.error;
  ASSERT_EQ(r.warnings.size(), 1u);
  EXPECT_HAS(r.warnings[0], "'heads'");
}

TEST_F(OnnxLoader, InputShapeOverride) {
  LoadOptions opts;
  opts.inputShapeOverride = {3, 5};
  Graph g;
  LoadResult r = loadOnnxModel(model("good.onnx"), opts, g);
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(g.inputs[0].dims, (std::vector<int64_t>{3, 5}));
  EXPECT_EQ(g.valueInfo.at("y").dims, (std::vector<int64_t>{3, 5, 4}));
}

TEST_F(OnnxLoader, NoShapeInference) {
  LoadOptions opts;
  opts.inferShapes = false;
  Graph g;
  LoadResult r = loadOnnxModel(model("good.onnx"), opts, g);
  ASSERT_TRUE(r.ok) << r.error;
  ASSERT_TRUE(g.valueInfo.count("h"));
  EXPECT_EQ(g.valueInfo.at("h").type, ElemType::Undefined);
  EXPECT_FALSE(g.valueInfo.at("h").hasShape);
}

// --- resolveInputShape: one load that picks the input dims from the declared ones -------------

TEST_F(OnnxLoader, ResolveInputShapeFillsSymbolicDims) {
  LoadOptions opts;
  int calls = 0;
  ValueInfo seen;
  opts.resolveInputShape = [&](const ValueInfo &declared, std::vector<int64_t> &dims,
                               std::string &) {
    ++calls;
    seen = declared;
    dims = declared.dims;
    for (int64_t &d : dims)
      if (d < 0)
        d = 3; // a default for each symbolic dim
    return true;
  };
  Graph g;
  LoadResult r = loadOnnxModel(model("good.onnx"), opts, g);
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(seen.name, "input_ids");
  EXPECT_EQ(seen.dims, (std::vector<int64_t>{-1, -1}));
  EXPECT_EQ(g.inputs[0].dims, (std::vector<int64_t>{3, 3}));
  // The file's own dims stay visible: both were symbolic.
  ASSERT_EQ(g.declaredInputs.size(), 1u);
  EXPECT_EQ(g.declaredInputs[0].dims, (std::vector<int64_t>{-1, -1}));
  EXPECT_FALSE(g.declaredInputs[0].isStatic());
  // Shape inference ran with the resolved dims.
  EXPECT_EQ(g.valueInfo.at("y").dims, (std::vector<int64_t>{3, 3, 4}));
  std::vector<std::string> names;
  for (const auto &[name, seconds] : r.phases) {
    names.push_back(name);
    EXPECT_GE(seconds, 0.0);
  }
  // The default engine (Static) types the filled graph, so its phase comes after "fill".
  EXPECT_EQ(names, (std::vector<std::string>{"parse", "initializers", "graph checks",
                                             "onnx checker", "fill", "shape inference"}));
}

TEST_F(OnnxLoader, ResolveInputShapeSeesDimParams) {
  LoadOptions opts;
  opts.dimParams = {{"batch", 2}};
  opts.resolveInputShape = [&](const ValueInfo &declared, std::vector<int64_t> &dims,
                               std::string &) {
    EXPECT_EQ(declared.dims, (std::vector<int64_t>{2, -1}));
    dims = {2, 5};
    return true;
  };
  Graph g;
  LoadResult r = loadOnnxModel(model("good.onnx"), opts, g);
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(g.inputs[0].dims, (std::vector<int64_t>{2, 5}));
  EXPECT_EQ(g.declaredInputs[0].dims, (std::vector<int64_t>{-1, -1}));
}

TEST_F(OnnxLoader, ResolveInputShapeErrorIsTheLoadError) {
  LoadOptions opts;
  opts.resolveInputShape = [&](const ValueInfo &, std::vector<int64_t> &, std::string &error) {
    error = "--batch must be in [1, 1073741824], got 0";
    return false;
  };
  Graph g;
  LoadResult r = loadOnnxModel(model("good.onnx"), opts, g);
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.error, "--batch must be in [1, 1073741824], got 0");
}

TEST_F(OnnxLoader, ResolveInputShapeRunsAfterTheChecks) {
  // A broken file reports its own error; the callback never runs.
  LoadOptions opts;
  bool called = false;
  opts.resolveInputShape = [&](const ValueInfo &, std::vector<int64_t> &, std::string &) {
    called = true;
    return true;
  };
  std::string e = loadError("cycle.onnx", opts);
  EXPECT_HAS(e, "is on a cycle");
  EXPECT_FALSE(called);
}

TEST_F(OnnxLoader, ResolveInputShapeRejectsNonPositiveDims) {
  LoadOptions opts;
  opts.resolveInputShape = [&](const ValueInfo &, std::vector<int64_t> &dims, std::string &) {
    dims = {2, 0};
    return true;
  };
  std::string e = loadError("good.onnx", opts);
  EXPECT_HAS(e, "graph input 'input_ids': resolved dims [2,0] have a dim < 1");
}

// --- ShapeInference::Static ---------------------------------------------------------------

TEST_F(OnnxLoader, StaticShapesFoldShapeComputations) {
  LoadOptions opts;
  opts.inputShapeOverride = {2, 8};
  opts.shapeInference = ShapeInference::Static;
  Graph g;
  LoadResult r = loadOnnxModel(model("shape_chain.onnx"), opts, g);
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(g.valueInfo.at("h").dims, (std::vector<int64_t>{2, 8, 8}));
  EXPECT_EQ(g.valueInfo.at("r").dims, (std::vector<int64_t>{2, 8, 2, 4}));
  EXPECT_EQ(g.valueInfo.at("p").dims, (std::vector<int64_t>{2, 8, 2, 4}));
  EXPECT_EQ(g.valueInfo.at("mask").type, ElemType::Float);
  EXPECT_EQ(g.valueInfo.at("mask").dims, (std::vector<int64_t>{4}));
  EXPECT_EQ(g.outputs[0].dims, (std::vector<int64_t>{2, 8, 2, 4}));
  auto ints = [&](const std::string &name) {
    std::vector<int64_t> v;
    auto it = g.knownValues.find(name);
    if (it == g.knownValues.end())
      return v;
    EXPECT_EQ(it->second->type, ElemType::Int64) << name;
    v.resize(it->second->bytes.size() / 8);
    std::memcpy(v.data(), it->second->bytes.data(), v.size() * 8);
    return v;
  };
  EXPECT_EQ(ints("h_shape"), (std::vector<int64_t>{2, 8, 8}));
  EXPECT_EQ(ints("b"), (std::vector<int64_t>{2}));
  EXPECT_EQ(g.knownValues.at("b")->dims, (std::vector<int64_t>{}));
  EXPECT_EQ(ints("s1"), (std::vector<int64_t>{8}));
  EXPECT_EQ(ints("target"), (std::vector<int64_t>{2, 8, 2, 4}));
  EXPECT_EQ(ints("r_shape"), (std::vector<int64_t>{2, 8, 2, 4}));
  ASSERT_TRUE(g.knownValues.count("is4"));
  EXPECT_EQ(g.knownValues.at("is4")->type, ElemType::Bool);
  EXPECT_EQ(g.knownValues.at("is4")->bytes, (std::vector<char>{0, 0, 0, 1}));
  // Data values are not tracked, and constants are already constants.
  EXPECT_FALSE(g.knownValues.count("h"));
  EXPECT_FALSE(g.knownValues.count("mask")); // float
  EXPECT_FALSE(g.knownValues.count("zero"));
}

TEST_F(OnnxLoader, StaticShapesWithSymbolicDims) {
  // Without static input dims the chain's values stay unknown (values are tracked whole, not
  // element by element), its ranks known.
  LoadOptions opts;
  opts.shapeInference = ShapeInference::Static;
  Graph g;
  LoadResult r = loadOnnxModel(model("shape_chain.onnx"), opts, g);
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(g.valueInfo.at("h").dims, (std::vector<int64_t>{-1, -1, 8}));
  EXPECT_EQ(g.valueInfo.at("h_shape").dims, (std::vector<int64_t>{3}));
  EXPECT_EQ(g.valueInfo.at("target").dims, (std::vector<int64_t>{4}));
  EXPECT_EQ(g.valueInfo.at("r").dims, (std::vector<int64_t>{-1, -1, -1, -1}));
  EXPECT_FALSE(g.knownValues.count("h_shape"));
  EXPECT_FALSE(g.knownValues.count("target"));
  EXPECT_EQ(g.knownValues.count("r_shape"), 0u);
}

TEST_F(OnnxLoader, NoShapeInferenceWithStaticEngineSelected) {
  LoadOptions opts;
  opts.inferShapes = false;
  opts.shapeInference = ShapeInference::Static;
  Graph g;
  LoadResult r = loadOnnxModel(model("good.onnx"), opts, g);
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_FALSE(g.valueInfo.at("h").hasShape);
  EXPECT_TRUE(g.knownValues.empty());
}

TEST_F(OnnxLoader, UnsortedNodesAreSorted) {
  LoadOptions opts;
  opts.dimParams = {{"batch", 2}, {"seq", 8}};
  Graph g;
  LoadResult r = loadOnnxModel(model("unsorted.onnx"), opts, g);
  ASSERT_TRUE(r.ok) << r.error;
  ASSERT_EQ(g.nodes.size(), 6u);
  expectTopological(g);
  EXPECT_EQ(g.valueInfo.at("y").dims, (std::vector<int64_t>{2, 8, 4}));
}

// --- External data ----------------------------------------------------------------------

TEST_F(OnnxLoader, ExternalData) {
  Graph g;
  LoadResult r = loadOnnxModel(model("external.onnx"), {}, g);
  ASSERT_TRUE(r.ok) << r.error;
  const Initializer *emb = findInit(g, "emb");
  const Initializer *w = findInit(g, "W");
  ASSERT_NE(emb, nullptr);
  ASSERT_NE(w, nullptr);
  const std::string bin = model("weights.bin");
  EXPECT_TRUE(emb->external);
  EXPECT_TRUE(emb->hasFileRange);
  EXPECT_EQ(emb->file, bin);
  EXPECT_EQ(emb->offset, 64u);
  EXPECT_EQ(emb->length, 32u);
  EXPECT_EQ(emb->data, nullptr); // never read at load time
  EXPECT_TRUE(w->external);
  EXPECT_EQ(w->file, bin);
  EXPECT_EQ(w->offset, 96u);
  EXPECT_EQ(w->length, 128u); // no "length" key: from dims
  EXPECT_EQ(w->data, nullptr);
  std::vector<float> e = asFloats(readRange(bin, emb->offset, emb->length));
  EXPECT_EQ(e, (std::vector<float>{0, 0.5f, 1, 1.5f, 2, 2.5f, 3, 3.5f}));
  std::vector<float> wv = asFloats(readRange(bin, w->offset, w->length));
  ASSERT_EQ(wv.size(), 32u);
  for (size_t i = 0; i < wv.size(); ++i)
    EXPECT_EQ(wv[i], static_cast<float>(i) * 0.25f - 1.0f);
  // The inline initializer of the same model still points into the .onnx file.
  const Initializer *p = findInit(g, "P");
  ASSERT_NE(p, nullptr);
  EXPECT_FALSE(p->external);
  EXPECT_EQ(p->file, model("external.onnx"));
}

TEST_F(OnnxLoader, MissingExternalFileIsNotAnError) {
  Graph g;
  LoadResult r = loadOnnxModel(model("external_missing.onnx"), {}, g);
  ASSERT_TRUE(r.ok) << r.error;
  const Initializer *emb = findInit(g, "emb");
  const Initializer *w = findInit(g, "W");
  ASSERT_NE(emb, nullptr);
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(emb->file, model("missing.bin"));
  EXPECT_EQ(w->file, model("sub/missing2.bin"));
  EXPECT_EQ(w->offset, 0u);
  EXPECT_EQ(w->length, 128u);
  EXPECT_FALSE(exists(w->file));
}

TEST_F(OnnxLoader, ExternalLengthMismatch) {
  std::string e = loadError("external_bad_length.onnx");
  EXPECT_HAS(e, "initializer 'emb'");
  EXPECT_HAS(e, "external_data length is 20 bytes, but dims [4,2] of float need 32 bytes");
}

TEST_F(OnnxLoader, ExternalLocationOutsideModelDir) {
  std::string e = loadError("external_escape.onnx");
  EXPECT_HAS(e, "initializer 'emb'");
  EXPECT_HAS(e, "points outside the model's directory");
}

// --- Callers without exceptions ---------------------------------------------------------

TEST_F(OnnxLoader, UsableFromCodeWithoutExceptions) {
  std::string err;
  size_t n = 0;
  EXPECT_TRUE(disagmoe_test::loadWithoutExceptions(model("good.onnx"), err, n)) << err;
  EXPECT_EQ(n, 6u);
  EXPECT_FALSE(disagmoe_test::loadWithoutExceptions(model("not_onnx.txt"), err, n));
  EXPECT_HAS(err, "not an ONNX model");
}

// --- The sample export ------------------------------------------------------------------

TEST(OnnxLoaderSample, MixtralTiny) {
  const std::string path =
      std::string(DISAGMOE_SOURCE_DIR) + "/samples/models/mixtral_tiny/model.onnx";
  if (!exists(path))
    GTEST_SKIP() << path
                 << " does not exist (generate it with samples/models/mixtral_tiny/export.py)";
  LoadOptions opts;
  opts.dimParams = {{"batch", 2}, {"seq", 8}};
  Graph g;
  LoadResult r = loadOnnxModel(path, opts, g);
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_TRUE(r.warnings.empty()) << r.warnings[0];
  EXPECT_EQ(g.opset, 17);
  // Expected counts come from onnx.load in make_bad_models.py (written at build time).
  std::ifstream expect(kModels + "/mixtral_tiny.expect");
  if (expect) {
    size_t inits = 0, nodes = 0;
    std::string key;
    while (expect >> key) {
      if (key == "initializers")
        expect >> inits;
      else if (key == "nodes")
        expect >> nodes;
      else
        expect.ignore(1 << 20, '\n');
    }
    EXPECT_EQ(g.initializers.size(), inits);
    EXPECT_EQ(g.nodes.size(), nodes);
  } else {
    EXPECT_GT(g.initializers.size(), 0u);
  }
  ASSERT_EQ(g.inputs.size(), 1u);
  EXPECT_EQ(g.inputs[0].name, "input_ids");
  EXPECT_EQ(g.inputs[0].dims, (std::vector<int64_t>{2, 8}));
  for (const auto &init : g.initializers) {
    ASSERT_TRUE(init.hasFileRange) << init.info.name;
    uint64_t size = fileSize(init.file);
    EXPECT_LE(init.offset + init.length, size) << init.info.name;
    EXPECT_EQ(static_cast<int64_t>(init.length), [&] {
      int64_t n = elemTypeSize(init.info.type);
      for (int64_t d : init.info.dims)
        n *= d;
      return n;
    }()) << init.info.name;
  }
  size_t staticValues = 0, dynamicValues = 0;
  for (const auto &[name, vi] : g.valueInfo)
    (vi.isStatic() ? staticValues : dynamicValues)++;
  EXPECT_GT(staticValues, 0u);
  std::cout << "[ INFO     ] mixtral_tiny: " << g.nodes.size() << " nodes, "
            << g.initializers.size() << " initializers, " << staticValues << " static / "
            << dynamicValues << " non-static values\n";
  expectTopological(g);
}

// Static shape inference against ONNX's (with data propagation) on every committed export: where
// both know a dim they agree, element types agree, and the static pass types at least as many
// values statically as ONNX does.
TEST(OnnxLoaderSample, StaticShapesAgreeWithOnnx) {
  const std::string root = std::string(DISAGMOE_SOURCE_DIR) + "/samples/models/";
  std::vector<std::string> paths;
  for (const char *rel :
       {"mixtral_tiny/model.onnx", "mixtral_e32/model.onnx",
        "mixtral_variants/opset13_fold/model.onnx",
        "mixtral_variants/opset14_nofold_softmax_topk/model.onnx",
        "mixtral_variants/opset15_nofold/model.onnx",
        "mixtral_variants/opset16_topk_softmax/model.onnx",
        "mixtral_variants/opset17_external/model.onnx", "qwen3_moe_tiny/model.onnx",
        "deepseek_moe_tiny/model.onnx", "gpt_oss_tiny/model.onnx"})
    if (exists(root + rel))
      paths.push_back(root + rel);
  if (paths.empty())
    GTEST_SKIP() << "no sample exports under " << root;
  for (const std::string &path : paths) {
    SCOPED_TRACE(path);
    LoadOptions opts;
    opts.inputShapeOverride = {2, 8};
    opts.shapeInference = ShapeInference::Onnx;
    Graph onnxGraph, staticGraph;
    LoadResult r = loadOnnxModel(path, opts, onnxGraph);
    ASSERT_TRUE(r.ok) << r.error;
    opts.shapeInference = ShapeInference::Static;
    r = loadOnnxModel(path, opts, staticGraph);
    ASSERT_TRUE(r.ok) << r.error;
    size_t onnxStatic = 0, ourStatic = 0, both = 0;
    for (const auto &[name, ours] : staticGraph.valueInfo) {
      const ValueInfo &theirs = onnxGraph.valueInfo.at(name);
      onnxStatic += theirs.isStatic();
      ourStatic += ours.isStatic();
      if (ours.type != ElemType::Undefined && theirs.type != ElemType::Undefined)
        EXPECT_EQ(ours.type, theirs.type) << name;
      if (!ours.hasShape || !theirs.hasShape)
        continue;
      ASSERT_EQ(ours.dims.size(), theirs.dims.size()) << name;
      for (size_t d = 0; d < ours.dims.size(); ++d)
        if (ours.dims[d] >= 0 && theirs.dims[d] >= 0)
          EXPECT_EQ(ours.dims[d], theirs.dims[d]) << name << " dim " << d;
      both += ours.isStatic() && theirs.isStatic();
    }
    EXPECT_GE(ourStatic, onnxStatic);
    std::cout << "[ INFO     ] " << path.substr(root.size()) << ": " << staticGraph.valueInfo.size()
              << " values, static: ONNX " << onnxStatic << ", ours " << ourStatic << ", both "
              << both << "; " << staticGraph.knownValues.size() << " known shape values\n";
  }
}

// Inputs on which the fuzzer once crashed the process (tests/fuzz/regressions; each input's origin
// is in tests/fuzz/README.md). Each one goes through the stages the fuzzer runs (load, import,
// verify, raise: FuzzStages.cpp) and through `disagmoe compile`'s pipeline up to the raise stage,
// and must end as recorded below: refused with a one-line message naming the file and holding the
// recorded text, or accepted. The folder must exist, and hold exactly the files of the table.
struct FuzzRegression {
  const char *file;
  const char *fuzzerStage; // "ok", or the stage that refuses it: load, import, verify, raise
  const char *message;     // nullptr: accepted; else a substring of the one-line error
};
// All three are mutations of the traced DeepSeek moe_infer_v1 export
// (samples/models/deepseek_moe_tiny/moe_infer_v1, 739 nodes, same size): once the loader's fixes
// let them through load, import and verify, the raise stage refuses them as it refuses that export
// (tests/lit/raise/refuse-moe-infer.test): its per-expert counts are constants baked from the
// traced batch.
constexpr const char *kBakedCounts =
    "node '/layers.1/mlp/Slice' (Slice): the MoE dispatch cuts the token-expert pairs sorted by";
const FuzzRegression kFuzzRegressions[] = {
    {"shape-of-untyped-reshape.onnx", "raise", kBakedCounts},
    {"concat-of-untyped-unsqueeze.onnx", "raise", kBakedCounts},
    {"expand-rank-from-huge-dim.onnx", "raise", kBakedCounts},
};

TEST(OnnxLoaderFuzzRegressions, EachInputEndsAsRecorded) {
  const std::string dir = std::string(DISAGMOE_SOURCE_DIR) + "/tests/fuzz/regressions";
  std::set<std::string> listed;
  for (const FuzzRegression &r : kFuzzRegressions)
    listed.insert(r.file);
  std::set<std::string> present;
  DIR *d = ::opendir(dir.c_str());
  ASSERT_NE(d, nullptr) << dir << ": the fuzz regressions folder is missing";
  while (dirent *e = ::readdir(d))
    if (e->d_name[0] != '.')
      present.insert(e->d_name);
  ::closedir(d);
  ASSERT_FALSE(present.empty()) << dir << " is empty";
  for (const std::string &name : present)
    EXPECT_TRUE(listed.count(name))
        << dir << "/" << name << " has no recorded outcome in kFuzzRegressions";
  for (const FuzzRegression &r : kFuzzRegressions) {
    SCOPED_TRACE(r.file);
    const std::string path = dir + "/" + r.file;
    ASSERT_TRUE(exists(path)) << path << " is listed but missing";
    std::string error;
    const std::string stage = disagmoe_test::runFuzzerStages(path, error);
    EXPECT_EQ(stage, r.fuzzerStage) << error;
    if (stage != "ok")
      EXPECT_FALSE(error.empty()) << "the " << stage
                                  << " stage refused the input without a message";
    const bool ok = disagmoe_test::compileUpToRaise(path, error);
    if (!r.message) {
      EXPECT_TRUE(ok) << error;
      continue;
    }
    ASSERT_FALSE(ok) << "accepted, expected a refusal holding \"" << r.message << "\"";
    EXPECT_FALSE(error.empty());
    EXPECT_EQ(error.find('\n'), std::string::npos) << "the error is not one line: " << error;
    EXPECT_NE(error.find(path), std::string::npos) << "the error does not name the file: " << error;
    EXPECT_NE(error.find(r.message), std::string::npos) << error;
  }
}

} // namespace
