//===- AfpipeDialect.h - the `afpipe` schedule dialect --------------------===//
// Ops, attributes and units: AfpipeOps.td. Conversion to and from runtime/plan/Schedule.h:
// passes/schedule/ScheduleIR.h.
#ifndef DISAGMOE_DIALECTS_AFPIPE_AFPIPEDIALECT_H
#define DISAGMOE_DIALECTS_AFPIPE_AFPIPEDIALECT_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/RegionKindInterface.h"

#include "dialects/afpipe/AfpipeDialect.h.inc"

#define GET_OP_CLASSES
#include "dialects/afpipe/AfpipeOps.h.inc"

#endif
