//===- MoeDialect.cpp -----------------------------------------------------===//
#include "dialects/moe/MoeDialect.h"

using namespace mlir;
using namespace disagmoe::moe;

#include "dialects/moe/MoeDialect.cpp.inc"

void MoeDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "dialects/moe/MoeOps.cpp.inc"
      >();
}
