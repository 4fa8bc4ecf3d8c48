//===- InlineFunctions.h - model-local functions inlined at load ----------===//
//
// torch's dynamo exporter (torch.onnx.export(..., dynamo=True)) can keep onnxscript functions as
// model-local FunctionProtos (ModelProto.functions, IR version 8+), called by one node each; the
// frontend's patterns read one flat graph, so the loader inlines every call before anything else
// looks at the graph. Semantics: the ONNX IR spec, "Functions" (onnx/docs/IR.md): formal inputs and
// outputs bind to the call's, attribute references (`ref_attr_name`) take the call's attribute or
// the function's default (`attribute_proto`, IR 9, read here from the unknown fields libonnx 1.12
// keeps), an attribute given by neither is absent.
//
// Internal to the loader (OnnxLoader.cpp); includes libonnx headers.
//
//===----------------------------------------------------------------------===//
#ifndef DISAGMOE_FRONTENDS_ONNX_INLINEFUNCTIONS_H
#define DISAGMOE_FRONTENDS_ONNX_INLINEFUNCTIONS_H

#include <onnx/onnx_pb.h>

#include <string>

namespace disagmoe::onnxfe {

/// Replaces every call of a model-local function in the main graph by the function's body
/// (recursively; values and nodes of a body are renamed "<call node>/<name>"), then clears
/// ModelProto.functions. A function that does not inline (defined twice, recursive, importing
/// another default-domain opset than the model, with graph-valued attributes, or called with
/// more inputs or outputs than it declares) is an error. Returns "" on success, else the error
/// without the file prefix: "function 'DOMAIN.NAME' called by node 'N': WHY".
std::string inlineLocalFunctions(onnx::ModelProto &model);

} // namespace disagmoe::onnxfe

#endif
