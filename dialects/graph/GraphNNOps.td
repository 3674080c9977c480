//===- GraphNNOps.td - convolution, pooling, normalization ---*- tablegen -*-===//
//
// Included by GraphOps.td. Layout NCHW ([N, C, spatial...], 1 to 3 spatial
// dimensions). The importer resolves auto_pad and ceil_mode into explicit
// pads and result shapes; GraphNNOps.cpp verifies them.
//
//===----------------------------------------------------------------------===//

#ifndef OTC_GRAPH_NN_OPS
#define OTC_GRAPH_NN_OPS

defvar Graph_WindowAttrs = (ins DenseI64ArrayAttr:$strides,
    DenseI64ArrayAttr:$dilations, DenseI64ArrayAttr:$pads_begin,
    DenseI64ArrayAttr:$pads_end);

def Graph_ConvOp : Graph_Op<"conv", [Pure,
                                     Graph_Differentiable]> {
  let summary = "N-D convolution (ONNX Conv)";
  let description = [{
    `w` is [M, C / group, k...]; `bias` [M] is optional.

    ```mlir
    %y = graph.conv %x, %w, %b {strides = array<i64: 2, 2>, dilations = array<i64: 1, 1>,
        pads_begin = array<i64: 1, 1>, pads_end = array<i64: 1, 1>, group = 1 : i64}
        : (tensor<8x3x32x32xf32>, tensor<16x3x3x3xf32>, tensor<16xf32>) -> tensor<8x16x16x16xf32>
    ```
  }];
  let arguments = !con((ins Graph_F32Tensor:$input, Graph_F32Tensor:$weight,
                            Optional<Graph_F32Tensor>:$bias),
                       Graph_WindowAttrs, (ins I64Attr:$group));
  let results = (outs Graph_F32Tensor:$result);
  let assemblyFormat = [{
    $input `,` $weight (`,` $bias^)? attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Graph_ConvTransposeOp : Graph_Op<"conv_transpose",
    [Pure, Graph_Differentiable]> {
  let summary = "Transposed convolution (ONNX ConvTranspose)";
  let description = [{
    The adjoint of `graph.conv` with the same attributes, where the
    convolution's input has this op's result shape (output_padding already
    in it). `w` is [C, M / group, k...].

    ```mlir
    %y = graph.conv_transpose %x, %w {strides = array<i64: 2, 2>, dilations = array<i64: 1, 1>,
        pads_begin = array<i64: 0, 0>, pads_end = array<i64: 0, 0>, group = 1 : i64}
        : (tensor<1x1x3x3xf32>, tensor<1x2x3x3xf32>) -> tensor<1x2x7x7xf32>
    ```
  }];
  let arguments = !con((ins Graph_F32Tensor:$input, Graph_F32Tensor:$weight,
                            Optional<Graph_F32Tensor>:$bias),
                       Graph_WindowAttrs, (ins I64Attr:$group));
  let results = (outs Graph_F32Tensor:$result);
  let assemblyFormat = [{
    $input `,` $weight (`,` $bias^)? attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Graph_ConvGradInputOp : Graph_Op<"conv_grad_input", [Pure]> {
  let summary = "Gradient of graph.conv with respect to its input";
  let description = [{
    ```mlir
    %dx = graph.conv_grad_input %dy, %w {...} : (tensor<8x16x16x16xf32>,
        tensor<16x3x3x3xf32>) -> tensor<8x3x32x32xf32>
    ```
  }];
  let arguments = !con((ins Graph_F32Tensor:$grad, Graph_F32Tensor:$weight),
                       Graph_WindowAttrs, (ins I64Attr:$group));
  let results = (outs Graph_F32Tensor:$result);
  let assemblyFormat = "$grad `,` $weight attr-dict `:` functional-type(operands, results)";
}

def Graph_ConvGradWeightOp : Graph_Op<"conv_grad_weight", [Pure]> {
  let summary = "Gradient of graph.conv with respect to its weight";
  let description = [{
    ```mlir
    %dw = graph.conv_grad_weight %dy, %x {...} : (tensor<8x16x16x16xf32>,
        tensor<8x3x32x32xf32>) -> tensor<16x3x3x3xf32>
    ```
  }];
  let arguments = !con((ins Graph_F32Tensor:$grad, Graph_F32Tensor:$input),
                       Graph_WindowAttrs, (ins I64Attr:$group));
  let results = (outs Graph_F32Tensor:$result);
  let assemblyFormat = "$grad `,` $input attr-dict `:` functional-type(operands, results)";
}

def Graph_MaxPoolOp : Graph_Op<"max_pool", [Pure, Graph_Differentiable]> {
  let summary = "Max pooling (ONNX MaxPool)";
  let description = [{
    `indices` holds the position of each maximum within its (n, c) plane
    (row-major), for the backward.

    ```mlir
    %y, %i = graph.max_pool %x {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>,
        dilations = array<i64: 1, 1>, pads_begin = array<i64: 0, 0>, pads_end = array<i64: 0, 0>}
        : tensor<1x1x4x4xf32> -> (tensor<1x1x2x2xf32>, tensor<1x1x2x2xi64>)
    ```
  }];
  let arguments = !con((ins Graph_F32Tensor:$input,
                            DenseI64ArrayAttr:$kernel_shape),
                       Graph_WindowAttrs);
  let results = (outs Graph_F32Tensor:$result, Graph_TensorOf<[I64]>:$indices);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` `(` type($result) `,` type($indices) `)`";
  let hasVerifier = 1;
}

def Graph_MaxPoolGradOp : Graph_Op<"max_pool_grad", [Pure]> {
  let summary = "Backward of graph.max_pool: scatter-add through the indices";
  let description = [{
    ```mlir
    %dx = graph.max_pool_grad %dy, %i {...}
        : (tensor<1x1x2x2xf32>, tensor<1x1x2x2xi64>) -> tensor<1x1x4x4xf32>
    ```
  }];
  let arguments = !con((ins Graph_F32Tensor:$grad, Graph_TensorOf<[I64]>:$indices,
                            DenseI64ArrayAttr:$kernel_shape),
                       Graph_WindowAttrs);
  let results = (outs Graph_F32Tensor:$result);
  let assemblyFormat = "$grad `,` $indices attr-dict `:` functional-type(operands, results)";
}

def Graph_AvgPoolOp : Graph_Op<"avg_pool", [Pure, Graph_Differentiable]> {
  let summary = "Average pooling (ONNX AveragePool)";
  let description = [{
    ```mlir
    %y = graph.avg_pool %x {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>,
        dilations = array<i64: 1, 1>, pads_begin = array<i64: 0, 0>, pads_end = array<i64: 0, 0>,
        count_include_pad = false} : tensor<1x1x4x4xf32> -> tensor<1x1x2x2xf32>
    ```
  }];
  let arguments = !con((ins Graph_F32Tensor:$input,
                            DenseI64ArrayAttr:$kernel_shape),
                       Graph_WindowAttrs, (ins BoolAttr:$count_include_pad));
  let results = (outs Graph_F32Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def Graph_AvgPoolGradOp : Graph_Op<"avg_pool_grad", [Pure]> {
  let summary = "Backward of graph.avg_pool";
  let description = [{
    ```mlir
    %dx = graph.avg_pool_grad %dy {...} : tensor<1x1x2x2xf32> -> tensor<1x1x4x4xf32>
    ```
  }];
  let arguments = !con((ins Graph_F32Tensor:$grad,
                            DenseI64ArrayAttr:$kernel_shape),
                       Graph_WindowAttrs, (ins BoolAttr:$count_include_pad));
  let results = (outs Graph_F32Tensor:$result);
  let assemblyFormat = "$grad attr-dict `:` type($grad) `->` type($result)";
}

def Graph_BatchNormOp : Graph_Op<"batch_norm", [Pure, Graph_Differentiable]> {
  let summary = "Training-mode batch normalization (ONNX BatchNormalization, training_mode=1)";
  let description = [{
    Normalises with the batch's statistics over N and the spatial dims;
    `new_mean`/`new_var` are the updated running statistics
    (`running * momentum + batch * (1 - momentum)` with the biased batch
    variance as ONNX defines it, or the unbiased one as PyTorch when
    `unbiased_running_var`), `saved_mean`/`saved_invstd` feed the backward.

    ```mlir
    %y, %rm, %rv, %sm, %si = graph.batch_norm %x, %s, %b, %m, %v
        {epsilon = 1.0e-05 : f32, momentum = 0.9 : f32}
        : (tensor<8x16x4x4xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>)
        -> (tensor<8x16x4x4xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>)
    ```
  }];
  let arguments = (ins Graph_F32Tensor:$input, Graph_F32Tensor:$scale,
                       Graph_F32Tensor:$bias, Graph_F32Tensor:$running_mean,
                       Graph_F32Tensor:$running_var, F32Attr:$epsilon,
                       F32Attr:$momentum,
                       DefaultValuedAttr<BoolAttr, "false">:$unbiased_running_var);
  let results = (outs Graph_F32Tensor:$result, Graph_F32Tensor:$new_mean,
                      Graph_F32Tensor:$new_var, Graph_F32Tensor:$saved_mean,
                      Graph_F32Tensor:$saved_invstd);
  let assemblyFormat = "$input `,` $scale `,` $bias `,` $running_mean `,` $running_var attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Graph_BatchNormInferenceOp : Graph_Op<"batch_norm_inference",
    [Pure, Graph_Differentiable]> {
  let summary = "Inference-mode batch normalization (ONNX BatchNormalization)";
  let description = [{
    `y = scale * (x - mean) / sqrt(var + epsilon) + bias` per channel.

    ```mlir
    %y = graph.batch_norm_inference %x, %s, %b, %m, %v {epsilon = 1.0e-05 : f32}
        : (tensor<8x16x4x4xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>)
        -> tensor<8x16x4x4xf32>
    ```
  }];
  let arguments = (ins Graph_F32Tensor:$input, Graph_F32Tensor:$scale,
                       Graph_F32Tensor:$bias, Graph_F32Tensor:$mean,
                       Graph_F32Tensor:$var, F32Attr:$epsilon);
  let results = (outs Graph_F32Tensor:$result);
  let assemblyFormat = "$input `,` $scale `,` $bias `,` $mean `,` $var attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

/// Backward of the three normalizations: (dx, dscale, dbias).
class Graph_NormGradOp<string mnemonic, string forward>
    : Graph_Op<mnemonic, [Pure]> {
  let summary = "Backward of graph." # forward;
  let description = [{
    From the forward's input, scale and saved statistics.

    ```mlir
    %dx, %ds, %db = graph.}] # mnemonic # [{ %dy, %x, %s, %mean, %invstd {...} : ...
    ```
  }];
  let arguments = (ins Graph_F32Tensor:$grad, Graph_F32Tensor:$input,
                       Graph_F32Tensor:$scale, Graph_F32Tensor:$mean,
                       Graph_F32Tensor:$invstd,
                       DefaultValuedAttr<I64Attr, "1">:$axis);
  let results = (outs Graph_F32Tensor:$dinput, Graph_F32Tensor:$dscale,
                      Graph_F32Tensor:$dbias);
  let assemblyFormat = "$grad `,` $input `,` $scale `,` $mean `,` $invstd attr-dict `:` functional-type(operands, results)";
}

def Graph_BatchNormGradOp : Graph_NormGradOp<"batch_norm_grad", "batch_norm">;
def Graph_LayerNormGradOp : Graph_NormGradOp<"layer_norm_grad", "layer_norm">;
def Graph_InstanceNormGradOp
    : Graph_NormGradOp<"instance_norm_grad", "instance_norm">;

def Graph_LayerNormOp : Graph_Op<"layer_norm", [Pure,
                                                Graph_Differentiable]> {
  let summary = "Layer normalization over the dims from `axis` (ONNX LayerNormalization)";
  let description = [{
    `mean`/`invstd` have the input's shape with the normalised dims set to 1.

    ```mlir
    %y, %m, %r = graph.layer_norm %x, %s, %b {axis = -1 : i64, epsilon = 1.0e-05 : f32}
        : (tensor<8x64xf32>, tensor<64xf32>, tensor<64xf32>)
        -> (tensor<8x64xf32>, tensor<8x1xf32>, tensor<8x1xf32>)
    ```
  }];
  let arguments = (ins Graph_F32Tensor:$input, Graph_F32Tensor:$scale,
                       Optional<Graph_F32Tensor>:$bias, I64Attr:$axis,
                       F32Attr:$epsilon);
  let results = (outs Graph_F32Tensor:$result, Graph_F32Tensor:$mean,
                      Graph_F32Tensor:$invstd);
  let assemblyFormat = "$input `,` $scale (`,` $bias^)? attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Graph_InstanceNormOp : Graph_Op<"instance_norm", [Pure, Graph_Differentiable]> {
  let summary = "Instance normalization (ONNX InstanceNormalization)";
  let description = [{
    Statistics per (n, c) over the spatial dims; `mean`/`invstd` are [N, C].

    ```mlir
    %y, %m, %r = graph.instance_norm %x, %s, %b {epsilon = 1.0e-05 : f32}
        : (tensor<2x3x4x4xf32>, tensor<3xf32>, tensor<3xf32>)
        -> (tensor<2x3x4x4xf32>, tensor<2x3xf32>, tensor<2x3xf32>)
    ```
  }];
  let arguments = (ins Graph_F32Tensor:$input, Graph_F32Tensor:$scale,
                       Graph_F32Tensor:$bias, F32Attr:$epsilon);
  let results = (outs Graph_F32Tensor:$result, Graph_F32Tensor:$mean,
                      Graph_F32Tensor:$invstd);
  let assemblyFormat = "$input `,` $scale `,` $bias attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

#endif // OTC_GRAPH_NN_OPS
