//===- OnnxOps.cpp - verifiers of the `onnx` dialect ----------------------===//
#include "dialects/onnx/OnnxDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpImplementation.h"

using namespace mlir;
using namespace disagmoe::onnxir;

LogicalResult NodeOp::verify() {
  if (getOpType().empty())
    return emitOpError("node '") << getNodeName() << "' has an empty op_type";
  return success();
}

LogicalResult WeightOp::verify() {
  auto type = llvm::dyn_cast<RankedTensorType>(getResult().getType());
  if (!type || !type.hasStaticShape())
    return emitOpError("weight '") << getWeightName() << "' must have a static tensor type";
  if (getTransposed() && type.getRank() != 2)
    return emitOpError("weight '") << getWeightName() << "' is marked transposed but has rank "
                                   << type.getRank() << " (only 2-D weights can be)";
  if (getOffset() < 0 || getLength() < 0)
    return emitOpError("weight '") << getWeightName() << "' has a negative offset or length";
  // The bytes on disk: the result's element type, or the narrower stored_type it was widened from.
  Type stored = type.getElementType();
  if (std::optional<Type> storedType = getStoredType()) {
    if (!llvm::isa<Float16Type, BFloat16Type>(*storedType) || !type.getElementType().isF32())
      return emitOpError("weight '")
             << getWeightName() << "' has stored_type " << *storedType << " under a "
             << type.getElementType() << " result (only f16 or bf16 widened to f32)";
    stored = *storedType;
  }
  if (!stored.isIntOrFloat())
    return emitOpError("weight '")
           << getWeightName() << "' has element type " << stored << ", not an integer or float";
  unsigned bits = stored.getIntOrFloatBitWidth();
  int64_t expected = type.getNumElements() * ((bits + 7) / 8);
  if (std::optional<uint64_t> stride = getRowStride()) {
    if (type.getRank() != 2 || getTransposed())
      return emitOpError("weight '")
             << getWeightName() << "' has a row_stride but is not a 2-D weight read as stored";
    if (static_cast<int64_t>(*stride) < type.getDimSize(1) * ((bits + 7) / 8))
      return emitOpError("weight '")
             << getWeightName() << "' has row_stride " << *stride << " bytes, less than its rows' "
             << type.getDimSize(1) * ((bits + 7) / 8);
  }
  if (getLength() != expected)
    return emitOpError("weight '") << getWeightName() << "' has length " << getLength()
                                   << " bytes but its type needs " << expected;
  return success();
}

#define GET_OP_CLASSES
#include "dialects/onnx/OnnxOps.cpp.inc"
