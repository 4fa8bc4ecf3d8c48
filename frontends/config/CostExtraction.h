//===- CostExtraction.h - `moe` IR -> the cost model's ModelShape -*- C++ -*-===//
//
// Reads the component ops of a `moe` module (raised from ONNX or built from a config, before or
// after partitioning) into runtime/cost's ModelShape, so the roofline and memory models work from
// the IR that is compiled. Built without exceptions.
//
//===----------------------------------------------------------------------===//
#ifndef DISAGMOE_FRONTENDS_CONFIG_COSTEXTRACTION_H
#define DISAGMOE_FRONTENDS_CONFIG_COSTEXTRACTION_H

#include "runtime/cost/ModelShape.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/Error.h"

#include <string>

namespace disagmoe::configfe {

/// Fills `out` from the module's component ops. Fails with one line naming the op or attribute
/// at fault (or the layer the cost model's validation rejects); `out` is then left unchanged.
llvm::Error extractModelShape(mlir::ModuleOp module, cost::ModelShape &out);

/// Number of parameters the module's weights hold (`moe.param` and `onnx.weight` results feeding
/// moe ops; synthetic router columns excluded). An independent count of the IR's weights.
double countIrParameters(mlir::ModuleOp module);

} // namespace disagmoe::configfe

#endif
