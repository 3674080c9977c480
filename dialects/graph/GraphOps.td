//===- GraphOps.td - graph dialect ops ---------------------*- tablegen -*-===//
//
// Forward ops mirror ONNX; training ops (gradients, losses, optimizer updates)
// follow ONNX's ai.onnx.preview.training semantics where those exist and
// torch.optim otherwise.
//
//===----------------------------------------------------------------------===//

#ifndef OTC_GRAPH_OPS
#define OTC_GRAPH_OPS

include "dialects/graph/GraphBase.td"
include "dialects/graph/GraphInterfaces.td"
include "mlir/IR/BuiltinAttributeInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

def Graph_Differentiable : DeclareOpInterfaceMethods<GradientOpInterface>;

//===----------------------------------------------------------------------===//
// Constants and data movement
//===----------------------------------------------------------------------===//

def Graph_ConstantOp : Graph_Op<"constant",
    [ConstantLike, Pure, AllTypesMatch<["value", "result"]>]> {
  let summary = "A small constant tensor";
  let description = [{
    A compile-time constant (ONNX `Constant` or a folded shape computation).
    Weights never become constants: they are function arguments.

    ```mlir
    %c = graph.constant dense<1.0> : tensor<f32>
    ```
  }];
  let arguments = (ins ElementsAttr:$value);
  let results = (outs Graph_AnyTensor:$result);
  let assemblyFormat = "attr-dict $value";
  let hasFolder = 1;
}

def Graph_ReshapeOp : Graph_Op<"reshape", [Pure, Graph_Differentiable]> {
  let summary = "Reshape to a static shape (ONNX Reshape, Flatten)";
  let description = [{
    Same elements in row-major order, new static shape. The importer folds
    ONNX's shape operand (and Flatten's axis) into the result type.

    ```mlir
    %y = graph.reshape %x : tensor<64x1x28x28xf32> -> tensor<64x784xf32>
    ```
  }];
  let arguments = (ins Graph_AnyTensor:$input);
  let results = (outs Graph_AnyTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Graph_TransposeOp : Graph_Op<"transpose",
    [Pure, InferTypeOpAdaptor, Graph_Differentiable]> {
  let summary = "Permute dimensions (ONNX Transpose)";
  let description = [{
    `result.shape[i] = input.shape[perm[i]]`.

    ```mlir
    %y = graph.transpose %x {perm = array<i64: 1, 0>} : tensor<3x4xf32> -> tensor<4x3xf32>
    ```
  }];
  let arguments = (ins Graph_AnyTensor:$input, DenseI64ArrayAttr:$perm);
  let results = (outs Graph_AnyTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
  let hasCanonicalizer = 1;
}

def Graph_ReduceSumToOp : Graph_Op<"reduce_sum_to", [Pure]> {
  let summary = "Sum a broadcast result back to an operand's shape";
  let description = [{
    The adjoint of numpy broadcasting: sums `input` over the dimensions in
    which the result is broadcast (size 1 or missing leading dimensions).

    ```mlir
    %db = graph.reduce_sum_to %dy : tensor<64x10xf32> -> tensor<10xf32>
    ```
  }];
  let arguments = (ins Graph_F32Tensor:$input);
  let results = (outs Graph_F32Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

//===----------------------------------------------------------------------===//
// Linear algebra
//===----------------------------------------------------------------------===//

def Graph_GemmOp : Graph_Op<"gemm",
    [Pure, InferTypeOpAdaptor, Graph_Differentiable]> {
  let summary = "General matrix multiply (ONNX Gemm)";
  let description = [{
    `Y = alpha * op(A) * op(B) + beta * C`, op = transpose when `transA` /
    `transB`; C is optional and unidirectionally broadcast to [M, N].

    ```mlir
    %y = graph.gemm %x, %w, %b {transB = true}
        : (tensor<64x784xf32>, tensor<256x784xf32>, tensor<256xf32>) -> tensor<64x256xf32>
    ```
  }];
  let arguments = (ins Graph_F32Tensor:$a, Graph_F32Tensor:$b,
                       Optional<Graph_F32Tensor>:$c,
                       DefaultValuedAttr<F32Attr, "1.0">:$alpha,
                       DefaultValuedAttr<F32Attr, "1.0">:$beta,
                       DefaultValuedAttr<BoolAttr, "false">:$transA,
                       DefaultValuedAttr<BoolAttr, "false">:$transB);
  let results = (outs Graph_F32Tensor:$result);
  let assemblyFormat = [{
    $a `,` $b (`,` $c^)? attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
  let hasCanonicalizer = 1;
}

def Graph_MatMulOp : Graph_Op<"matmul",
    [Pure, InferTypeOpAdaptor, Graph_Differentiable]> {
  let summary = "Batched matrix product with broadcasting (ONNX MatMul)";
  let description = [{
    Operands of rank >= 2 (the importer reshapes 1-D ones): the last two
    dimensions multiply, the leading ones broadcast as numpy.
    `transA`/`transB` (an OTC extension the gradients use) transpose the
    last two dimensions of an operand first.

    ```mlir
    %y = graph.matmul %a, %b : (tensor<2x8x4xf32>, tensor<4x3xf32>) -> tensor<2x8x3xf32>
    ```
  }];
  let arguments = (ins Graph_F32Tensor:$a, Graph_F32Tensor:$b,
                       DefaultValuedAttr<BoolAttr, "false">:$transA,
                       DefaultValuedAttr<BoolAttr, "false">:$transB);
  let results = (outs Graph_F32Tensor:$result);
  let assemblyFormat = "$a `,` $b attr-dict `:` functional-type(operands, results)";
  let hasCanonicalizer = 1;
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

class Graph_BinaryOp<string mnemonic, string onnxName>
    : Graph_Op<mnemonic, [Pure, InferTypeOpAdaptor, Graph_Differentiable]> {
  let summary = "Elementwise " # onnxName # " with numpy broadcasting";
  let description = [{
    ONNX `}] # onnxName # [{` (multidirectional broadcasting).

    ```mlir
    %z = graph.}] # mnemonic # [{ %x, %y : (tensor<64x10xf32>, tensor<10xf32>) -> tensor<64x10xf32>
    ```
  }];
  let arguments = (ins Graph_NumericTensor:$lhs, Graph_NumericTensor:$rhs);
  let results = (outs Graph_NumericTensor:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` functional-type(operands, results)";
  let extraClassDefinition = [{
    ::mlir::LogicalResult $cppClass::inferReturnTypes(
        ::mlir::MLIRContext *, std::optional<::mlir::Location> loc,
        Adaptor adaptor, ::llvm::SmallVectorImpl<::mlir::Type> &types) {
      return ::otc::graph::inferBroadcastResult(
          loc, adaptor.getLhs().getType(), adaptor.getRhs().getType(), types);
    }
  }];
}

def Graph_AddOp : Graph_BinaryOp<"add", "Add"> { let hasFolder = 1; }
def Graph_SubOp : Graph_BinaryOp<"sub", "Sub">;
def Graph_MulOp : Graph_BinaryOp<"mul", "Mul">;
def Graph_DivOp : Graph_BinaryOp<"div", "Div">;
def Graph_PowOp : Graph_BinaryOp<"pow", "Pow">;
def Graph_MaxOp : Graph_BinaryOp<"max", "Max (of two operands)">;
def Graph_MinOp : Graph_BinaryOp<"min", "Min (of two operands)">;
def Graph_PReluOp : Graph_BinaryOp<"prelu", "PRelu (lhs = x, rhs = slope)">;
def Graph_ModOp : Graph_BinaryOp<"mod",
    "Mod with fmod = 0 (a - floor(a / b) * b: the sign of b, as Python)">;
def Graph_FModOp : Graph_BinaryOp<"fmod",
    "Mod with fmod = 1 (C fmod / %: the sign of a)">;

/// Integer-only binary ops: no gradient (the loss cannot depend on a
/// parameter through them).
class Graph_IntegerBinaryOp<string mnemonic, string onnxName>
    : Graph_Op<mnemonic, [Pure, InferTypeOpAdaptor]> {
  let summary = "Elementwise " # onnxName # " of integers with numpy broadcasting";
  let description = [{
    ONNX `}] # onnxName # [{` (multidirectional broadcasting). A shift by
    the type's width or more gives 0.

    ```mlir
    %z = graph.}] # mnemonic # [{ %x, %y : (tensor<3xui8>, tensor<3xui8>) -> tensor<3xui8>
    ```
  }];
  let arguments = (ins Graph_IntegerTensor:$lhs, Graph_IntegerTensor:$rhs);
  let results = (outs Graph_IntegerTensor:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` functional-type(operands, results)";
  let extraClassDefinition = [{
    ::mlir::LogicalResult $cppClass::inferReturnTypes(
        ::mlir::MLIRContext *, std::optional<::mlir::Location> loc,
        Adaptor adaptor, ::llvm::SmallVectorImpl<::mlir::Type> &types) {
      return ::otc::graph::inferBroadcastResult(
          loc, adaptor.getLhs().getType(), adaptor.getRhs().getType(), types);
    }
  }];
}

def Graph_ShiftLeftOp
    : Graph_IntegerBinaryOp<"shift_left", "BitShift (direction LEFT)">;
def Graph_ShiftRightOp
    : Graph_IntegerBinaryOp<"shift_right", "BitShift (direction RIGHT)">;

class Graph_UnaryOp<string mnemonic, string onnxName, string formula>
    : Graph_Op<mnemonic, [Pure, SameOperandsAndResultType, Graph_Differentiable]> {
  let summary = "Elementwise " # onnxName;
  let description = [{
    ONNX `}] # onnxName # [{`: `y = }] # formula # [{`.

    ```mlir
    %y = graph.}] # mnemonic # [{ %x : tensor<64x256xf32>
    ```
  }];
  let arguments = (ins Graph_F32Tensor:$input);
  let results = (outs Graph_F32Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
}

def Graph_ReluOp : Graph_UnaryOp<"relu", "Relu", "max(x, 0)">;
def Graph_SigmoidOp : Graph_UnaryOp<"sigmoid", "Sigmoid", "1 / (1 + exp(-x))">;
def Graph_TanhOp : Graph_UnaryOp<"tanh", "Tanh", "tanh(x)">;
def Graph_NegOp : Graph_UnaryOp<"neg", "Neg", "-x">;
def Graph_ExpOp : Graph_UnaryOp<"exp", "Exp", "exp(x)">;
def Graph_LogOp : Graph_UnaryOp<"log", "Log", "log(x)">;
def Graph_SqrtOp : Graph_UnaryOp<"sqrt", "Sqrt", "sqrt(x)">;
def Graph_AbsOp : Graph_UnaryOp<"abs", "Abs", "|x|">;
def Graph_ReciprocalOp : Graph_UnaryOp<"reciprocal", "Reciprocal", "1 / x">;
def Graph_SinOp : Graph_UnaryOp<"sin", "Sin", "sin(x)">;
def Graph_CosOp : Graph_UnaryOp<"cos", "Cos", "cos(x)">;
def Graph_ErfOp : Graph_UnaryOp<"erf", "Erf", "erf(x)">;
def Graph_SignOp : Graph_UnaryOp<"sign", "Sign", "sign(x)">;
def Graph_FloorOp : Graph_UnaryOp<"floor", "Floor", "floor(x)">;
def Graph_CeilOp : Graph_UnaryOp<"ceil", "Ceil", "ceil(x)">;
def Graph_RoundOp : Graph_UnaryOp<"round", "Round", "round half to even">;
def Graph_SoftplusOp : Graph_UnaryOp<"softplus", "Softplus", "log(1 + exp(x))">;
def Graph_SoftsignOp : Graph_UnaryOp<"softsign", "Softsign", "x / (1 + |x|)">;
def Graph_MishOp : Graph_UnaryOp<"mish", "Mish", "x * tanh(softplus(x))">;
def Graph_TanOp : Graph_UnaryOp<"tan", "Tan", "tan(x)">;
def Graph_AsinOp : Graph_UnaryOp<"asin", "Asin", "asin(x)">;
def Graph_AcosOp : Graph_UnaryOp<"acos", "Acos", "acos(x)">;
def Graph_AtanOp : Graph_UnaryOp<"atan", "Atan", "atan(x)">;
def Graph_SinhOp : Graph_UnaryOp<"sinh", "Sinh", "sinh(x)">;
def Graph_CoshOp : Graph_UnaryOp<"cosh", "Cosh", "cosh(x)">;
def Graph_AsinhOp : Graph_UnaryOp<"asinh", "Asinh", "asinh(x)">;
def Graph_AcoshOp : Graph_UnaryOp<"acosh", "Acosh", "acosh(x)">;
def Graph_AtanhOp : Graph_UnaryOp<"atanh", "Atanh", "atanh(x)">;
def Graph_HardSwishOp
    : Graph_UnaryOp<"hard_swish", "HardSwish", "x * max(0, min(1, x / 6 + 1 / 2))">;

/// A unary op with float attributes (ONNX names and defaults).
class Graph_AttrUnaryOp<string mnemonic, string onnxName, string formula,
                        dag attrs, string example>
    : Graph_Op<mnemonic, [Pure, SameOperandsAndResultType, Graph_Differentiable]> {
  let summary = "Elementwise " # onnxName;
  let description = [{
    ONNX `}] # onnxName # [{`: `y = }] # formula # [{`.

    ```mlir
    %y = graph.}] # mnemonic # [{ %x {}] # example # [{} : tensor<64x256xf32>
    ```
  }];
  let arguments = !con((ins Graph_F32Tensor:$input), attrs);
  let results = (outs Graph_F32Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
}

def Graph_LeakyReluOp : Graph_AttrUnaryOp<"leaky_relu", "LeakyRelu",
    "x >= 0 ? x : alpha * x",
    (ins DefaultValuedAttr<F32Attr, "0.01f">:$alpha), "alpha = 0.1 : f32">;
def Graph_EluOp : Graph_AttrUnaryOp<"elu", "Elu",
    "x > 0 ? x : alpha * (exp(x) - 1)",
    (ins DefaultValuedAttr<F32Attr, "1.0f">:$alpha), "alpha = 1.0 : f32">;
def Graph_CeluOp : Graph_AttrUnaryOp<"celu", "Celu",
    "max(0, x) + min(0, alpha * (exp(x / alpha) - 1))",
    (ins DefaultValuedAttr<F32Attr, "1.0f">:$alpha), "alpha = 1.0 : f32">;
def Graph_SeluOp : Graph_AttrUnaryOp<"selu", "Selu",
    "gamma * (x > 0 ? x : alpha * (exp(x) - 1))",
    (ins DefaultValuedAttr<F32Attr, "1.67326319217681884765625f">:$alpha,
         DefaultValuedAttr<F32Attr, "1.05070102214813232421875f">:$gamma),
    "alpha = 1.67326 : f32, gamma = 1.0507 : f32">;
def Graph_HardSigmoidOp : Graph_AttrUnaryOp<"hard_sigmoid", "HardSigmoid",
    "max(0, min(1, alpha * x + beta))",
    (ins DefaultValuedAttr<F32Attr, "0.2f">:$alpha,
         DefaultValuedAttr<F32Attr, "0.5f">:$beta),
    "alpha = 0.2 : f32, beta = 0.5 : f32">;
def Graph_ThresholdedReluOp : Graph_AttrUnaryOp<"thresholded_relu",
    "ThresholdedRelu", "x > alpha ? x : 0",
    (ins DefaultValuedAttr<F32Attr, "1.0f">:$alpha), "alpha = 1.0 : f32">;
def Graph_ShrinkOp : Graph_AttrUnaryOp<"shrink", "Shrink",
    "x < -lambd ? x + bias : (x > lambd ? x - bias : 0)",
    (ins DefaultValuedAttr<F32Attr, "0.5f">:$lambd,
         DefaultValuedAttr<F32Attr, "0.0f">:$bias),
    "lambd = 0.5 : f32, bias = 0.0 : f32">;
def Graph_ClipOp : Graph_AttrUnaryOp<"clip", "Clip (bounds folded from its inputs)",
    "min(max(x, min), max)", (ins F32Attr:$min, F32Attr:$max),
    "min = 0.0 : f32, max = 6.0 : f32">;
def Graph_GeluOp : Graph_AttrUnaryOp<"gelu", "Gelu (opset 20; also the Erf/Tanh expansions)",
    "0.5 * x * (1 + erf(x / sqrt(2))), or its tanh approximation",
    (ins DefaultValuedStrAttr<StrAttr, "none">:$approximate),
    "approximate = \"tanh\"">;

//===----------------------------------------------------------------------===//
// Comparisons, logic, selection, casts (no gradient through predicates)
//===----------------------------------------------------------------------===//

def Graph_CompareOp : Graph_Op<"compare", [Pure]> {
  let summary = "Elementwise comparison with broadcasting (ONNX Equal, Less, ...)";
  let description = [{
    `predicate` is one of `eq`, `lt`, `le`, `gt`, `ge`; the result is a
    boolean tensor of the broadcast shape.

    ```mlir
    %m = graph.compare "lt" %a, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xi1>
    ```
  }];
  let arguments = (ins StrAttr:$predicate, Graph_ComparableTensor:$lhs,
                       Graph_ComparableTensor:$rhs);
  let results = (outs Graph_BoolTensor:$result);
  let assemblyFormat = "$predicate $lhs `,` $rhs attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Graph_LogicalOp : Graph_Op<"logical", [Pure]> {
  let summary = "Elementwise And, Or, Xor of booleans with broadcasting";
  let description = [{
    ```mlir
    %m = graph.logical "and" %a, %b : (tensor<4xi1>, tensor<4xi1>) -> tensor<4xi1>
    ```
  }];
  let arguments = (ins StrAttr:$kind, Graph_BoolTensor:$lhs, Graph_BoolTensor:$rhs);
  let results = (outs Graph_BoolTensor:$result);
  let assemblyFormat = "$kind $lhs `,` $rhs attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Graph_NotOp : Graph_Op<"not", [Pure, SameOperandsAndResultType]> {
  let summary = "Elementwise logical not (ONNX Not)";
  let description = [{
    ```mlir
    %n = graph.not %m : tensor<4xi1>
    ```
  }];
  let arguments = (ins Graph_BoolTensor:$input);
  let results = (outs Graph_BoolTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
}

def Graph_WhereOp : Graph_Op<"where", [Pure, Graph_Differentiable]> {
  let summary = "Select by a boolean condition with broadcasting (ONNX Where)";
  let description = [{
    ```mlir
    %y = graph.where %c, %a, %b
        : (tensor<4x4xi1>, tensor<4x4xf32>, tensor<f32>) -> tensor<4x4xf32>
    ```
  }];
  let arguments = (ins Graph_BoolTensor:$condition, Graph_AnyTensor:$lhs,
                       Graph_AnyTensor:$rhs);
  let results = (outs Graph_AnyTensor:$result);
  let assemblyFormat = "$condition `,` $lhs `,` $rhs attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Graph_CastOp : Graph_Op<"cast", [Pure, Graph_Differentiable]> {
  let summary = "Element type conversion of a runtime tensor (ONNX Cast)";
  let description = [{
    Float to integer truncates toward zero; any non-zero value is `true`.

    ```mlir
    %i = graph.cast %x : tensor<8xf32> -> tensor<8xi64>
    ```
  }];
  let arguments = (ins Graph_AnyTensor:$input);
  let results = (outs Graph_AnyTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Graph_DropoutOp : Graph_Op<"dropout",
    [Graph_Differentiable, AllTypesMatch<["input", "result", "mask"]>]> {
  let summary = "Dropout in training mode (ONNX Dropout, training_mode=true)";
  let description = [{
    Zeroes each element with probability `ratio` and scales the rest by
    1 / (1 - ratio); `mask` holds the applied scale (0 or 1/(1-ratio)) for
    the backward. The random stream is derived from the step's seed and
    `stream` (one per dropout op), so a step is reproducible. The eval step
    replaces dropout by its input (ONNX inference mode).

    ```mlir
    %y, %mask = graph.dropout %x {ratio = 0.1 : f32, stream = 0 : i64} : tensor<64x256xf32>
    ```
  }];
  let arguments = (ins Graph_F32Tensor:$input, F32Attr:$ratio, I64Attr:$stream);
  let results = (outs Graph_F32Tensor:$result, Graph_F32Tensor:$mask);
  let assemblyFormat = "$input attr-dict `:` type($input)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Softmax family
//===----------------------------------------------------------------------===//

class Graph_SoftmaxBase<string mnemonic, string onnxName>
    : Graph_Op<mnemonic, [Pure, SameOperandsAndResultType, Graph_Differentiable]> {
  let summary = "ONNX " # onnxName # " (opset 13: along one axis)";
  let description = [{
    ```mlir
    %y = graph.}] # mnemonic # [{ %x {axis = -1 : i64} : tensor<64x10xf32>
    ```
  }];
  let arguments = (ins Graph_F32Tensor:$input,
                       DefaultValuedAttr<I64Attr, "-1">:$axis);
  let results = (outs Graph_F32Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
  let hasVerifier = 1;
}

def Graph_SoftmaxOp : Graph_SoftmaxBase<"softmax", "Softmax">;
def Graph_LogSoftmaxOp : Graph_SoftmaxBase<"log_softmax", "LogSoftmax">;

//===----------------------------------------------------------------------===//
// Gradient ops
//===----------------------------------------------------------------------===//

def Graph_UnaryGradOp : Graph_Op<"unary_grad",
    [Pure, AttrSizedOperandSegments, AllTypesMatch<["grad", "result"]>,
     OptionalTypesMatchWith<"x matches the result", "result", "input", "$_self">,
     OptionalTypesMatchWith<"y matches the result", "result", "output", "$_self">]> {
  let summary = "Backward of an elementwise unary op";
  let description = [{
    `dx = dy * f'(x)` for the forward op named by `kind` (its mnemonic), from
    the forward's input `x` or output `y` (whichever the derivative needs:
    see `unaryGradUsesOutput`); gelu reads `x` and, when given, `y` too
    (its Phi(x) is then y / x, no erf). `alpha` and `beta` carry the
    forward's float attributes (selu: alpha, gamma; clip: min, max;
    hard_sigmoid: alpha, beta; gelu: beta = 1 for the tanh approximation).

    ```mlir
    %dx = graph.unary_grad "relu" %dy y %y : tensor<64x256xf32>
    %dx = graph.unary_grad "gelu" %dy x %x y %y : tensor<64x256xf32>
    ```
  }];
  let arguments = (ins StrAttr:$kind, Graph_F32Tensor:$grad,
                       Optional<Graph_F32Tensor>:$input,
                       Optional<Graph_F32Tensor>:$output,
                       DefaultValuedAttr<F32Attr, "0.0f">:$alpha,
                       DefaultValuedAttr<F32Attr, "0.0f">:$beta);
  let results = (outs Graph_F32Tensor:$result);
  let assemblyFormat = [{
    $kind $grad (`x` $input^)? (`y` $output^)? attr-dict `:` type($result)
  }];
  let hasVerifier = 1;
}

def Graph_BinaryGradOp : Graph_Op<"binary_grad", [Pure]> {
  let summary = "Backward of a broadcasting binary op for one operand";
  let description = [{
    The gradient of `kind` (pow, max, min, prelu, mod, fmod) with respect to
    operand `operand` (0 = lhs, 1 = rhs), in the broadcast result's shape;
    the caller sums it back to the operand's shape. Ties of max/min split the
    gradient evenly (as PyTorch).

    ```mlir
    %da = graph.binary_grad "pow" 0 %dy, %a, %b
        : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
    ```
  }];
  let arguments = (ins StrAttr:$kind, I64Attr:$operand, Graph_F32Tensor:$grad,
                       Graph_F32Tensor:$lhs, Graph_F32Tensor:$rhs);
  let results = (outs Graph_F32Tensor:$result);
  let assemblyFormat = [{
    $kind $operand $grad `,` $lhs `,` $rhs attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

class Graph_SoftmaxGradBase<string mnemonic, string formula>
    : Graph_Op<mnemonic, [Pure, SameOperandsAndResultType]> {
  let summary = "Backward of " # mnemonic # " from the forward's output";
  let description = [{
    `dx = }] # formula # [{` along `axis`, `y` the forward's result.

    ```mlir
    %dx = graph.}] # mnemonic # [{ %dy, %y {axis = 1 : i64} : tensor<64x10xf32>
    ```
  }];
  let arguments = (ins Graph_F32Tensor:$grad, Graph_F32Tensor:$output,
                       I64Attr:$axis);
  let results = (outs Graph_F32Tensor:$result);
  let assemblyFormat = "$grad `,` $output attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Graph_SoftmaxGradOp
    : Graph_SoftmaxGradBase<"softmax_grad", "y * (dy - sum(dy * y))">;
def Graph_LogSoftmaxGradOp
    : Graph_SoftmaxGradBase<"log_softmax_grad", "dy - exp(y) * sum(dy)">;

//===----------------------------------------------------------------------===//
// Losses
//===----------------------------------------------------------------------===//

def Graph_SoftmaxCrossEntropyOp : Graph_Op<"softmax_cross_entropy",
    [Pure, Graph_Differentiable]> {
  let summary = "Mean softmax cross-entropy with integer class labels";
  let description = [{
    `loss = mean_i -log(softmax(logits[i])[labels[i]])` (ONNX
    SoftmaxCrossEntropyLoss, reduction = mean). `probs` is the softmax, kept
    for the backward.

    ```mlir
    %loss, %probs = graph.softmax_cross_entropy %logits, %labels
        : (tensor<64x10xf32>, tensor<64xi64>) -> (tensor<f32>, tensor<64x10xf32>)
    ```
  }];
  let arguments = (ins Graph_F32Tensor:$logits, Graph_IndexTensor:$labels);
  let results = (outs Graph_ScalarF32:$loss, Graph_F32Tensor:$probs);
  let assemblyFormat = "$logits `,` $labels attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Graph_SoftmaxCrossEntropyGradOp : Graph_Op<"softmax_cross_entropy_grad", [Pure]> {
  let summary = "Backward of softmax_cross_entropy with respect to the logits";
  let description = [{
    `dlogits = dloss * (probs - onehot(labels)) / N`.

    ```mlir
    %d = graph.softmax_cross_entropy_grad %probs, %labels, %dloss
        : (tensor<64x10xf32>, tensor<64xi64>, tensor<f32>) -> tensor<64x10xf32>
    ```
  }];
  let arguments = (ins Graph_F32Tensor:$probs, Graph_IndexTensor:$labels,
                       Graph_ScalarF32:$grad);
  let results = (outs Graph_F32Tensor:$result);
  let assemblyFormat = "$probs `,` $labels `,` $grad attr-dict `:` functional-type(operands, results)";
}

def Graph_MseOp : Graph_Op<"mse", [Pure, Graph_Differentiable]> {
  let summary = "Mean squared error";
  let description = [{
    `loss = mean((pred - target)^2)` over all elements (torch MSELoss).

    ```mlir
    %loss = graph.mse %pred, %target : (tensor<8x1xf32>, tensor<8x1xf32>) -> tensor<f32>
    ```
  }];
  let arguments = (ins Graph_F32Tensor:$pred, Graph_F32Tensor:$target);
  let results = (outs Graph_ScalarF32:$loss);
  let assemblyFormat = "$pred `,` $target attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Graph_MseGradOp : Graph_Op<"mse_grad", [Pure]> {
  let summary = "Backward of mse with respect to the prediction";
  let description = [{
    `dpred = dloss * 2 * (pred - target) / n`.

    ```mlir
    %d = graph.mse_grad %pred, %target, %dloss
        : (tensor<8x1xf32>, tensor<8x1xf32>, tensor<f32>) -> tensor<8x1xf32>
    ```
  }];
  let arguments = (ins Graph_F32Tensor:$pred, Graph_F32Tensor:$target,
                       Graph_ScalarF32:$grad);
  let results = (outs Graph_F32Tensor:$result);
  let assemblyFormat = "$pred `,` $target `,` $grad attr-dict `:` functional-type(operands, results)";
}

//===----------------------------------------------------------------------===//
// Optimizer updates (torch.optim semantics; the step count for bias
// correction is the runtime's 1-based optimizer step). The hyperparameters
// (lr, weight decay, momentum, betas, epsilon) are read at run time from the
// step context (otc_hyperparams_t); `lr_scale` and `wd_scale` are the
// parameter group's factors on lr and weight decay (--lr-scale,
// --no-weight-decay sets wd_scale to 0).
//===----------------------------------------------------------------------===//

def Graph_SgdUpdateOp : Graph_Op<"sgd_update",
    [Pure, AllTypesMatch<["param", "grad", "result"]>]> {
  let summary = "Plain SGD: w - lr * (g + weight_decay * w)";
  let description = [{
    ```mlir
    %w2 = graph.sgd_update %w, %g {lr_scale = 0.5 : f32} : tensor<10xf32>
    ```
  }];
  let arguments = (ins Graph_F32Tensor:$param, Graph_F32Tensor:$grad,
                       DefaultValuedAttr<F32Attr, "1.0">:$lr_scale,
                       DefaultValuedAttr<F32Attr, "1.0">:$wd_scale);
  let results = (outs Graph_F32Tensor:$result);
  let assemblyFormat = "$param `,` $grad attr-dict `:` type($param)";
}

def Graph_MomentumUpdateOp : Graph_Op<"momentum_update",
    [Pure, AllTypesMatch<["param", "grad", "velocity", "new_param", "new_velocity"]>]> {
  let summary = "SGD with momentum (optionally Nesterov), as torch.optim.SGD";
  let description = [{
    `d = g + wd*w; v = mu*v + d; w -= lr * (nesterov ? d + mu*v : v)`.

    ```mlir
    %w2, %v2 = graph.momentum_update %w, %g, %v {nesterov = true} : tensor<10xf32>
    ```
  }];
  let arguments = (ins Graph_F32Tensor:$param, Graph_F32Tensor:$grad,
                       Graph_F32Tensor:$velocity,
                       DefaultValuedAttr<F32Attr, "1.0">:$lr_scale,
                       DefaultValuedAttr<F32Attr, "1.0">:$wd_scale,
                       DefaultValuedAttr<BoolAttr, "false">:$nesterov);
  let results = (outs Graph_F32Tensor:$new_param, Graph_F32Tensor:$new_velocity);
  let assemblyFormat = "$param `,` $grad `,` $velocity attr-dict `:` type($param)";
}

class Graph_AdamBase<string mnemonic, string decay>
    : Graph_Op<mnemonic, [Pure, AllTypesMatch<["param", "grad", "m", "v",
                                                 "new_param", "new_m", "new_v"]>]> {
  let summary = "Adam update with " # decay # " weight decay";
  let description = [{
    torch.optim semantics; bias correction uses the optimizer step count
    that the runtime keeps (and checkpoints). With `first_moment = false`
    the update runs with beta1 = 0 whatever the step's beta1 (torch's
    `betas=(0.0, beta2)`: `m = d` and no first bias correction): its
    gradient already is the first moment, which otc-momentum-correction
    keeps in the compressed all-reduce (`u = beta1 * u + g`, averaged).

    ```mlir
    %w2, %m2, %v2 = graph.}] # mnemonic # [{ %w, %g, %m, %v {wd_scale = 0.0 : f32}
        : tensor<10xf32>
    %w3, %m3, %v3 = graph.}] # mnemonic # [{ %w, %u, %m, %v {first_moment = false}
        : tensor<10xf32>
    ```
  }];
  let arguments = (ins Graph_F32Tensor:$param, Graph_F32Tensor:$grad,
                       Graph_F32Tensor:$m, Graph_F32Tensor:$v,
                       DefaultValuedAttr<F32Attr, "1.0">:$lr_scale,
                       DefaultValuedAttr<F32Attr, "1.0">:$wd_scale,
                       DefaultValuedAttr<BoolAttr, "true">:$first_moment);
  let results = (outs Graph_F32Tensor:$new_param, Graph_F32Tensor:$new_m,
                      Graph_F32Tensor:$new_v);
  let assemblyFormat = "$param `,` $grad `,` $m `,` $v attr-dict `:` type($param)";
}

def Graph_AdamUpdateOp : Graph_AdamBase<"adam_update", "L2 (coupled)">;
def Graph_AdamWUpdateOp : Graph_AdamBase<"adamw_update", "decoupled">;

def Graph_HyperparameterOp : Graph_Op<"hyperparameter", [Pure]> {
  let summary = "A training hyperparameter, read at run time";
  let description = [{
    The value of `name` (a field of otc_hyperparams_t: lr, weight_decay,
    momentum, beta1, beta2, eps, alpha, lr_decay) for this step, as a float
    scalar. Passes that compute with a hyperparameter outside an update
    (momentum correction) read it through this op, so the value stays a
    run-time one.

    ```mlir
    %mu = graph.hyperparameter "momentum" : tensor<f32>
    ```
  }];
  let arguments = (ins StrAttr:$name);
  let results = (outs Graph_ScalarF32:$result);
  let assemblyFormat = "$name attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Graph_ClipGradientsOp : Graph_Op<"clip_gradients",
    [Pure, AttrSizedOperandSegments]> {
  let summary = "Clipping of a step's averaged gradients, all of them together";
  let description = [{
    `norm` is the global 2-norm of every gradient before clipping (the norm
    of the per-tensor norms, as torch.nn.utils.clip_grad_norm_ computes
    it). With `max_norm` > 0 every gradient is scaled by
    min(1, max_norm / (norm + 1e-6)) (clip_grad_norm_); with `max_value` > 0
    every element is clamped to [-max_value, max_value] (clip_grad_value_);
    with neither, nothing is clipped. In every case a step whose norm is not
    finite returns OTC_STEP_SKIPPED_NONFINITE before any update (the norm
    is of averaged gradients, the same on every rank, so every rank skips
    together). One kernel reads all the gradients: the
    norm is one pass over the step's gradient buckets, not one per tensor.
    With `total` (SDP: the whole model's norm, which no rank's gradients
    alone give) that is the norm, and `norm` returns it.

    ```mlir
    %c:3 = graph.clip_gradients %g1, %g2 {max_norm = 1.0 : f32}
        : (tensor<4x3xf32>, tensor<3xf32>) -> (tensor<4x3xf32>, tensor<3xf32>, tensor<f32>)
    ```
  }];
  let arguments = (ins Variadic<Graph_F32Tensor>:$grads,
                       Optional<Graph_ScalarF32>:$total,
                       DefaultValuedAttr<F32Attr, "0.0">:$max_norm,
                       DefaultValuedAttr<F32Attr, "0.0">:$max_value);
  let results = (outs Variadic<Graph_F32Tensor>:$clipped,
                      Graph_ScalarF32:$norm);
  let assemblyFormat = [{
    $grads (`norm` $total^)? attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// More optimizer updates (torch.optim 1.13 semantics where torch has them,
// the papers' otherwise) and the weight EMA. The kernels' comments
// (otc/kernels.h) give the exact arithmetic.
//===----------------------------------------------------------------------===//

def Graph_LambUpdateOp : Graph_Op<"lamb_update",
    [Pure, AllTypesMatch<["param", "grad", "m", "v",
                          "new_param", "new_m", "new_v"]>]> {
  let summary = "LAMB: Adam's direction scaled by a per-tensor trust ratio";
  let description = [{
    You et al. 2020 with bias correction and DeepSpeed FusedLamb's trust
    ratio: `u = m_hat / (sqrt(v_hat) + eps) + wd * w`,
    `w -= lr * clamp(||w|| / ||u||, 0.01, 10) * u` (1 when either norm is
    0). The ratio is one number per tensor: the update needs the whole
    parameter and its whole gradient (hence no SDP part updates). State:
    `exp_avg`, `exp_avg_sq`.

    ```mlir
    %w2, %m2, %v2 = graph.lamb_update %w, %g, %m, %v : tensor<10xf32>
    ```
  }];
  let arguments = (ins Graph_F32Tensor:$param, Graph_F32Tensor:$grad,
                       Graph_F32Tensor:$m, Graph_F32Tensor:$v,
                       DefaultValuedAttr<F32Attr, "1.0">:$lr_scale,
                       DefaultValuedAttr<F32Attr, "1.0">:$wd_scale);
  let results = (outs Graph_F32Tensor:$new_param, Graph_F32Tensor:$new_m,
                      Graph_F32Tensor:$new_v);
  let assemblyFormat = "$param `,` $grad `,` $m `,` $v attr-dict `:` type($param)";
}

def Graph_LionUpdateOp : Graph_Op<"lion_update",
    [Pure, AllTypesMatch<["param", "grad", "m", "new_param", "new_m"]>]> {
  let summary = "Lion: the sign of an interpolated momentum (Chen et al. 2023)";
  let description = [{
    `w *= 1 - lr * wd; w -= lr * sign(beta1 * m + (1 - beta1) * g);
    m = beta2 * m + (1 - beta2) * g` (decoupled weight decay). State:
    `exp_avg`.

    ```mlir
    %w2, %m2 = graph.lion_update %w, %g, %m {lr_scale = 0.1 : f32} : tensor<10xf32>
    ```
  }];
  let arguments = (ins Graph_F32Tensor:$param, Graph_F32Tensor:$grad,
                       Graph_F32Tensor:$m,
                       DefaultValuedAttr<F32Attr, "1.0">:$lr_scale,
                       DefaultValuedAttr<F32Attr, "1.0">:$wd_scale);
  let results = (outs Graph_F32Tensor:$new_param, Graph_F32Tensor:$new_m);
  let assemblyFormat = "$param `,` $grad `,` $m attr-dict `:` type($param)";
}

def Graph_AdagradUpdateOp : Graph_Op<"adagrad_update",
    [Pure, AllTypesMatch<["param", "grad", "sum", "new_param", "new_sum"]>]> {
  let summary = "Adagrad, as torch.optim.Adagrad";
  let description = [{
    `d = g + wd * w; sum += d * d; clr = lr / (1 + (step - 1) * lr_decay);
    w -= clr * d / (sqrt(sum) + eps)` (initial accumulator 0). State: `sum`.

    ```mlir
    %w2, %s2 = graph.adagrad_update %w, %g, %s : tensor<10xf32>
    ```
  }];
  let arguments = (ins Graph_F32Tensor:$param, Graph_F32Tensor:$grad,
                       Graph_F32Tensor:$sum,
                       DefaultValuedAttr<F32Attr, "1.0">:$lr_scale,
                       DefaultValuedAttr<F32Attr, "1.0">:$wd_scale);
  let results = (outs Graph_F32Tensor:$new_param, Graph_F32Tensor:$new_sum);
  let assemblyFormat = "$param `,` $grad `,` $sum attr-dict `:` type($param)";
}

def Graph_RmspropUpdateOp : Graph_Op<"rmsprop_update",
    [Pure, AllTypesMatch<["param", "grad", "new_param"]>]> {
  let summary = "RMSprop, as torch.optim.RMSprop";
  let description = [{
    `d = g + wd * w; sq = alpha * sq + (1 - alpha) * d * d`; `centered`:
    `ga = alpha * ga + (1 - alpha) * d`, `avg = sqrt(sq - ga * ga) + eps`
    (else `sqrt(sq) + eps`); `with_momentum`: `buf = momentum * buf +
    d / avg, w -= lr * buf` (else `w -= lr * d / avg`). Whether the program
    keeps `grad_avg` and `momentum_buffer` is fixed at compile time (torch
    keeps a buffer when its momentum is > 0); the state operands are
    `square_avg`, then `grad_avg` when centered, then `momentum_buffer`
    with momentum, and the results mirror them.

    ```mlir
    %w2, %sq2, %ga2 = graph.rmsprop_update %w, %g, %sq, %ga {centered = true}
        : tensor<10xf32>
    ```
  }];
  let arguments = (ins Graph_F32Tensor:$param, Graph_F32Tensor:$grad,
                       Variadic<Graph_F32Tensor>:$state,
                       DefaultValuedAttr<F32Attr, "1.0">:$lr_scale,
                       DefaultValuedAttr<F32Attr, "1.0">:$wd_scale,
                       DefaultValuedAttr<BoolAttr, "false">:$centered,
                       DefaultValuedAttr<BoolAttr, "false">:$with_momentum);
  let results = (outs Graph_F32Tensor:$new_param,
                      Variadic<Graph_F32Tensor>:$new_state);
  let assemblyFormat = [{
    $param `,` $grad `,` $state attr-dict
    custom<SameStateTypes>(type($param), ref($state), type($state),
                           type($new_state))
  }];
  let hasVerifier = 1;
}

def Graph_EmaUpdateOp : Graph_Op<"ema_update",
    [Pure, AllTypesMatch<["ema", "param", "result"]>]> {
  let summary = "Exponential moving average of a parameter's values";
  let description = [{
    torch.optim.swa_utils.AveragedModel with an EMA averaging function:
    the first optimizer step copies the parameter, every later one takes
    `ema = lerp(ema, param, 1 - decay)` (`decay * ema + (1 - decay) *
    param`). `param` is the parameter's new value (after its optimizer
    update); the result replaces the `<param>.ema` state.

    ```mlir
    %e2 = graph.ema_update %e, %w2 {decay = 0.999 : f32} : tensor<10xf32>
    ```
  }];
  let arguments = (ins Graph_F32Tensor:$ema, Graph_F32Tensor:$param,
                       F32Attr:$decay);
  let results = (outs Graph_F32Tensor:$result);
  let assemblyFormat = "$ema `,` $param attr-dict `:` type($ema)";
  let hasVerifier = 1;
}

include "dialects/graph/GraphTensorOps.td"
include "dialects/graph/GraphNNOps.td"

#endif // OTC_GRAPH_OPS
