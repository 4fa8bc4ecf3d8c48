//===- NewerOpsets.h - opsets 18-23 beside a libonnx that knows 17 ---------===//
//
// The loader accepts default-domain opsets 13..23 (what torch's TorchScript exporter, its dynamo
// exporter (opset 18 by default from torch 2.9), optimum and onnxruntime's tools write), but
// Debian's libonnx 1.12 has operator schemas up to opset 17 only. Its checker looks a node up as
// "the newest schema <= the model's opset", so a node written with an opset-18..23 signature
// (ReduceMean's axes as an input, Split's num_outputs, RMSNormalization, ...) fails there or is
// unknown. This file decides, node by node, which nodes the libonnx checker can check as they are,
// which ones the frontend checks itself (the operators whose newer forms the normalize patterns
// rewrite, passes/raise/normalize/NewerOpsetForms.cpp), and which ones it refuses.
//
// Operator signatures: the ONNX operator changelog (onnx/docs/Changelog.md, opsets 18..23) and,
// for SimplifiedLayerNormalization, onnxruntime's contrib operator schema (registered in the ONNX
// domain, version 1: onnxruntime/core/graph/contrib_ops/contrib_defs.cc).
//
// Internal to the loader (OnnxLoader.cpp); includes libonnx headers.
//
//===----------------------------------------------------------------------===//
#ifndef DISAGMOE_FRONTENDS_ONNX_NEWEROPSETS_H
#define DISAGMOE_FRONTENDS_ONNX_NEWEROPSETS_H

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <string>
#include <vector>

namespace disagmoe::onnxfe {

/// The default-domain opsets the loader accepts.
constexpr int64_t kMinOpset = 13;
constexpr int64_t kMaxOpset = 23;
/// The newest default-domain opset and IR version libonnx 1.12's checker knows.
constexpr int64_t kCheckerOpset = 17;
constexpr int64_t kCheckerIrVersion = 8;
/// The domain that hides a node from the libonnx checker for the duration of the check.
constexpr const char *kCheckedHereDomain = "disagmoe.checked_by_frontend";

/// Decides for one node of a model whose default-domain opset is `opset`: sets `checkedHere`
/// when the libonnx checker cannot check the node and this file checked it instead (inputs,
/// outputs and attribute names against the newer signature), and returns why the frontend does
/// not import the node ("" when it does, or when the checker can check it as it is).
std::string newerOpsetProblem(const onnx::NodeProto &node, int64_t opset, bool &checkedHere);

} // namespace disagmoe::onnxfe

#endif
