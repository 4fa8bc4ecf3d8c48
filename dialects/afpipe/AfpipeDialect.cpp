//===- AfpipeDialect.cpp --------------------------------------------------===//
#include "dialects/afpipe/AfpipeDialect.h"

using namespace mlir;
using namespace disagmoe::afpipe;

#include "dialects/afpipe/AfpipeDialect.cpp.inc"

void AfpipeDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "dialects/afpipe/AfpipeOps.cpp.inc"
      >();
}
