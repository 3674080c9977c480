// RUN: otc-opt %s --split-input-file --otc-build-training="loss=mse" | FileCheck %s

// A matrix shared by a batch of rows (a Linear layer over [batch, tokens,
// features], as exported: MatMul with a 2-D weight) gets its gradient as
// one product over all rows, dW = A^T dY, not a batch of products summed.
// CHECK-LABEL: func.func @train_step(
// CHECK-SAME: %[[X:[^:]*]]: tensor<2x5x4xf32>
// CHECK-SAME: %[[W:[^:]*]]: tensor<4x3xf32>
// CHECK: %[[DY:.*]] = graph.mse_grad
// CHECK-DAG: %[[X2:.*]] = graph.reshape %[[X]] : tensor<2x5x4xf32> -> tensor<10x4xf32>
// CHECK-DAG: %[[DY2:.*]] = graph.reshape %[[DY]] : tensor<2x5x3xf32> -> tensor<10x3xf32>
// CHECK: %[[DW:.*]] = graph.gemm %[[X2]], %[[DY2]] {{{.*}}transA = true{{.*}}} : (tensor<10x4xf32>, tensor<10x3xf32>) -> tensor<4x3xf32>
// CHECK-NOT: graph.reduce_sum_to
// CHECK: graph.sgd_update %[[W]], %[[DW]]
func.func @forward(%x: tensor<2x5x4xf32> {otc.input = "input", otc.role = "data"},
                   %w: tensor<4x3xf32> {otc.param = "w"}) -> (tensor<2x5x3xf32> {otc.output = "y"}) {
  %y = graph.matmul %x, %w : (tensor<2x5x4xf32>, tensor<4x3xf32>) -> tensor<2x5x3xf32>
  return %y : tensor<2x5x3xf32>
}

// -----

// The weight read transposed ([N, K], transB): dW = dY^T A.
// CHECK-LABEL: func.func @train_step(
// CHECK-SAME: %[[X:[^:]*]]: tensor<2x5x4xf32>
// CHECK-SAME: %[[W:[^:]*]]: tensor<3x4xf32>
// CHECK: %[[DY:.*]] = graph.mse_grad
// CHECK-DAG: %[[X2:.*]] = graph.reshape %[[X]] : tensor<2x5x4xf32> -> tensor<10x4xf32>
// CHECK-DAG: %[[DY2:.*]] = graph.reshape %[[DY]] : tensor<2x5x3xf32> -> tensor<10x3xf32>
// CHECK: %[[DW:.*]] = graph.gemm %[[DY2]], %[[X2]] {{{.*}}transA = true{{.*}}} : (tensor<10x3xf32>, tensor<10x4xf32>) -> tensor<3x4xf32>
// CHECK-NOT: graph.reduce_sum_to
// CHECK: graph.sgd_update %[[W]], %[[DW]]
func.func @forward(%x: tensor<2x5x4xf32> {otc.input = "input", otc.role = "data"},
                   %w: tensor<3x4xf32> {otc.param = "w"}) -> (tensor<2x5x3xf32> {otc.output = "y"}) {
  %y = graph.matmul %x, %w {transB = true} : (tensor<2x5x4xf32>, tensor<3x4xf32>) -> tensor<2x5x3xf32>
  return %y : tensor<2x5x3xf32>
}
