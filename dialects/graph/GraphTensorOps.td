//===- GraphTensorOps.td - reductions, indexing, data movement -*- tablegen -*-===//
//
// Included by GraphOps.td. Shapes are static: the importer resolves ONNX's
// shape inputs (axes, starts, pads, repeats, sizes) to attributes and result
// types, and the verifiers (GraphTensorOps.cpp) check them.
//
//===----------------------------------------------------------------------===//

#ifndef OTC_GRAPH_TENSOR_OPS
#define OTC_GRAPH_TENSOR_OPS

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

def Graph_ReduceOp : Graph_Op<"reduce", [Pure, Graph_Differentiable]> {
  let summary = "Reduction over axes (ONNX Reduce*)";
  let description = [{
    `kind`: sum, mean, max, min, prod, sum_square, l1, l2, log_sum_exp.
    `axes` are sorted and non-negative; the result keeps them as size-1
    dimensions when `keepdims`, else drops them.

    ```mlir
    %m = graph.reduce "mean" %x {axes = array<i64: 1>, keepdims = true}
        : tensor<8x16xf32> -> tensor<8x1xf32>
    ```
  }];
  let arguments = (ins StrAttr:$kind, Graph_F32Tensor:$input,
                       DenseI64ArrayAttr:$axes, BoolAttr:$keepdims);
  let results = (outs Graph_F32Tensor:$result);
  let assemblyFormat = "$kind $input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def Graph_ReduceGradOp : Graph_Op<"reduce_grad", [Pure]> {
  let summary = "Backward of graph.reduce";
  let description = [{
    `dx` from the forward's input, output and the output's gradient. Ties of
    max/min share the gradient evenly (as PyTorch's amax/amin).

    ```mlir
    %dx = graph.reduce_grad "max" %dy, %x, %y {axes = array<i64: 1>}
        : (tensor<8x1xf32>, tensor<8x16xf32>, tensor<8x1xf32>) -> tensor<8x16xf32>
    ```
  }];
  let arguments = (ins StrAttr:$kind, Graph_F32Tensor:$grad,
                       Graph_F32Tensor:$input, Graph_F32Tensor:$output,
                       DenseI64ArrayAttr:$axes);
  let results = (outs Graph_F32Tensor:$result);
  let assemblyFormat = [{
    $kind $grad `,` $input `,` $output attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Graph_ArgReduceOp : Graph_Op<"arg_reduce", [Pure]> {
  let summary = "Index of the max or min along an axis (ONNX ArgMax, ArgMin)";
  let description = [{
    float32 or int64 (the importer widens other integers, exactly).

    ```mlir
    %i = graph.arg_reduce "max" %x {axis = 1 : i64, keepdims = false,
        select_last_index = false} : tensor<8x10xf32> -> tensor<8xi64>
    ```
  }];
  let arguments = (ins StrAttr:$kind, Graph_TensorOf<[F32, I64]>:$input,
                       I64Attr:$axis, BoolAttr:$keepdims,
                       BoolAttr:$select_last_index);
  let results = (outs Graph_TensorOf<[I64]>:$result);
  let assemblyFormat = "$kind $input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def Graph_CumSumOp : Graph_Op<"cumsum",
    [Pure, SameOperandsAndResultType, Graph_Differentiable]> {
  let summary = "Cumulative sum along an axis (ONNX CumSum)";
  let description = [{
    float32 or int64 (the importer widens other integers; integer sums
    wrap and have no gradient).

    ```mlir
    %y = graph.cumsum %x {axis = 0 : i64, exclusive = false, reverse = false} : tensor<5xf32>
    ```
  }];
  let arguments = (ins Graph_TensorOf<[F32, I64]>:$input, I64Attr:$axis,
                       BoolAttr:$exclusive, BoolAttr:$reverse);
  let results = (outs Graph_TensorOf<[F32, I64]>:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
  let hasVerifier = 1;
}

def Graph_TopKOp : Graph_Op<"topk", [Pure, Graph_Differentiable]> {
  let summary = "The k largest (or smallest) along an axis, sorted (ONNX TopK)";
  let description = [{
    Ties go to the lower index.

    ```mlir
    %v, %i = graph.topk %x {axis = 1 : i64, k = 3 : i64, largest = true}
        : tensor<4x8xf32> -> (tensor<4x3xf32>, tensor<4x3xi64>)
    ```
  }];
  let arguments = (ins Graph_F32Tensor:$input, I64Attr:$axis, I64Attr:$k,
                       BoolAttr:$largest);
  let results = (outs Graph_F32Tensor:$values, Graph_TensorOf<[I64]>:$indices);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` `(` type($values) `,` type($indices) `)`";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Data movement
//===----------------------------------------------------------------------===//

def Graph_SliceOp : Graph_Op<"slice", [Pure, Graph_Differentiable]> {
  let summary = "Strided slice with static bounds (ONNX Slice, Split)";
  let description = [{
    `result[i] = input[starts + i * steps]` per dimension; the result type
    gives the extent. Steps may be negative.

    ```mlir
    %y = graph.slice %x {starts = array<i64: 0, 2>, steps = array<i64: 1, 2>}
        : tensor<4x8xf32> -> tensor<4x3xf32>
    ```
  }];
  let arguments = (ins Graph_AnyTensor:$input, DenseI64ArrayAttr:$starts,
                       DenseI64ArrayAttr:$steps);
  let results = (outs Graph_AnyTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Graph_SliceGradOp : Graph_Op<"slice_grad", [Pure]> {
  let summary = "Backward of graph.slice: scatter into zeros";
  let description = [{
    ```mlir
    %dx = graph.slice_grad %dy {starts = array<i64: 0, 2>, steps = array<i64: 1, 2>}
        : tensor<4x3xf32> -> tensor<4x8xf32>
    ```
  }];
  let arguments = (ins Graph_F32Tensor:$grad, DenseI64ArrayAttr:$starts,
                       DenseI64ArrayAttr:$steps);
  let results = (outs Graph_F32Tensor:$result);
  let assemblyFormat = "$grad attr-dict `:` type($grad) `->` type($result)";
  let hasVerifier = 1;
}

def Graph_ConcatOp : Graph_Op<"concat", [Pure, Graph_Differentiable]> {
  let summary = "Concatenation along an axis (ONNX Concat)";
  let description = [{
    ```mlir
    %y = graph.concat %a, %b {axis = 1 : i64}
        : (tensor<4x2xf32>, tensor<4x3xf32>) -> tensor<4x5xf32>
    ```
  }];
  let arguments = (ins Variadic<Graph_AnyTensor>:$inputs, I64Attr:$axis);
  let results = (outs Graph_AnyTensor:$result);
  let assemblyFormat = "$inputs attr-dict `:` functional-type($inputs, results)";
  let hasVerifier = 1;
}

def Graph_ExpandOp : Graph_Op<"expand", [Pure, Graph_Differentiable]> {
  let summary = "Broadcast to a larger shape (ONNX Expand)";
  let description = [{
    ```mlir
    %y = graph.expand %x : tensor<1x8xf32> -> tensor<4x8xf32>
    ```
  }];
  let arguments = (ins Graph_AnyTensor:$input);
  let results = (outs Graph_AnyTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Graph_TileOp : Graph_Op<"tile", [Pure, Graph_Differentiable]> {
  let summary = "Repeat along each dimension (ONNX Tile)";
  let description = [{
    ```mlir
    %y = graph.tile %x {repeats = array<i64: 2, 1>} : tensor<3x4xf32> -> tensor<6x4xf32>
    ```
  }];
  let arguments = (ins Graph_AnyTensor:$input, DenseI64ArrayAttr:$repeats);
  let results = (outs Graph_AnyTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def Graph_PadOp : Graph_Op<"pad", [Pure, Graph_Differentiable]> {
  let summary = "Pad (or crop, for negative pads) each dimension (ONNX Pad)";
  let description = [{
    `mode`: constant (with `value`), reflect or edge.

    ```mlir
    %y = graph.pad %x {mode = "constant", pads_begin = array<i64: 0, 1>,
        pads_end = array<i64: 0, 1>, value = 0.0 : f32} : tensor<2x3xf32> -> tensor<2x5xf32>
    ```
  }];
  let arguments = (ins Graph_AnyTensor:$input, StrAttr:$mode,
                       DenseI64ArrayAttr:$pads_begin,
                       DenseI64ArrayAttr:$pads_end,
                       DefaultValuedAttr<F32Attr, "0.0f">:$value);
  let results = (outs Graph_AnyTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def Graph_PadGradOp : Graph_Op<"pad_grad", [Pure]> {
  let summary = "Backward of graph.pad";
  let description = [{
    ```mlir
    %dx = graph.pad_grad %dy {mode = "reflect", pads_begin = array<i64: 0, 1>,
        pads_end = array<i64: 0, 1>} : tensor<2x5xf32> -> tensor<2x3xf32>
    ```
  }];
  let arguments = (ins Graph_F32Tensor:$grad, StrAttr:$mode,
                       DenseI64ArrayAttr:$pads_begin,
                       DenseI64ArrayAttr:$pads_end);
  let results = (outs Graph_F32Tensor:$result);
  let assemblyFormat = "$grad attr-dict `:` type($grad) `->` type($result)";
}

def Graph_TriluOp : Graph_Op<"trilu",
    [Pure, SameOperandsAndResultType, Graph_Differentiable]> {
  let summary = "Upper or lower triangle of the last two dimensions (ONNX Trilu)";
  let description = [{
    ```mlir
    %y = graph.trilu %x {k = 0 : i64, upper = true} : tensor<4x4xf32>
    ```
  }];
  let arguments = (ins Graph_AnyTensor:$input, I64Attr:$k, BoolAttr:$upper);
  let results = (outs Graph_AnyTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
  let hasVerifier = 1;
}

def Graph_ResizeOp : Graph_Op<"resize", [Pure, Graph_Differentiable]> {
  let summary = "Nearest or n-linear resize (ONNX Resize)";
  let description = [{
    `mode`: nearest | linear; `coordinate_transformation_mode` and
    `nearest_mode` as ONNX; `scales` per dimension (output / input unless
    ONNX gave explicit scales).

    ```mlir
    %y = graph.resize %x {mode = "nearest", coordinate_transformation_mode = "asymmetric",
        nearest_mode = "floor", scales = array<f32: 1.0, 1.0, 2.0, 2.0>}
        : tensor<1x1x2x2xf32> -> tensor<1x1x4x4xf32>
    ```
  }];
  let arguments = (ins Graph_F32Tensor:$input, StrAttr:$mode,
                       StrAttr:$coordinate_transformation_mode,
                       StrAttr:$nearest_mode, DenseF32ArrayAttr:$scales);
  let results = (outs Graph_F32Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def Graph_ResizeGradOp : Graph_Op<"resize_grad", [Pure]> {
  let summary = "Backward of graph.resize (the adjoint interpolation)";
  let description = [{
    ```mlir
    %dx = graph.resize_grad %dy {mode = "linear", coordinate_transformation_mode = "half_pixel",
        nearest_mode = "floor", scales = array<f32: 1.0, 1.0, 2.0, 2.0>}
        : tensor<1x1x4x4xf32> -> tensor<1x1x2x2xf32>
    ```
  }];
  let arguments = (ins Graph_F32Tensor:$grad, StrAttr:$mode,
                       StrAttr:$coordinate_transformation_mode,
                       StrAttr:$nearest_mode, DenseF32ArrayAttr:$scales);
  let results = (outs Graph_F32Tensor:$result);
  let assemblyFormat = "$grad attr-dict `:` type($grad) `->` type($result)";
}

//===----------------------------------------------------------------------===//
// Indexing
//===----------------------------------------------------------------------===//

def Graph_GatherOp : Graph_Op<"gather", [Pure, Graph_Differentiable]> {
  let summary = "Gather slices along an axis (ONNX Gather; embeddings)";
  let description = [{
    Negative indices count from the end; an index out of range fails the
    step with a clear status.

    ```mlir
    %e = graph.gather %table, %ids {axis = 0 : i64}
        : (tensor<512x64xf32>, tensor<8x16xi64>) -> tensor<8x16x64xf32>
    ```
  }];
  let arguments = (ins Graph_AnyTensor:$input, Graph_IndexTensor:$indices,
                       I64Attr:$axis);
  let results = (outs Graph_AnyTensor:$result);
  let assemblyFormat = "$input `,` $indices attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Graph_GatherGradOp : Graph_Op<"gather_grad", [Pure]> {
  let summary = "Backward of graph.gather: scatter-add into zeros";
  let description = [{
    ```mlir
    %dt = graph.gather_grad %dy, %ids {axis = 0 : i64}
        : (tensor<8x16x64xf32>, tensor<8x16xi64>) -> tensor<512x64xf32>
    ```
  }];
  let arguments = (ins Graph_F32Tensor:$grad, Graph_IndexTensor:$indices,
                       I64Attr:$axis);
  let results = (outs Graph_F32Tensor:$result);
  let assemblyFormat = "$grad `,` $indices attr-dict `:` functional-type(operands, results)";
}

def Graph_GatherElementsOp : Graph_Op<"gather_elements",
    [Pure, Graph_Differentiable]> {
  let summary = "Gather single elements along an axis (ONNX GatherElements)";
  let description = [{
    ```mlir
    %y = graph.gather_elements %x, %i {axis = 1 : i64}
        : (tensor<2x3xf32>, tensor<2x2xi64>) -> tensor<2x2xf32>
    ```
  }];
  let arguments = (ins Graph_AnyTensor:$input, Graph_IndexTensor:$indices,
                       I64Attr:$axis);
  let results = (outs Graph_AnyTensor:$result);
  let assemblyFormat = "$input `,` $indices attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Graph_GatherElementsGradOp : Graph_Op<"gather_elements_grad", [Pure]> {
  let summary = "Backward of gather_elements (and topk): scatter-add into zeros";
  let description = [{
    ```mlir
    %dx = graph.gather_elements_grad %dy, %i {axis = 1 : i64}
        : (tensor<2x2xf32>, tensor<2x2xi64>) -> tensor<2x3xf32>
    ```
  }];
  let arguments = (ins Graph_F32Tensor:$grad, Graph_IndexTensor:$indices,
                       I64Attr:$axis);
  let results = (outs Graph_F32Tensor:$result);
  let assemblyFormat = "$grad `,` $indices attr-dict `:` functional-type(operands, results)";
}

def Graph_ScatterElementsOp : Graph_Op<"scatter_elements",
    [Pure, Graph_Differentiable]> {
  let summary = "Scatter updates into a copy of data (ONNX ScatterElements)";
  let description = [{
    `reduction`: none, add, mul, max, min. Updates apply in index order.

    ```mlir
    %y = graph.scatter_elements %d, %i, %u {axis = 1 : i64, reduction = "none"}
        : (tensor<2x3xf32>, tensor<2x2xi64>, tensor<2x2xf32>) -> tensor<2x3xf32>
    ```
  }];
  let arguments = (ins Graph_F32Tensor:$data, Graph_IndexTensor:$indices,
                       Graph_F32Tensor:$updates, I64Attr:$axis,
                       StrAttr:$reduction);
  let results = (outs Graph_F32Tensor:$result);
  let assemblyFormat = "$data `,` $indices `,` $updates attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Graph_OneHotOp : Graph_Op<"one_hot", [Pure, Graph_Differentiable]> {
  let summary = "One-hot encoding along a new axis (ONNX OneHot)";
  let description = [{
    The integer indices receive no gradient: the result is piecewise
    constant in whatever computed them (Hardmax's ArgMax).

    ```mlir
    %y = graph.one_hot %i {axis = -1 : i64, depth = 10 : i64, off_value = 0.0 : f32,
        on_value = 1.0 : f32} : tensor<8xi64> -> tensor<8x10xf32>
    ```
  }];
  let arguments = (ins Graph_IndexTensor:$indices, I64Attr:$axis,
                       I64Attr:$depth, F32Attr:$off_value, F32Attr:$on_value);
  let results = (outs Graph_F32Tensor:$result);
  let assemblyFormat = "$indices attr-dict `:` type($indices) `->` type($result)";
  let hasVerifier = 1;
}

#endif // OTC_GRAPH_TENSOR_OPS
