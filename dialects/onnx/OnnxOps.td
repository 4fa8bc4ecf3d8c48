//===- OnnxOps.td - the `onnx` dialect: one op per ONNX node ----*- tablegen -*-===//
//
// The import dialect. Every ONNX node becomes one generic `onnx.node` op that keeps the node's
// op type, name, domain and attributes; initializers become `onnx.weight` ops that reference the
// weight bytes in the model file (file, byte offset, byte length) instead of copying them, except for
// small constants (shape tensors, RoPE frequencies) whose values the raising passes must read.
// Tensor types keep dynamic dims (`?`) where shape inference left them unknown
// (docs/architecture.md, "What real exports look like": the per-expert token count comes from
// NonZero and is data-dependent).
//
//===----------------------------------------------------------------------===//

#ifndef DISAGMOE_ONNX_OPS
#define DISAGMOE_ONNX_OPS

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

def Onnx_Dialect : Dialect {
  let name = "onnx";
  let summary = "ONNX graphs as imported: one op per node, weights by reference";
  let cppNamespace = "::disagmoe::onnxir";
}

class Onnx_Op<string mnemonic, list<Trait> traits = []> : Op<Onnx_Dialect, mnemonic, traits>;

def Onnx_NodeOp : Onnx_Op<"node"> {
  let summary = "one ONNX node (generic: the ONNX op type is an attribute)";
  let description = [{
    `op_type`, `domain` and `node_name` are the node's fields; `onnx_attrs` holds its ONNX attributes
    (ints as i64, floats as f32, strings, lists as arrays, tensors as dense elements). Optional inputs
    that the node leaves empty are `onnx.none` values.

    ```mlir
    %2 = onnx.node "MatMul"(%0, %1) {node_name = "/layers.0/self_attn/q_proj/MatMul", onnx_attrs = {}}
           : (tensor<2x8x64xf32>, tensor<64x64xf32>) -> tensor<2x8x64xf32>
    ```
  }];
  let arguments = (ins StrAttr:$op_type, Variadic<AnyType>:$inputs, StrAttr:$node_name,
                       DefaultValuedStrAttr<StrAttr, "">:$domain, DictionaryAttr:$onnx_attrs);
  let results = (outs Variadic<AnyType>:$outputs);
  let assemblyFormat = [{
    $op_type `(` $inputs `)` attr-dict `:` functional-type($inputs, $outputs)
  }];
  let hasVerifier = 1;
}

def Onnx_WeightOp : Onnx_Op<"weight", [Pure]> {
  let summary = "an ONNX initializer, referenced by file, byte offset and byte length";
  let description = [{
    The bytes live in `file` (the model file, or its external data file) at `offset` for `length`
    bytes, little-endian. `value` is present only for small tensors (at most 4096 bytes) so that passes
    can read shape constants and frequencies; large weights are never loaded at compile time.
    `transposed` marks a 2-D weight whose result is the transpose of the bytes on disk: exports
    without constant folding keep `nn.Linear` weights as stored ([out, in]) behind a `Transpose`,
    which the raising pass folds into the reference. `row_stride` (bytes) marks a 2-D [rows, cols]
    window of a wider row-major matrix on disk: row r's cols elements start at offset + r * row_stride
    (normalize-onnx's SplitPackedQkv references the q, k and v column blocks of a packed [in, out]
    projection this way); `length` stays the window's rows * cols * element bytes.
    `stored_type` marks a weight whose bytes on disk are float16 (IEEE 754 binary16) or bfloat16
    while its result is f32: normalize-onnx's WidenLowPrecisionWeight widens the initializers of a
    float16 / bfloat16 export (exact: every such value is a float32), the plan names the stored
    dtype and the runtime widens the bytes as it reads them (docs/plan-format.md, "weights");
    `length` and `row_stride` count stored bytes (2 per element).

    ```mlir
    %w = onnx.weight "onnx::MatMul_1234" {file = "model.onnx", offset = 4096 : i64, length = 16384 : i64}
           : tensor<64x64xf32>
    %e = onnx.weight "embed_tokens.weight" {file = "model.onnx", offset = 64 : i64, length = 16384 : i64,
           stored_type = bf16} : tensor<256x32xf32>
    ```
  }];
  let arguments = (ins StrAttr:$weight_name, StrAttr:$file, I64Attr:$offset, I64Attr:$length,
                       OptionalAttr<ElementsAttr>:$value, UnitAttr:$transposed,
                       OptionalAttr<I64Attr>:$row_stride, OptionalAttr<TypeAttr>:$stored_type);
  let results = (outs AnyTensor:$result);
  let assemblyFormat = "$weight_name attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Onnx_NoneOp : Onnx_Op<"none", [Pure]> {
  let summary = "the value of an optional ONNX input that a node leaves empty";
  let results = (outs NoneType:$result);
  let assemblyFormat = "attr-dict";
}

#endif // DISAGMOE_ONNX_OPS
