//===- ComponentMatcher.h - the match stage of raising: component patterns ---------===//
//
// The Match stage of raising (normalize -> fold -> match): one OpRewritePattern per component
// variant, each rooted at its anchor op and in its own file here, replacing the component's
// output with one `moe` op in place:
//
//   phase 1  EmbeddingPattern      Gather(W[vocab, hidden], token ids)          -> moe.embedding
//            RmsNormPattern        ReduceMean of Pow(x, 2), weight [hidden]     -> moe.rms_norm
//   phase 2  AttentionPattern      Softmax of Q K^T, three projections (GQA)    -> moe.attention
//            MlaAttentionPattern   Softmax of Q K^T, q_proj + kv_a (MLA)        ->
//            moe.mla_attention RouterPattern         TopK of the router logits -> moe.router
//            SwiGluFfnPattern      Sigmoid of silu(x W1) on an RMSNorm output   -> moe.dense_ffn
//            SigmoidRouterPattern  TopK of sigmoid scores [+ correction bias, group mask]
//                                  (DeepSeek-V3)                               -> moe.router
//            ContribMoePattern     com.microsoft.MoE                 -> moe.router + moe.experts
//            HeadPattern           MatMul(x, W) producing the graph output      -> moe.head
//   phase 3  ExpertsLoopPattern        moe.router whose ids feed a OneHot (HF's loop) ->
//   moe.experts
//            ExpertsDenseMaskedPattern moe.router ids into ScatterElements(zeros, ids, gates)
//            ExpertsEinsumPattern      moe.router ids gathering stacked weights into an Einsum
//
// A phase's patterns read the ops of the phases before it (the FFN and experts patterns start
// from a raised RMSNorm, the experts from a raised router), so the phases run in order, each
// greedily to a fixed point. A pattern erases the ONNX nodes its component absorbed once nothing
// reads them. The layer index and the role of norms and dense FFNs are not local facts: the
// patterns leave them pending (layer -1, role ""), and raise-onnx-to-moe's assembly of the
// residual stream sets them (RaiseOnnxToMoe.cpp).
//
// A pattern that finds its anchor but not the rest of its component records why (the node at
// fault and what was expected there) in the MatchContext; the pass reports the failure of the
// earliest anchor left unraised: one line naming the node at fault.
//
//===----------------------------------------------------------------------===//
#ifndef DISAGMOE_PASSES_RAISE_PATTERNS_COMPONENTMATCHER_H
#define DISAGMOE_PASSES_RAISE_PATTERNS_COMPONENTMATCHER_H

#include "dialects/moe/MoeDialect.h"
#include "passes/raise/GraphMatchers.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/PatternMatch.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringMap.h"

#include <optional>
#include <string>
#include <utility>

namespace disagmoe::raise {

struct NormMatch {
  mlir::Value input, output;
  WeightOp weight;
  double eps = 0;
};

struct AttentionMatch {
  mlir::Value input, output;
  WeightOp wq, wk, wv, wo;
  WeightOp bq, bk, bv, bo; // projection biases (GPT-OSS), or null
  WeightOp qNorm, kNorm;   // per-head RMSNorm weights [head_dim] (Qwen3), or null
  double qkNormEps = 0;
  WeightOp sinks;            // per-head sink logits [heads] (GPT-OSS), or null
  int64_t slidingWindow = 0; // 0: full causal attention
  int64_t heads = 0, kvHeads = 0, headDim = 0;
  double ropeTheta = 0;
  bool ropeInterleaved = false;          // RoPE on GPT-J's pairs (moe.attention's rope_interleaved)
  llvm::SmallVector<double> ropeInvFreq; // a scaled RoPE's frequencies (YaRN), or empty
  double ropeAttentionFactor = 1.0;      // YaRN's factor on cos and sin
  NodeOp softmax;
};

/// DeepSeek-V2's multi-head latent attention (q_lora_rank null).
struct MlaMatch {
  mlir::Value input, output;
  WeightOp wq, wkvA, kvNorm, wkvB, wo;
  double kvNormEps = 0, ropeTheta = 0, softmaxScale = 0;
  int64_t heads = 0, nope = 0, rope = 0, v = 0, rank = 0;
  bool interleaved = false;
  NodeOp softmax;
};

struct RouterMatch {
  mlir::Value input;
  mlir::Operation *topk = nullptr; // the TopK node, or the moe.router that replaced it
  WeightOp weight;
  WeightOp bias;            // added to the logits (GPT-OSS), or null
  double scalingFactor = 0; // routed_scaling_factor (DeepSeek); 0 when absent
  int64_t numExperts = 0, topK = 0;
  std::string scoring;
  mlir::Value ids, gates;
  // DeepSeek-V3 (sigmoid scorings): e_score_correction_bias [experts] (or null), and the
  // group-limited choice's n_group / topk_group (1 / 1: no groups).
  WeightOp correctionBias;
  int64_t nGroup = 1, topkGroup = 1;
};

struct ExpertMatch {
  int64_t expert = -1;
  WeightOp w1, w3, w2;
  WeightOp b1, b3, b2; // biases (GPT-OSS), or null
};

/// The form of a layer's experts: plain SwiGLU, or GPT-OSS's clamped SwiGLU on a fused,
/// interleaved gate/up projection.
struct ExpertForm {
  bool oai = false;
  double limit = 0, alpha = 0;
  std::optional<bool> fusedGateUp; // set by the com.microsoft.MoE reader; otherwise fused iff oai
  std::string plain; // non-gated activation (relu, gelu_tanh, silu, identity; com.microsoft.MoE)
};

/// An always-on SwiGLU FFN on the FFN norm output: a dense layer's FFN or the shared experts.
struct FfnMatch {
  WeightOp w1, w3, w2;
  mlir::Value output;
  int64_t inner = 0;
  NodeOp sigmoid;
};

/// A match failure: where, and what was expected there (formatted when recorded, so it survives
/// the erasure of the node it names).
struct MatchError {
  mlir::Location loc;
  std::string message;
};

/// What the patterns of one raise-onnx-to-moe run share: the compiled shapes, the mask verdicts
/// and expert-row walks (each computed once, dropped when their op is erased), and the failures
/// recorded per anchor. Listens to the greedy driver's erasures.
class MatchContext : public mlir::RewriterBase::Listener {
public:
  /// `func` holds the ONNX graph, token ids [batch, seq] as argument 0; `hidden` is the embedding
  /// width. Activations are f32 [batch, seq, hidden]; router results [batch * seq, top_k].
  MatchContext(mlir::func::FuncOp func, int64_t hidden);

  mlir::func::FuncOp func;
  mlir::RankedTensorType actType;
  int64_t tokens; // batch * seq, or dynamic

  MaskAnalysis masks;
  /// ExpertsLoopPattern's walk from an expert's rows: (OneHot mask value, expert id) candidates.
  llvm::DenseMap<mlir::Value, llvm::SmallVector<std::pair<mlir::Value, int64_t>, 2>>
      expertCandidates;

  /// Records why the component anchored at `anchor` did not match (the first reason per anchor).
  void recordFailure(mlir::Operation *anchor, MatchError error);
  /// The earliest anchor (in the function's original node order) still in the IR with a recorded
  /// failure, and the failure; nullopt if none.
  std::optional<std::pair<mlir::Operation *, MatchError>> earliestFailure() const;
  /// `op` keeps `original`'s place in the node order (a moe op standing for the node it raised).
  void inheritOrder(mlir::Operation *op, mlir::Operation *original);
  /// "node 'NAME' (TYPE)" of the node `op` is or stands for (see inheritOrder), else the op name.
  std::string describeOp(mlir::Operation *op) const;

  /// The live nodes of `opType`, in block order, from an index built by one walk on first use
  /// (a walk per call made the expert patterns quadratic in the layers).
  llvm::SmallVector<NodeOp> nodesOfType(llvm::StringRef opType);

  void notifyOperationErased(mlir::Operation *op) override;

private:
  std::optional<llvm::StringMap<llvm::SmallVector<NodeOp>>> nodesByType_;
  llvm::DenseSet<mlir::Operation *> erasedNodes_; // index entries to skip (patterns make no nodes)
  llvm::DenseMap<mlir::Operation *, int64_t> order_;
  llvm::DenseMap<mlir::Operation *, std::string> described_;
  llvm::DenseMap<mlir::Operation *, MatchError> failures_;
};

/// The base of the component patterns: an OpRewritePattern rooted at OpT that shares the run's
/// MatchContext.
template <typename OpT> struct ComponentPattern : mlir::OpRewritePattern<OpT> {
  ComponentPattern(mlir::MLIRContext *context, MatchContext &ctx)
      : mlir::OpRewritePattern<OpT>(context), ctx(ctx) {}
  MatchContext &ctx;
};

/// The matchers of the component patterns: each `match...` reads one component from its input
/// or anchor and returns nullopt when the anchor is not that component (silently) or when its
/// structure contradicts it (then `error` holds why). Defined beside the pattern that uses it.
class ComponentMatcher {
public:
  explicit ComponentMatcher(MatchContext &ctx) : ctx(ctx) {}
  /// Erases the weight references this matcher created that nothing reads (a match that failed
  /// after slicing stacked weights): left behind, the greedy driver would erase them and the
  /// pattern create them again, forever.
  ~ComponentMatcher();
  ComponentMatcher(const ComponentMatcher &) = delete;
  ComponentMatcher &operator=(const ComponentMatcher &) = delete;

  MatchContext &ctx;
  std::optional<MatchError> error;

  // --- the components (each defined in the pattern file of its name) ---
  std::optional<NormMatch> matchNorm(mlir::Value x);           // RmsNormPattern.cpp
  std::optional<AttentionMatch> matchAttention(mlir::Value x); // AttentionPattern.cpp
  std::optional<MlaMatch> matchMla(mlir::Value x);             // MlaAttentionPattern.cpp
  std::optional<RouterMatch> matchRouter(NodeOp topk);         // RouterPattern.cpp
  std::optional<RouterMatch> matchSigmoidRouter(NodeOp topk);  // SigmoidRouterPattern.cpp
  /// The router projection `logits` (MatMul(x', Wg) [+ b] or Gemm(x', Wg^T, b)) into r.input,
  /// r.weight, r.bias, r.numExperts; false (error recorded unless Wg is not a 2-D weight) if not
  /// (RouterPattern.cpp).
  bool readRouterProjection(NodeOp logits, RouterMatch &r);
  /// The Div(values, ReduceSum(values) [+ eps < 1e-6]) renormalising the top-k `values`, a null
  /// NodeOp if none, nullopt (error recorded) for a division by anything else computed from them.
  std::optional<NodeOp> sumRenormalisation(mlir::Value values);
  /// A positive constant Mul on r.gates (routed_scaling_factor): sets r.scalingFactor and moves
  /// r.gates past it; false (error recorded) for a non-positive one.
  bool readScalingFactor(RouterMatch &r);
  std::optional<FfnMatch> matchSwiGLU(mlir::Value x); // SwiGluFfnPattern.cpp
  std::optional<llvm::SmallVector<ExpertMatch>>       // ExpertsLoopPattern.cpp
  matchLoopExperts(const RouterMatch &router, int64_t &expertHidden, ExpertForm &form);
  std::optional<llvm::SmallVector<ExpertMatch>> // ExpertsDenseMaskedPattern.cpp
  matchDenseMaskedExperts(const RouterMatch &router, int64_t &expertHidden, ExpertForm &form);
  std::optional<llvm::SmallVector<ExpertMatch>> // ExpertsEinsumPattern.cpp
  matchEinsumExperts(const RouterMatch &router, int64_t &expertHidden, ExpertForm &form);

  /// The RMSNorm on `x`: a raised moe.rms_norm reading `x`, else the ONNX chain (q/k and MLA's
  /// kv norms, which their attention absorbs).
  std::optional<NormMatch> normOn(mlir::Value x);

  /// GPT-OSS's expert (ClampedSwiGlu.cpp): gate_up = rows W13 [+ b13]; g = Clip(gate_up[..., ::2],
  /// max = limit), u = Clip(gate_up[..., 1::2], -limit, limit); ((u + 1) * g * Sigmoid(alpha g))
  /// W2 [+ b2]. With `activation` set, only the activation is matched: it receives the fused
  /// gate_up value and the node computing (u + 1) * glu.
  struct OaiActivation {
    mlir::Value fused;
    NodeOp out;
  };
  std::optional<std::pair<ExpertMatch, ExpertForm>>
  matchOaiExpert(NodeOp sigmoid, mlir::Value &rows, OaiActivation *activation = nullptr);

  // --- RoPE and masks (RopeAndMasks.cpp) ---
  bool checkHeadsInReshape(mlir::Value projOut, int64_t heads, int64_t headDim);
  std::optional<llvm::SmallVector<double>> findInverseFrequencies(mlir::Value angles,
                                                                  int64_t count);
  static bool isPlainRope(llvm::ArrayRef<double> invFreq, int64_t dim, double theta);
  static double thetaOf(llvm::ArrayRef<double> invFreq, int64_t dim);
  /// theta of plain RoPE's inverse frequencies `invFreq` over `dim` rotary dims: thetaOf where
  /// they are theta^(-2i/dim) to fp32 precision (isPlainRope), or roundedRopeTheta's where they
  /// are its rounding to bfloat16 / float16 (where both fit, the theta with fewer significant
  /// digits); nullopt if neither (a scaled RoPE).
  static std::optional<double> ropeTheta(llvm::ArrayRef<double> invFreq, int64_t dim);
  /// The theta whose frequencies theta^(-2i/dim), each rounded to bfloat16 (or else float16), are
  /// `invFreq` exactly, with the fewest significant digits (a config's rope_theta: 10000, 1e6):
  /// the inv_freq buffer of a model.to(bfloat16) export. nullopt if no theta gives them.
  static std::optional<double> roundedRopeTheta(llvm::ArrayRef<double> invFreq, int64_t dim);
  bool isCausalMask(mlir::Value mask);
  /// Why the rotation on the scores' operand `side` is not RoPE's rotate-half over `rotaryDim`
  /// dims (no sign flip, or halves split elsewhere than rotaryDim / 2); nullopt if it is, or
  /// where the split points are not constants.
  std::optional<std::string> rotateHalfMismatch(mlir::Value side, int64_t rotaryDim);
  /// How RoPE on the scores' operand `side` lays out its `rotaryDim` dims: `interleaved` where a
  /// Transpose(perm [0, 1, 2, 4, 3]) of [.., rotaryDim/2, 2] de-interleaves GPT-J's pairs
  /// (2i, 2i+1) before the rotation (onnxruntime's interleaved RotaryEmbedding, DeepSeek-V2's
  /// view + transpose); `inverses` counts the Transposes of [.., 2, rotaryDim/2] after it that
  /// interleave back (q . k is unchanged where q and k have as many). Says why where the rotary
  /// dims are permuted otherwise (another permutation or shape, two de-interleaves, or one before
  /// a q/k RMSNorm); nullopt otherwise.
  struct RopePairs {
    bool interleaved = false;
    int inverses = 0;
  };
  std::optional<std::string> ropePairsMismatch(mlir::Value side, int64_t rotaryDim,
                                               RopePairs &pairs);
  /// The scalar constant that multiplies the output of `trig` (a Cos or Sin of RoPE's angles)
  /// before it meets q or k, through shape-only ops (YaRN's attention factor); 1 where no such
  /// Mul follows; nullopt where its use is not a single chain.
  static std::optional<double> trigScale(NodeOp trig);
  /// A Softmax over the last axis (axis -1, absent, or rank - 1).
  static bool isLastAxisSoftmax(NodeOp softmax);
  int64_t slidingWindowOf(mlir::Value mask);

  // --- shared helpers (MatchUtils.cpp) ---
  /// Records the first failure of this match attempt; returns nullopt for `return fail(...)`.
  std::nullopt_t fail(mlir::Operation *at, const std::string &message);
  std::nullopt_t fail(NodeOp at, const std::string &message) {
    return fail(at.getOperation(), message);
  }
  /// Linear projections MatMul(x, W) with W a weight [in, out].
  llvm::SmallVector<std::pair<NodeOp, WeightOp>> projections(mlir::Value x);
  /// The bias Add(y, b) after a linear output `y`, with b a 1-D weight of `width` values.
  std::pair<NodeOp, WeightOp> biasAfter(mlir::Value y, int64_t width);
  /// First node of `opType` reachable forwards from `v` (breadth-first). With needWeight, only a
  /// MatMul whose second input is a weight counts. Does not walk past weighted MatMuls.
  NodeOp findDownstream(mlir::Value v, llvm::StringRef opType, bool needWeight = false,
                        int budget = 128);
  /// Nodes on the chain from `from`'s output to `to` (exclusive), following single-user links.
  llvm::SmallVector<NodeOp> between(NodeOp from, NodeOp to);
  /// Every node of `opType` in the function, in block order.
  llvm::SmallVector<NodeOp> allNodes(llvm::StringRef opType);

  static NodeOp single(const llvm::SmallVector<NodeOp> &nodes) {
    return nodes.size() == 1 ? nodes.front() : NodeOp();
  }
  static mlir::Operation *firstUser(mlir::Value v);
  /// Output width of a linear weight [in, out] (or stacked [experts, in, out]).
  static int64_t outWidth(WeightOp w);
  /// Expert `e`'s slice of a stacked weight [experts, ...] (same file, at the slice's offset),
  /// named "<name>[e]", unit dims dropped; with `transpose`, a 2-D slice stored [out, in] is
  /// referenced as [in, out] (marked `transposed`).
  WeightOp sliceRef(WeightOp w, int64_t e, bool transpose = false);
  /// The same bytes as `w` with another shape of the same element count.
  WeightOp reshapedRef(WeightOp w, llvm::ArrayRef<int64_t> shape);
  /// `w` as its 2-D transpose (marked `transposed`), for weights a Gemm reads with transB = 1.
  WeightOp transposedRef(WeightOp w);
  /// `v` is all zeros: a zero constant, or ConstantOfShape with a zero (or no) value.
  static bool isZeros(mlir::Value v);
  static std::string einsumEquation(NodeOp n);
  /// The stacked weight [experts, ...] that Gather(W, ids) (axis 0) reads per token, or null.
  static WeightOp gatheredByIds(mlir::Value v, mlir::Value ids);
  /// Rank of `v` from its type, else through Add/Mul and Einsum; -1 if unknown.
  static int64_t rankOf(mlir::Value v, int depth = 0);
  /// Slice(data, starts = [start], ends, axes = [-1 or last], steps = [2]).
  bool isStrideTwoSlice(NodeOp slice, int64_t start);

private:
  llvm::SmallVector<mlir::Operation *> created_; // weight references made while matching
};

/// The input x of the q projection MatMul(x, Wq) of the attention whose Softmax is `softmax` (the
/// attention norm's output), or null if `softmax` is not over Q K^T (AttentionPattern.cpp).
mlir::Value attentionInputOf(NodeOp softmax);

/// A constant read from an fp32 tensor, as the shortest decimal that rounds to the same fp32
/// value (1.70200002193 -> 1.702): the digits beyond are the export's rounding, not the model's.
double shortestF32(double v);

/// Replaces every use of `value` with `replacement`, then erases the ONNX nodes (and weight
/// references) that nothing reads any more, walking up from `value`'s producer. onnx.node is not
/// Pure, so the greedy driver would keep them and their anchors would match again.
void replaceComponent(mlir::PatternRewriter &rewriter, mlir::Value value, mlir::Value replacement);
/// Erases `op` if nothing reads it, then its operands' producers likewise.
void eraseIfUnused(mlir::PatternRewriter &rewriter, mlir::Operation *op);

/// moe.router for `r` at the rewriter's insertion point, standing for r.topk in the node order;
/// replaces r.gates and r.ids and erases the nodes nothing reads any more (RouterPattern.cpp).
moe::RouterOp buildRouter(mlir::PatternRewriter &rewriter, MatchContext &ctx, RouterMatch r);

/// moe.experts for `experts` (by expert id) on `x` routed by `router`, built at the rewriter's
/// insertion point; null after emitting nothing if only some experts have a bias (recorded).
mlir::Value buildExperts(mlir::PatternRewriter &rewriter, ComponentMatcher &m, moe::RouterOp router,
                         llvm::ArrayRef<ExpertMatch> experts, int64_t expertHidden,
                         const ExpertForm &form);
/// The value the routed experts of `router` compute, found from the residual add h + experts(hn)
/// (or h + (experts(hn) + shared(hn))) with hn the router's input norm; null if not found.
mlir::Value routedOutput(moe::RouterOp router);

// --- pattern sets, one per phase (each file's populate function) ---
void populateEmbeddingPattern(mlir::RewritePatternSet &patterns, MatchContext &ctx);
void populateRmsNormPattern(mlir::RewritePatternSet &patterns, MatchContext &ctx);
void populateAttentionPattern(mlir::RewritePatternSet &patterns, MatchContext &ctx);
void populateMlaAttentionPattern(mlir::RewritePatternSet &patterns, MatchContext &ctx);
void populateRouterPattern(mlir::RewritePatternSet &patterns, MatchContext &ctx);
void populateSigmoidRouterPattern(mlir::RewritePatternSet &patterns, MatchContext &ctx);
void populateSwiGluFfnPattern(mlir::RewritePatternSet &patterns, MatchContext &ctx);
void populateContribMoePattern(mlir::RewritePatternSet &patterns, MatchContext &ctx);
void populateHeadPattern(mlir::RewritePatternSet &patterns, MatchContext &ctx);
void populateExpertsLoopPattern(mlir::RewritePatternSet &patterns, MatchContext &ctx);
void populateExpertsDenseMaskedPattern(mlir::RewritePatternSet &patterns, MatchContext &ctx);
void populateExpertsEinsumPattern(mlir::RewritePatternSet &patterns, MatchContext &ctx);

/// Runs the three phases on ctx.func, each greedily to a fixed point. Fails only if a phase does
/// not converge; components that did not match stay ONNX nodes (with recorded failures).
mlir::LogicalResult applyMatchPatterns(MatchContext &ctx);

} // namespace disagmoe::raise

#endif
