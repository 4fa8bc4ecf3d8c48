//===- Pipeline.h - the disagmoe compile pipeline -------------*- C++ -*-===//
//
// ONNX file -> `onnx` dialect -> raise -> partition -> groups -> exchange fusion -> placement ->
// exchange volume -> plan.json
// (docs/architecture.md, "The data path"). Used by the `disagmoe compile` CLI and by the tests.
//
//===----------------------------------------------------------------------===//
#ifndef DISAGMOE_COMPILER_PIPELINE_PIPELINE_H
#define DISAGMOE_COMPILER_PIPELINE_PIPELINE_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace disagmoe {

/// Shape used for a symbolic [batch, seq] input when no flag gives it.
inline constexpr int64_t kDefaultShape[2] = {2, 8};

struct CompileOptions {
  /// Static shape the plan is compiled for: unset means the model's static input dims, or
  /// kDefaultShape where the model leaves them symbolic. A value contradicting a static dim of the
  /// model is an error.
  std::optional<int64_t> batch, seqLen;
  int64_t attnRanks = 2, ffnRanks = 2, groups = 1;
  /// Side ("attention" or "ffn") that runs dense layers' FFNs and shared experts (assign-groups'
  /// dense-side and shared-experts-side options).
  std::string denseSide = "attention", sharedExpertsSide = "attention";
  /// Side that runs the embedding, and the final norm and head (embedding-side, head-side).
  std::string embeddingSide = "attention", headSide = "attention";
  /// Routing profile (docs/routing-profile.md) for expert placement; empty: contiguous split.
  std::string routingProfile;
  /// Stage names after which to print the IR: import, normalize, fold, raise, partition, groups,
  /// exchange, placement, volume, schedule (or the pass arguments normalize-onnx,
  /// fold-onnx-constants, raise-onnx-to-moe, partition-components, assign-groups, fuse-exchange,
  /// place-groups, exchange-volume, afpipe-schedule).
  std::vector<std::string> printIrAfter;
  bool printIrAfterAll = false;
  /// Stop after this stage (import, or a name of compileStages(); empty: run the whole pipeline).
  std::string stopAfter;
  /// Print the wall time of each phase (load, import, verify, each pass) to stderr.
  bool timing = false;
  /// The AF-Pipe schedule stage (afpipe-schedule's options): micro-batches per step (0: 2p) and
  /// the cluster YAML whose roofline sizes its instructions (empty: H800 nodes).
  int64_t microBatches = 0;
  std::string cluster;
};

/// Loads and imports `path`, runs the compile pipeline (passes/CompilePipeline.h, the one
/// `disagmoe-opt --disagmoe-compile` runs), and returns the placed module (with its verified
/// `afpipe.schedule` after the schedule stage). Fails with one line naming the file and the node,
/// or the flag (`--attn-ranks must be in [1, 65536], got 0`), at fault; options are checked before
/// the model is loaded. IR dumps go to `irOut`. Graph inputs besides the token ids are bound as
/// constants at the compiled shape (compiler/pipeline/InputBinding.h: attention_mask to ones,
/// position_ids to 0..seq-1) or refused; `notes`, when given, receives one line per input bound
/// and per conversion made at load (weights upcast to fp32), to print.
llvm::Expected<mlir::OwningOpRef<mlir::ModuleOp>>
compileOnnx(mlir::MLIRContext &context, const std::string &path, const CompileOptions &options,
            llvm::raw_ostream &irOut, std::vector<std::string> *notes = nullptr);

} // namespace disagmoe

#endif
