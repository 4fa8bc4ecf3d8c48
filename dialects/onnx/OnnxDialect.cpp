//===- OnnxDialect.cpp ----------------------------------------------------===//
#include "dialects/onnx/OnnxDialect.h"

using namespace mlir;
using namespace disagmoe::onnxir;

#include "dialects/onnx/OnnxDialect.cpp.inc"

void OnnxDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "dialects/onnx/OnnxOps.cpp.inc"
      >();
}
