//===- OnnxImporter.cpp - plain ONNX graph -> `onnx` dialect --------------===//
#include "frontends/onnx/OnnxImporter.h"

#include "dialects/onnx/OnnxDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"

#include <algorithm>

using namespace mlir;

namespace disagmoe::onnxfe {
namespace {

/// MLIR element type of an ONNX element type, or null for types we do not represent.
Type elementType(Builder &b, ElemType t) {
  switch (t) {
  case ElemType::Float:
    return b.getF32Type();
  case ElemType::Double:
    return b.getF64Type();
  case ElemType::Float16:
    return b.getF16Type();
  case ElemType::BFloat16:
    return b.getBF16Type();
  case ElemType::Int64:
    return b.getIntegerType(64);
  case ElemType::Int32:
    return b.getIntegerType(32);
  case ElemType::Int16:
    return b.getIntegerType(16);
  case ElemType::Int8:
    return b.getIntegerType(8);
  case ElemType::UInt8:
    return b.getIntegerType(8, /*isSigned=*/false);
  case ElemType::UInt16:
    return b.getIntegerType(16, false);
  case ElemType::UInt32:
    return b.getIntegerType(32, false);
  case ElemType::UInt64:
    return b.getIntegerType(64, false);
  case ElemType::Bool:
    return b.getI1Type();
  default:
    return {};
  }
}

/// Tensor type of a value: ranked with `?` for unknown dims, unranked without a shape, and f32
/// unranked where even the element type is unknown (shape inference gave up on it).
Type tensorType(Builder &b, const ValueInfo &info) {
  Type elem = elementType(b, info.type);
  if (!elem)
    elem = b.getF32Type();
  if (!info.hasShape)
    return UnrankedTensorType::get(elem);
  SmallVector<int64_t> dims;
  for (int64_t d : info.dims)
    dims.push_back(d < 0 ? ShapedType::kDynamic : d);
  return RankedTensorType::get(dims, elem);
}

/// Dense attribute holding a small tensor's bytes (little-endian, like the host; ONNX stores a
/// bool per byte, which MLIR's raw i1 buffers do not, so booleans are read one by one).
DenseElementsAttr denseOf(Builder &b, const TensorData &t) {
  Type elem = elementType(b, t.type);
  if (!elem)
    return {};
  auto type = RankedTensorType::get(t.dims, elem);
  if (t.type == ElemType::Bool) {
    if (static_cast<int64_t>(t.bytes.size()) != type.getNumElements())
      return {};
    SmallVector<bool> values;
    for (char byte : t.bytes)
      values.push_back(byte != 0);
    return DenseElementsAttr::get(type, ArrayRef<bool>(values));
  }
  bool splat = false;
  if (!DenseElementsAttr::isValidRawBuffer(type, ArrayRef<char>(t.bytes), splat))
    return {};
  return DenseElementsAttr::getFromRawBuffer(type, ArrayRef<char>(t.bytes));
}

mlir::Attribute convertAttribute(Builder &b, const onnxfe::Attribute &a) {
  using Kind = onnxfe::Attribute::Kind;
  switch (a.kind) {
  case Kind::Int:
    return b.getI64IntegerAttr(a.i);
  case Kind::Float:
    return b.getF32FloatAttr(static_cast<float>(a.f));
  case Kind::String:
    return b.getStringAttr(a.s);
  case Kind::Ints:
    return b.getI64ArrayAttr(a.ints);
  case Kind::Floats: {
    SmallVector<float> fs(a.floats.begin(), a.floats.end());
    return b.getF32ArrayAttr(fs);
  }
  case Kind::Strings: {
    SmallVector<StringRef> ss(a.strings.begin(), a.strings.end());
    return b.getStrArrayAttr(ss);
  }
  case Kind::Tensor:
    if (a.tensor)
      if (auto dense = denseOf(b, *a.tensor))
        return dense;
    return b.getUnitAttr();
  default:
    return b.getUnitAttr();
  }
}
} // namespace

llvm::Expected<OwningOpRef<ModuleOp>> importOnnxGraph(MLIRContext &context, const Graph &graph,
                                                      const ImportOptions &options) {
  auto fail = [](const std::string &message) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
  };
  context.loadDialect<onnxir::OnnxDialect, func::FuncDialect>();
  OpBuilder b(&context);
  Location loc = FileLineColLoc::get(&context, graph.path, 0, 0);
  OwningOpRef<ModuleOp> module = ModuleOp::create(loc);
  module->getOperation()->setAttr("onnx.source", b.getStringAttr(graph.path));
  module->getOperation()->setAttr("onnx.opset", b.getI64IntegerAttr(graph.opset));

  SmallVector<Type> inputTypes, outputTypes;
  for (const ValueInfo &in : graph.inputs)
    inputTypes.push_back(tensorType(b, in));
  for (const ValueInfo &out : graph.outputs) {
    auto it = graph.valueInfo.find(out.name);
    outputTypes.push_back(tensorType(b, it != graph.valueInfo.end() ? it->second : out));
  }
  b.setInsertionPointToEnd(module->getBody());
  auto func = b.create<func::FuncOp>(loc, "main", b.getFunctionType(inputTypes, outputTypes));
  Block *entry = func.addEntryBlock();
  b.setInsertionPointToEnd(entry);

  llvm::StringMap<Value> values(static_cast<unsigned>(graph.valueInfo.size()));
  for (auto [i, in] : llvm::enumerate(graph.inputs)) {
    values[in.name] = entry->getArgument(i);
    func.setArgAttr(i, "onnx.name", b.getStringAttr(in.name));
  }

  for (const Initializer &init : graph.initializers) {
    if (!init.hasFileRange) {
      // Varint-encoded inline data has no byte range; only small integer constants use it.
      if (!init.data) {
        return fail(graph.path + ": initializer '" + init.info.name + "': data has no byte range");
      }
    }
    Type type = tensorType(b, init.info);
    if (!elementType(b, init.info.type)) {
      return fail(graph.path + ": initializer '" + init.info.name + "': element type " +
                  elemTypeName(init.info.type) + " is not supported");
    }
    StringAttr name = b.getStringAttr(init.info.name);
    auto weight = b.create<onnxir::WeightOp>(
        NameLoc::get(name), type, name, b.getStringAttr(init.file),
        b.getI64IntegerAttr(static_cast<int64_t>(init.offset)),
        b.getI64IntegerAttr(
            static_cast<int64_t>(init.hasFileRange ? init.length : init.data->bytes.size())),
        init.data ? ElementsAttr(denseOf(b, *init.data)) : ElementsAttr(), UnitAttr(),
        /*row_stride=*/IntegerAttr(), /*stored_type=*/TypeAttr());
    values[init.info.name] = weight.getResult();
  }

  // Inputs bound to constants (LoadOptions::bindInput): a Constant named after the input, a splat
  // where every element is the same (an attention_mask of ones costs one element at any shape).
  for (const Graph::BoundInput &in : graph.boundInputs) {
    const TensorData &t = *in.value;
    const size_t esz = static_cast<size_t>(elemTypeSize(t.type));
    bool uniform = esz > 0 && !t.bytes.empty();
    for (size_t k = esz; uniform && k < t.bytes.size(); k += esz)
      uniform = std::equal(t.bytes.begin(), t.bytes.begin() + esz, t.bytes.begin() + k);
    TensorData one;
    if (uniform) {
      one.type = t.type;
      one.bytes.assign(t.bytes.begin(), t.bytes.begin() + esz);
    }
    DenseElementsAttr dense = denseOf(b, uniform ? one : t);
    if (dense && uniform)
      dense = DenseElementsAttr::get(RankedTensorType::get(t.dims, dense.getElementType()),
                                     dense.getValues<mlir::Attribute>()[0]);
    if (!dense)
      return fail(graph.path + ": graph input '" + in.info.name + "': its bound value of type " +
                  elemTypeName(t.type) + " cannot be represented");
    StringAttr name = b.getStringAttr(in.info.name);
    auto op = b.create<onnxir::NodeOp>(
        NameLoc::get(name, loc), TypeRange{dense.getType()}, b.getStringAttr("Constant"),
        ValueRange{}, name, b.getStringAttr(""),
        b.getDictionaryAttr({b.getNamedAttr(b.getStringAttr("value"), dense)}));
    values[in.info.name] = op.getResult(0);
  }

  // Folding: which nodes become constants, and which of those an unfolded node still reads.
  const size_t numNodes = graph.nodes.size();
  std::vector<char> folded(numNodes, 0);
  llvm::StringSet<> readByKept;
  if (options.foldKnownValues && !graph.knownValues.empty()) {
    for (size_t k = 0; k < numNodes; ++k) {
      const Node &node = graph.nodes[k];
      if (!node.domain.empty() || node.outputs.size() != 1 || node.outputs[0].empty())
        continue;
      // Identity stays: weights are read through it (torch dedups identical initializers).
      if (node.opType == "Constant")
        folded[k] = 1;
      else if (node.opType != "Identity" && graph.knownValues.count(node.outputs[0]))
        folded[k] = 2;
    }
    for (size_t k = 0; k < numNodes; ++k)
      if (!folded[k])
        for (const std::string &name : graph.nodes[k].inputs)
          readByKept.insert(name);
    for (const ValueInfo &out : graph.outputs)
      readByKept.insert(out.name);
  }

  StringAttr constantType = b.getStringAttr("Constant"), noDomain = b.getStringAttr("");
  StringAttr valueName = b.getStringAttr("value");
  DictionaryAttr noAttrs = b.getDictionaryAttr({});
  llvm::StringMap<StringAttr> opTypes;
  Value none;
  SmallVector<Value> operands;
  SmallVector<Type> resultTypes;
  for (size_t k = 0; k < numNodes; ++k) {
    const Node &node = graph.nodes[k];
    if (folded[k] && !readByKept.contains(node.outputs[0]))
      continue; // only folded nodes read it (or nothing does)
    StringAttr name = b.getStringAttr(node.name);
    if (folded[k] == 2) {
      // A shape computation with a known value: a Constant of that value, under the node's name.
      const TensorData &value = *graph.knownValues.at(node.outputs[0]);
      DenseElementsAttr dense;
      if (value.type == ElemType::Bool) {
        SmallVector<bool> bits;
        for (char c : value.bytes)
          bits.push_back(c != 0);
        dense = DenseElementsAttr::get(RankedTensorType::get(value.dims, b.getI1Type()),
                                       ArrayRef<bool>(bits));
      } else {
        dense = denseOf(b, value);
      }
      if (dense) {
        auto op = b.create<onnxir::NodeOp>(NameLoc::get(name, loc), TypeRange{dense.getType()},
                                           constantType, ValueRange{}, name, noDomain,
                                           b.getDictionaryAttr({b.getNamedAttr(valueName, dense)}));
        values[node.outputs[0]] = op.getResult(0);
        continue;
      }
      // Not representable as a dense attribute: emit the node itself.
    }
    operands.clear();
    for (const std::string &input : node.inputs) {
      if (input.empty()) {
        if (!none)
          none = b.create<onnxir::NoneOp>(loc, b.getNoneType()).getResult();
        operands.push_back(none);
        continue;
      }
      auto it = values.find(input);
      if (it == values.end()) {
        return fail(graph.path + ": node '" + node.name + "' (" + node.opType + "): input '" +
                    input + "' is not defined");
      }
      operands.push_back(it->second);
    }
    resultTypes.clear();
    for (const std::string &output : node.outputs) {
      auto it = graph.valueInfo.find(output);
      resultTypes.push_back(it != graph.valueInfo.end()
                                ? tensorType(b, it->second)
                                : Type(UnrankedTensorType::get(b.getF32Type())));
    }
    DictionaryAttr attrs = noAttrs;
    if (!node.attributes.empty()) {
      NamedAttrList list;
      for (const auto &[attrName, attr] : node.attributes)
        list.set(attrName, convertAttribute(b, attr));
      attrs = list.getDictionary(&context);
    }
    StringAttr &opType = opTypes[node.opType];
    if (!opType)
      opType = b.getStringAttr(node.opType);
    auto op = b.create<onnxir::NodeOp>(
        NameLoc::get(name, loc), resultTypes, opType, operands, name,
        node.domain.empty() ? noDomain : b.getStringAttr(node.domain), attrs);
    for (auto [output, result] : llvm::zip(node.outputs, op.getResults()))
      if (!output.empty())
        values[output] = result;
  }

  SmallVector<Value> results;
  for (const ValueInfo &out : graph.outputs) {
    auto it = values.find(out.name);
    if (it == values.end()) {
      return fail(graph.path + ": graph output '" + out.name + "' is not produced by any node");
    }
    results.push_back(it->second);
  }
  b.create<func::ReturnOp>(loc, results);
  return module;
}

} // namespace disagmoe::onnxfe
