//===- MoeDialect.h - the `moe` component dialect ------------------------===//
#ifndef DISAGMOE_DIALECTS_MOE_MOEDIALECT_H
#define DISAGMOE_DIALECTS_MOE_MOEDIALECT_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/RegionKindInterface.h"
#include "mlir/Interfaces/ControlFlowInterfaces.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "dialects/moe/MoeDialect.h.inc"

#define GET_OP_CLASSES
#include "dialects/moe/MoeOps.h.inc"

#endif
