//===- ExternalData.h - external-data files hold what the model claims -*- C++ -*-===//
//
// An ONNX model may keep its initializers in external files (TensorProto.data_location EXTERNAL,
// external_data location/offset/length; onnx/docs/ExternalData.md). The loader does not open them
// (OnnxLoader.h: `inspect` works on a model whose weights are elsewhere), but a compiled plan
// points into them, so `disagmoe compile` checks before it writes anything that every such file
// that exists is a regular file long enough for every tensor's [offset, offset + length): a
// truncated file (or another model's) is refused at compile time, naming the tensor and the file,
// instead of a plan whose weights cannot be read. A file that does not exist here is not an error:
// a plan may be compiled where the weights are not (tests/e2e/check_variants.py), and
// disagmoe-run then refuses it naming the weight and the file.
//
//===----------------------------------------------------------------------===//
#ifndef DISAGMOE_COMPILER_PIPELINE_EXTERNALDATA_H
#define DISAGMOE_COMPILER_PIPELINE_EXTERNALDATA_H

#include "frontends/onnx/OnnxLoader.h"

#include <string>
#include <vector>

namespace disagmoe {

/// False with a one-line `error` for the first external initializer of model `path` whose file
/// exists but is not a regular file or is shorter than its offset + length:
///   "<path>: initializer 'W': external data file 'DIR/w.bin' is 20000 bytes, but the tensor's
///   bytes are [65536, 131072) (offset 65536, length 65536): the file is truncated or not this
///   model's"
/// or "... external data file 'DIR/w.bin' is not a regular file".
bool checkExternalData(const std::string &path,
                       const std::vector<onnxfe::Initializer> &initializers, std::string &error);

} // namespace disagmoe

#endif
