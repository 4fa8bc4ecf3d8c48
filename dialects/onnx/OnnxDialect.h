//===- OnnxDialect.h - the `onnx` import dialect -------------------------===//
#ifndef DISAGMOE_DIALECTS_ONNX_ONNXDIALECT_H
#define DISAGMOE_DIALECTS_ONNX_ONNXDIALECT_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "dialects/onnx/OnnxDialect.h.inc"

#define GET_OP_CLASSES
#include "dialects/onnx/OnnxOps.h.inc"

#endif
