//===- OnnxImporter.h - plain ONNX graph -> `onnx` dialect -----*- C++ -*-===//
//
// Builds a module with one `func.func @main` whose arguments are the graph's runtime inputs (token
// ids) and whose results are its outputs; every node becomes an `onnx.node`, every initializer an
// `onnx.weight` that references its bytes in the file, and every input the loader bound to a
// constant (Graph::boundInputs: attention_mask, position_ids) a `Constant` node of that name. Types
// carry the shapes inferred by the loader,
// `?` where a dim stayed unknown, unranked where not even the rank is known. With
// ImportOptions::foldKnownValues, shape computations whose values are known become constants.
//
// Built without exceptions (an MLIR library); errors are returned as values.
//
//===----------------------------------------------------------------------===//
#ifndef DISAGMOE_FRONTENDS_ONNX_ONNXIMPORTER_H
#define DISAGMOE_FRONTENDS_ONNX_ONNXIMPORTER_H

#include "frontends/onnx/OnnxLoader.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/Support/Error.h"

#include <string>

namespace disagmoe::onnxfe {

struct ImportOptions {
  /// Fold the nodes whose outputs Graph::knownValues holds (shape computations: Shape, Gather,
  /// Concat, Unsqueeze, Slice, Cast, arithmetic, ... of values known once the input dims are
  /// static) into `Constant` nodes that keep the folded node's name. A folded node is emitted only
  /// where an unfolded node (or a graph output) reads it; the others disappear, and so do the
  /// Shape nodes and the integer constants that only they read.
  bool foldKnownValues = false;
};

/// Imports `graph` into a new module. Fails with one line naming the file and the node or value
/// at fault (e.g. an element type MLIR cannot represent).
llvm::Expected<mlir::OwningOpRef<mlir::ModuleOp>>
importOnnxGraph(mlir::MLIRContext &context, const Graph &graph,
                const ImportOptions &options = ImportOptions());

} // namespace disagmoe::onnxfe

#endif
