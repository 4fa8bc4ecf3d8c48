// One rank's place in a plan and the tokens it holds: the bookkeeping that the forward worker
// (RankWorker.cpp) and the training worker (runtime/train/TrainWorker.h) share, so both place
// sequences and FFN-side work by one rule (docs/plan-format.md, `placement` and `dense_ffn`):
//  - sequence s of a batch lives on the attention rank at index s mod D_A of its group; its tokens
//    are the flat ids s*seqLen .. s*seqLen + seqLen - 1 ([batch, seqLen] row-major), ascending;
//  - layer l's FFN-side dense FFN or shared experts of sequence s run on position s mod D_F of the
//    layer's FFN group, and the FFN-side embedding / head of sequence s on position s mod D of
//    the group running them;
//  - an M2N message routes a token only to experts that the receiving F-rank holds.
// Which group runs an instruction is runtime/plan/InstructionRunner.h.
#pragma once

#include "runtime/exchange/Messages.h"
#include "runtime/plan/Plan.h"

#include <cstdint>
#include <vector>

namespace disagmoe {

class RankContext {
public:
  /// `rank`'s group and position in `plan`'s placement and, on an attention rank, its tokens of a
  /// batch of `batch` sequences of `seqLen` tokens (a micro-batch's, for training).
  RankContext(const Plan &plan, int rank, int64_t batch, int64_t seqLen);

  const Placement &placement;
  const int rank;
  const Group &group;
  const int64_t index; ///< position of `rank` in `group`
  const int64_t batch, seqLen;

  /// Flat ids of this rank's tokens, ascending (empty on an F-rank).
  const std::vector<int64_t> &tokens() const { return tokens_; }
  int64_t tokenCount() const { return static_cast<int64_t>(tokens_.size()); }
  /// Row of flat token `id` in this rank's buffers, or -1 when the token lives elsewhere.
  int64_t localRow(int64_t id) const;
  /// Position in layer l's FFN group of the F-rank that runs the FFN-side dense FFN / shared
  /// experts of flat token `id`: (id / seqLen) mod D_F.
  int64_t homeFfnIndex(int64_t layer, int64_t id) const;
  /// Whether sequence s is computed here by this rank's group (FFN-side embedding / head):
  /// s mod |group| == index.
  bool homeOfSequence(int64_t s) const;
  /// Throws ExecError ("M2N from rank SRC routes a token to expert E, which is not on this rank")
  /// when message `m` of layer l from `src` names an expert outside [0, E) or not placed on this
  /// rank.
  void checkM2nRoutes(const M2nMessage &m, int64_t layer, int src) const;

private:
  const ModelSpec &model_;
  std::vector<int64_t> tokens_;
};

} // namespace disagmoe
