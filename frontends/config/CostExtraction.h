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

#include <string>

namespace disagmoe::configfe {

/// On failure returns false with `error` naming the op or attribute at fault.
bool extractModelShape(mlir::ModuleOp module, cost::ModelShape &out, std::string &error);

/// Number of parameters the module's weights hold (`moe.param` and `onnx.weight` results feeding
/// moe ops; synthetic router columns excluded). An independent count of the IR's weights.
double countIrParameters(mlir::ModuleOp module);

} // namespace disagmoe::configfe

#endif
