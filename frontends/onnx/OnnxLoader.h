//===- OnnxLoader.h - ONNX model -> plain C++ graph ------------*- C++ -*-===//
//
// Loads an ONNX model file into a plain struct graph that the MLIR importer
// (frontends/onnx, built with -fno-exceptions) consumes.
//
// The loader itself is compiled with exceptions and RTTI because libonnx throws;
// this header includes no onnx or protobuf header, and no function declared here
// throws: every failure comes back as a value (LoadResult).
//
// Weights are never copied into the graph: every initializer carries the file,
// byte offset and byte length of its little-endian data, and only small tensors
// (shape constants, inv_freq, ...) also carry their bytes. External weight files
// are never opened at load time.
//
//===----------------------------------------------------------------------===//
#ifndef DISAGMOE_FRONTENDS_ONNX_ONNXLOADER_H
#define DISAGMOE_FRONTENDS_ONNX_ONNXLOADER_H

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace disagmoe::onnxfe {

/// Element types, numbered as ONNX's TensorProto.DataType.
enum class ElemType : int {
  Undefined = 0,
  Float = 1,
  UInt8 = 2,
  Int8 = 3,
  UInt16 = 4,
  Int16 = 5,
  Int32 = 6,
  Int64 = 7,
  String = 8,
  Bool = 9,
  Float16 = 10,
  Double = 11,
  UInt32 = 12,
  UInt64 = 13,
  Complex64 = 14,
  Complex128 = 15,
  BFloat16 = 16,
};

/// Size of one element in bytes; 0 for Undefined, String and codes this loader does not know.
int64_t elemTypeSize(ElemType t) noexcept;
/// Lower-case name as ONNX spells it ("float", "int64", "bfloat16", ...); "undefined" for unknown
/// codes.
const char *elemTypeName(ElemType t) noexcept;

/// Tensors whose data has at most this many bytes get their bytes copied into
/// Initializer::data (shape constants, inv_freq, ...).
inline constexpr uint64_t kSmallTensorBytes = 4096;
/// RoPE cos/sin caches (of RotaryEmbedding, GroupQueryAttention) up to this many bytes keep their
/// bytes too, inline ones only: the compiler checks them against theta^(-2i/d) (64 MiB: a
/// [131072, 128] float cache).
inline constexpr uint64_t kRotaryCacheBytes = 64ull << 20;

/// The contents of a tensor held in memory.
struct TensorData {
  ElemType type = ElemType::Undefined;
  /// Static shape; [] for a scalar. Never negative.
  std::vector<int64_t> dims;
  /// product(dims) * elemTypeSize(type) bytes, little-endian, row-major.
  /// Empty for String tensors (see `strings`).
  std::vector<char> bytes;
  /// Elements of a String tensor, row-major; empty otherwise.
  std::vector<std::string> strings;
};

/// One attribute of a node.
struct Attribute {
  enum class Kind { Int, Float, String, Ints, Floats, Strings, Tensor, Graph, Other };
  Kind kind = Kind::Other;
  int64_t i = 0;                    ///< Kind::Int
  double f = 0;                     ///< Kind::Float
  std::string s;                    ///< Kind::String (raw bytes); Kind::Graph: the subgraph's name
  std::vector<int64_t> ints;        ///< Kind::Ints
  std::vector<double> floats;       ///< Kind::Floats
  std::vector<std::string> strings; ///< Kind::Strings
  /// Kind::Tensor: the tensor with its data always copied (Constant nodes'
  /// `value` lands here, whatever its size). Subgraphs (Kind::Graph) are not converted.
  std::shared_ptr<TensorData> tensor;
};

/// Type and shape of one value (graph input/output, node output or initializer).
struct ValueInfo {
  std::string name;
  /// Undefined for non-tensor values (sequences, optionals) and unknown types.
  ElemType type = ElemType::Undefined;
  /// One entry per axis; -1 marks a dynamic or unknown dimension. Meaningful only when hasShape.
  std::vector<int64_t> dims;
  /// False when not even the rank is known.
  bool hasShape = false;

  /// True when hasShape and no dim is -1.
  bool isStatic() const noexcept;
};

/// A graph initializer (a weight). Its bytes stay in the file.
struct Initializer {
  /// Name, element type and (always static) shape.
  ValueInfo info;
  /// The file that holds the data: the model path as passed to loadOnnxModel for
  /// inline data, or <directory of the model>/<location> for external data.
  std::string file;
  /// Byte offset of the first element in `file`, and byte count
  /// (= product(dims) * elemTypeSize). Valid only when hasFileRange.
  uint64_t offset = 0, length = 0;
  /// True when the data lives in an external file (TensorProto.data_location == EXTERNAL).
  /// The external file is not opened at load time and need not exist.
  bool external = false;
  /// True when bytes [offset, offset + length) of `file` are the tensor's data,
  /// little-endian and contiguous: inline raw_data, inline packed float_data /
  /// double_data, and external data. False only for inline data in a
  /// non-contiguous encoding (varint int32_data / int64_data / uint64_data,
  /// strings); those always get `data`.
  bool hasFileRange = false;
  /// The tensor's contents, set for inline tensors of at most kSmallTensorBytes
  /// bytes and for inline tensors without a file range; null otherwise (and always
  /// null for external data).
  std::shared_ptr<TensorData> data;
};

/// One ONNX node.
struct Node {
  /// `name` may be empty in the file; the loader then names it "#<index in the file>".
  std::string name, opType, domain;
  /// Value names; an empty string is an omitted optional input/output.
  std::vector<std::string> inputs, outputs;
  /// In file order.
  std::vector<std::pair<std::string, Attribute>> attributes;
};

/// The loaded model.
struct Graph {
  /// The model path as passed to loadOnnxModel.
  std::string path;
  /// Opset version of the default ("" / "ai.onnx") domain, in [13, 23] (NewerOpsets.h).
  int64_t opset = 0;
  /// Every opset_import entry, domain -> version ("" for the default domain).
  std::map<std::string, int64_t> opsetImports;
  int64_t irVersion = 0;
  std::string producerName, producerVersion;
  /// Graph inputs that are not initializers (the runtime inputs), with dims after
  /// specialisation by LoadOptions; and graph outputs, with inferred types. The inputs that
  /// LoadOptions::bindInput bound to constants are not runtime inputs (see boundInputs).
  std::vector<ValueInfo> inputs, outputs;
  /// Graph inputs bound to constant values by LoadOptions::bindInput (an attention_mask of ones,
  /// position_ids 0..S-1), in graph-input order: their type has the value's dims, and the importer
  /// emits each as a `Constant` node named after the input.
  struct BoundInput {
    ValueInfo info;
    std::shared_ptr<TensorData> value;
  };
  std::vector<BoundInput> boundInputs;
  /// The runtime inputs as the file declares them, before any LoadOptions specialisation
  /// (-1 for a symbolic or unknown dim): which dims were static in the model.
  std::vector<ValueInfo> declaredInputs;
  /// In file order.
  std::vector<Initializer> initializers;
  /// Topologically sorted: every node comes after the producers of its inputs
  /// (stable: file order is kept wherever it is already valid).
  std::vector<Node> nodes;
  /// Every named value (graph inputs, initializers, node outputs, graph outputs)
  /// with its type and shape after shape inference; values inference could not
  /// type have type Undefined and hasShape false.
  std::unordered_map<std::string, ValueInfo> valueInfo;
  /// With ShapeInference::Static: the contents of the integer and boolean values that shape
  /// computations produce once the input dims are static (Shape, Gather, Concat, Unsqueeze,
  /// arithmetic on them, ...), for tensors of at most kMaxKnownElements elements. The
  /// importer folds the nodes that compute them into constants. Empty otherwise.
  std::unordered_map<std::string, std::shared_ptr<TensorData>> knownValues;
};

/// Largest tensor (in elements) whose contents static shape inference tracks.
inline constexpr int64_t kMaxKnownElements = 1024;

/// How Graph::valueInfo is filled.
enum class ShapeInference {
  /// Declared types only (graph inputs, outputs, value_info, initializers).
  None,
  /// ONNX's shape inference (libonnx), with data propagation. For trusted files only (tests use
  /// it as an oracle for Static): libonnx 1.12 dereferences a null type when a Shape node's input
  /// was left untyped by a failed inference upstream (found by tests/fuzz on a mutated export),
  /// so a malformed file can crash the process instead of failing.
  Onnx,
  /// The loader's own propagation of static shapes and element types (OnnxStaticShapes.cpp),
  /// which also computes the values of shape computations (Graph::knownValues). Linear in the
  /// graph's size, for the ops of the supported decoders; outputs of other ops stay untyped.
  Static,
};

/// How to load.
struct LoadOptions {
  /// Values for symbolic dimensions (dim_param), e.g. {"batch": 2, "seq": 8}.
  /// Substituted in the graph's inputs, outputs and value_info before shape
  /// inference. Names that no graph input uses produce a warning, not an error.
  /// Values must be >= 1.
  std::map<std::string, int64_t> dimParams;
  /// If non-empty, the first runtime graph input gets exactly these dims
  /// (applied after dimParams). Values must be >= 1.
  std::vector<int64_t> inputShapeOverride;
  /// Run shape inference to fill Graph::valueInfo (false: ShapeInference::None).
  bool inferShapes = true;
  /// Which shape inference runs when inferShapes is set.
  ShapeInference shapeInference = ShapeInference::Static;
  /// If set, called once the file has passed every check before shape inference (parse,
  /// initializers, graph structure, token ids, onnx checker) with the first runtime input as
  /// declared (after dimParams and inputShapeOverride; dims -1 where symbolic). It returns true
  /// with `dims`, which that input then gets (as with inputShapeOverride), or false with
  /// `error`, which fails loading with exactly that message. Lets a caller fill symbolic dims
  /// from defaults and check requested dims against static ones in the same load.
  std::function<bool(const ValueInfo &declared, std::vector<int64_t> &dims, std::string &error)>
      resolveInputShape;
  /// If set, called for every runtime input after the first (the token ids), after
  /// resolveInputShape, with that input as declared (dims -1 where symbolic) and the token ids'
  /// resolved dims (empty without resolveInputShape). It returns true with `value`, a tensor of
  /// the input's element type whose dims the declared ones admit: the input is then bound to that
  /// constant (Graph::boundInputs) and is no runtime input; or false with `error`, which fails
  /// loading with exactly that message. Unset: every runtime input stays one.
  std::function<bool(const ValueInfo &declared, const std::vector<int64_t> &tokenDims,
                     TensorData &value, std::string &error)>
      bindInput;
  /// Require the token-id input to be int64 or int32.
  bool checkTokenIds = true;
  /// Name of the token-id input; empty = the input named input_ids, else the one runtime input a
  /// plan does not bind (not attention_mask, position_ids, past_key_values.*), moved first; a
  /// graph with several runtime inputs and neither is refused naming them.
  std::string tokenIdsInput;
};

/// Outcome of loadOnnxModel.
struct LoadResult {
  bool ok = false;
  /// One line when !ok, naming the file and the culprit:
  ///   "<file>: node '<name>' (<OpType>): <what>"   for a node,
  ///   "<file>: initializer '<name>': <what>"       for a weight,
  ///   "<file>: <field>: <what>"                     otherwise (e.g. "opset_import", "graph").
  /// Errors reported: cannot open / empty file; not an ONNX model (protobuf
  /// parse failed, or no graph); truncated or corrupt file; file over 2 GiB;
  /// no nodes; default-domain opset outside 13..23; nodes of opsets 18..23 the frontend does
  /// not import, all in one line ("<file>: opset N: K nodes not imported: node ...; node ...");
  /// a model-local function that does not inline (InlineFunctions.h); onnx checker failures;
  /// negative dims, dim products overflowing int64, data sizes not matching
  /// dims, external data without location or with an absolute/".." location;
  /// undefined node inputs, values produced twice, cycles, graph outputs nothing
  /// produces; token-id input of a non-integer type; bad LoadOptions; shape
  /// inference failures; sparse initializers; the error of LoadOptions::resolveInputShape or
  /// bindInput, and a bound value whose element type or dims the input's declaration does not
  /// admit.
  std::string error;
  /// Non-fatal notes (e.g. unused dimParams names). May be non-empty when ok.
  std::vector<std::string> warnings;
  /// Wall time of each loading phase in seconds, in order ("parse", "initializers", "graph
  /// checks", "onnx checker", "shape inference", "fill"; ShapeInference::Static runs on the
  /// filled graph, after "fill"), for --timing reports.
  std::vector<std::pair<std::string, double>> phases;
};

/// ShapeInference::Static on a loaded graph whose nodes are topologically sorted: types the node
/// outputs in graph.valueInfo (keeping what is declared) and fills graph.knownValues.
void propagateStaticShapes(Graph &graph) noexcept;

/// Loads, checks and shape-infers `path` into `out` (which is overwritten).
/// On failure `out` is left in an unspecified but valid state.
LoadResult loadOnnxModel(const std::string &path, const LoadOptions &opts, Graph &out) noexcept;

} // namespace disagmoe::onnxfe

#endif // DISAGMOE_FRONTENDS_ONNX_ONNXLOADER_H
