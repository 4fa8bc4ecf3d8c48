//===- WeightDtypes.cpp - which initializer element types compile ---------===//
#include "compiler/pipeline/WeightDtypes.h"

#include <map>

namespace disagmoe {

bool checkWeightDtypes(const std::string &path,
                       const std::vector<onnxfe::Initializer> &initializers, std::string &note,
                       std::string &error) {
  using onnxfe::ElemType;
  std::map<std::string, size_t> lowPrecision; // dtype name -> initializers stored in it
  note.clear();
  for (const onnxfe::Initializer &init : initializers) {
    const ElemType t = init.info.type;
    const std::string dtype = onnxfe::elemTypeName(t);
    switch (t) {
    case ElemType::Float:
    case ElemType::Int64:
    case ElemType::Int32:
    case ElemType::Bool:
      continue;
    case ElemType::Float16:
    case ElemType::BFloat16:
      ++lowPrecision[dtype];
      continue;
    default:
      break;
    }
    const char *why =
        t == ElemType::Double ? "float64 weights are not imported: the plan computes in fp32 "
                                "(export the model in float32, float16 or bfloat16)"
        : t == ElemType::Int8 || t == ElemType::UInt8 || t == ElemType::Int16 ||
                t == ElemType::UInt16
            ? "quantised weights are not imported (weights must be float32, float16 or bfloat16)"
            : "not a type the compiler imports (weights float32, float16 or bfloat16; "
              "constants int64, int32 or bool)";
    error = path + ": initializer '" + init.info.name + "' is " + dtype + ": " + why;
    return false;
  }
  if (lowPrecision.empty())
    return true;
  std::string stored;
  for (const auto &[dtype, count] : lowPrecision)
    stored += (stored.empty() ? "" : " and ") + dtype + " (" + std::to_string(count) +
              (count == 1 ? " initializer)" : " initializers)");
  note = "weights stored in " + stored +
         ": the plan keeps them so and computes in fp32 on them (widened exactly); the "
         "export's roundings of activations and constants to that dtype are not performed";
  return true;
}

} // namespace disagmoe
