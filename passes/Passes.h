//===- Passes.h - the disagmoe pipeline passes ---------------------------===//
#ifndef DISAGMOE_PASSES_PASSES_H
#define DISAGMOE_PASSES_PASSES_H

#include "dialects/afpipe/AfpipeDialect.h"
#include "dialects/moe/MoeDialect.h"
#include "dialects/onnx/OnnxDialect.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace disagmoe {
#define GEN_PASS_DECL
#include "passes/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "passes/Passes.h.inc"
} // namespace disagmoe

#endif
