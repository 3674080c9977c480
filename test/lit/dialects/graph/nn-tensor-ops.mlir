// RUN: otc-opt %s --split-input-file | otc-opt | FileCheck %s
// RUN: otc-opt %s --split-input-file --verify-diagnostics --split-input-file --mlir-print-op-on-diagnostic=false -o /dev/null 2>&1 | FileCheck %s --check-prefix=NONE --allow-empty

// The convolution, pooling, normalization, reduction and data-movement ops
// parse, verify and print back.
// NONE-NOT: error

// CHECK-LABEL: func.func @cnn
// CHECK: graph.conv %{{.*}}, %{{.*}}, %{{.*}} {dilations = array<i64: 1, 1>, group = 1 : i64, pads_begin = array<i64: 1, 1>, pads_end = array<i64: 1, 1>, strides = array<i64: 2, 2>}
// CHECK: graph.batch_norm
// CHECK: graph.max_pool
// CHECK: graph.reduce "mean"
func.func @cnn(%x: tensor<8x3x32x32xf32>, %w: tensor<16x3x3x3xf32>, %b: tensor<16xf32>,
               %s: tensor<16xf32>, %m: tensor<16xf32>, %v: tensor<16xf32>) -> tensor<8x16x1x1xf32> {
  %c = graph.conv %x, %w, %b {strides = array<i64: 2, 2>, dilations = array<i64: 1, 1>,
      pads_begin = array<i64: 1, 1>, pads_end = array<i64: 1, 1>, group = 1 : i64}
      : (tensor<8x3x32x32xf32>, tensor<16x3x3x3xf32>, tensor<16xf32>) -> tensor<8x16x16x16xf32>
  %y, %rm, %rv, %sm, %si = graph.batch_norm %c, %s, %b, %m, %v {epsilon = 1.0e-05 : f32, momentum = 0.9 : f32}
      : (tensor<8x16x16x16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>)
      -> (tensor<8x16x16x16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>)
  %p, %i = graph.max_pool %y {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>,
      dilations = array<i64: 1, 1>, pads_begin = array<i64: 0, 0>, pads_end = array<i64: 0, 0>}
      : tensor<8x16x16x16xf32> -> (tensor<8x16x8x8xf32>, tensor<8x16x8x8xi64>)
  %g = graph.reduce "mean" %p {axes = array<i64: 2, 3>, keepdims = true}
      : tensor<8x16x8x8xf32> -> tensor<8x16x1x1xf32>
  return %g : tensor<8x16x1x1xf32>
}

// -----

// CHECK-LABEL: func.func @attention
// CHECK: graph.matmul %{{.*}}, %{{.*}} {transB = true} : (tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>) -> tensor<2x4x16x16xf32>
// CHECK: graph.where
// CHECK: graph.slice
// CHECK: graph.gather
func.func @attention(%q: tensor<2x4x16x8xf32>, %k: tensor<2x4x16x8xf32>, %mask: tensor<16x16xi1>,
                     %table: tensor<512x8xf32>, %ids: tensor<2x16xi64>)
    -> (tensor<2x4x16x16xf32>, tensor<2x4x8x8xf32>, tensor<2x16x8xf32>) {
  %s = graph.matmul %q, %k {transB = true} : (tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>) -> tensor<2x4x16x16xf32>
  %ninf = graph.constant dense<0xFF800000> : tensor<f32>
  %m = graph.where %mask, %s, %ninf : (tensor<16x16xi1>, tensor<2x4x16x16xf32>, tensor<f32>) -> tensor<2x4x16x16xf32>
  %h = graph.slice %q {starts = array<i64: 0, 0, 0, 0>, steps = array<i64: 1, 1, 2, 1>}
      : tensor<2x4x16x8xf32> -> tensor<2x4x8x8xf32>
  %e = graph.gather %table, %ids {axis = 0 : i64} : (tensor<512x8xf32>, tensor<2x16xi64>) -> tensor<2x16x8xf32>
  return %m, %h, %e : tensor<2x4x16x16xf32>, tensor<2x4x8x8xf32>, tensor<2x16x8xf32>
}
