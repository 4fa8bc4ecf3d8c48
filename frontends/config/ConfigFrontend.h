//===- ConfigFrontend.h - a model's config.json -> `moe` IR ----*- C++ -*-===//
//
// The second frontend of the data path (docs/architecture.md, "The data path"): builds the same
// `moe` component IR that raising an ONNX export gives, from the Hugging Face `config.json` of a
// model family, with `moe.param` values (name and shape, no bytes) in place of `onnx.weight`
// references, so full-size models can be planned and simulated without their weights.
//
// Families (by "model_type"): deepseek (DeepSeek-MoE), qwen3_moe, gpt_oss, mixtral. MLA attention
// (deepseek_v2, deepseek_v3) is refused with the reason: `moe.attention` has no low-rank
// projections.
//
// Components `moe.attention` and `moe.experts` cannot name are written with discardable
// attributes that the cost extraction reads:
//  - `moe.sliding_window = W : i64` on an attention op with a sliding window (GPT-OSS's even
//  layers);
//  - `moe.kind = "shared"` on the experts op of shared experts (always active: one expert whose
//    SwiGLU intermediate is the shared experts' total, with a one-expert router whose gate is 1,
//    which sums the same way) and `moe.kind = "dense"` on a dense FFN built the same way;
//    their one-column router weights carry `moe.synthetic` and are not model parameters.
// Built without exceptions (an MLIR library); errors are returned as llvm::Error values.
//
//===----------------------------------------------------------------------===//
#ifndef DISAGMOE_FRONTENDS_CONFIG_CONFIGFRONTEND_H
#define DISAGMOE_FRONTENDS_CONFIG_CONFIGFRONTEND_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <string>
#include <vector>

namespace disagmoe::configfe {

/// The fields of config.json the frontend uses, normalised across families.
struct ModelConfig {
  std::string modelType, name;
  int64_t hidden = 0, layers = 0, heads = 0, kvHeads = 0, headDim = 0, vocab = 0;
  int64_t experts = 0, topK = 0, expertHidden = 0;
  int64_t sharedHidden = 0;     ///< total intermediate of the shared experts (0: none)
  int64_t denseHidden = 0;      ///< intermediate of the dense FFN layers
  std::vector<bool> denseLayer; ///< per layer: a dense FFN instead of experts
  std::vector<int64_t> window;  ///< per layer: sliding window (0: full attention)
  std::string scoring;          ///< moe.router scoring
  double ropeTheta = 10000, rmsEps = 1e-6;
  bool tiedEmbeddings = false;
};

/// Reads and normalises `path`. Fails with one line naming the file and the key at fault (or why
/// the family is not representable).
llvm::Expected<ModelConfig> parseModelConfig(const std::string &path);

/// Builds `func.func @main(%ids: tensor<batch x seqLen x i64>) -> logits` in the `moe` dialect.
/// Fails with one line naming the argument at fault (batch or sequence length below 1).
llvm::Expected<mlir::OwningOpRef<mlir::ModuleOp>> buildMoeModule(mlir::MLIRContext &context,
                                                                 const ModelConfig &config,
                                                                 int64_t batch, int64_t seqLen);

/// parseModelConfig + buildMoeModule + verification. Fails with one line naming the file and the
/// key at fault, or the first verifier diagnostic of the built IR.
llvm::Expected<mlir::OwningOpRef<mlir::ModuleOp>> importModelConfig(mlir::MLIRContext &context,
                                                                    const std::string &path,
                                                                    int64_t batch, int64_t seqLen);

} // namespace disagmoe::configfe

#endif
