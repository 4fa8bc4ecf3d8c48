// Compiled with -fno-exceptions -fno-rtti (see CMakeLists.txt), like the MLIR
// importer that consumes the loader: the header must compile and work here.
#include "frontends/onnx/OnnxLoader.h"

#include <string>

#if defined(__cpp_exceptions) || defined(__EXCEPTIONS)
#error "NoExceptionsUse.cpp must be compiled with -fno-exceptions"
#endif

namespace disagmoe_test {

bool loadWithoutExceptions(const std::string &path, std::string &error, size_t &numNodes) {
  disagmoe::onnxfe::LoadOptions opts;
  opts.dimParams = {{"batch", 2}, {"seq", 8}};
  disagmoe::onnxfe::Graph g;
  disagmoe::onnxfe::LoadResult r = disagmoe::onnxfe::loadOnnxModel(path, opts, g);
  error = r.error;
  numNodes = g.nodes.size();
  return r.ok;
}

} // namespace disagmoe_test
