//===- ResidualStream.h - assembling the raised components into a decoder --------===//
//
// After the match patterns (patterns/ComponentMatcher.h) the function holds moe component ops
// joined by the ONNX residual Adds. The assembly walks the residual stream from the embedding:
//
//   x -> rms_norm -> attention | mla_attention ; h = x + attention          (arith.addf)
//   h -> rms_norm -> router -> experts [+ dense_ffn (shared)] ; x' = h [+ shared] + experts
//                 |  dense_ffn (a dense layer)                ; x' = h + dense
//   x -> rms_norm -> head                                      (the final norm)
//
// numbering the layers, setting each norm's role (attn_norm, ffn_norm, final_norm) and each
// dense FFN's (dense or shared, with its number of shared experts), replacing the residual Adds
// by arith.addf on [batch, seq, hidden], and checking the head produces the only graph output.
// What the patterns leave unraised shows here as a missing link, reported at the node where the
// stream breaks.
//
//===----------------------------------------------------------------------===//
#ifndef DISAGMOE_PASSES_RAISE_RESIDUALSTREAM_H
#define DISAGMOE_PASSES_RAISE_RESIDUALSTREAM_H

#include "passes/raise/patterns/ComponentMatcher.h"

namespace disagmoe::raise {

/// Assembles ctx.func as above and sets its result type to the logits [batch, seq, vocab].
/// On failure sets `m.error` (the node where the stream breaks and what was expected there) and
/// leaves the IR partly assembled (the pass then fails).
mlir::LogicalResult assembleResidualStream(ComponentMatcher &m);

} // namespace disagmoe::raise

#endif
