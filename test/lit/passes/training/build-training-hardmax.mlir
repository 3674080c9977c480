// RUN: otc-opt %s --otc-build-training | FileCheck %s

// Hardmax (one_hot of arg_reduce) is piecewise constant: its indices take
// no gradient, and the parameters get theirs through the other operand.
// CHECK-LABEL: func.func @train_step(
// CHECK: %[[Y:.*]] = graph.matmul %{{.*}}, %{{.*}} : (tensor<4x8xf32>, tensor<8x3xf32>) -> tensor<4x3xf32>
// CHECK: %[[I:.*]] = graph.arg_reduce "max" %[[Y]]
// CHECK: %[[H:.*]] = graph.one_hot %[[I]]
// CHECK: %[[DY:.*]] = graph.softmax_cross_entropy_grad
// CHECK: %[[D:.*]] = graph.mul %[[DY]], %[[H]]
// CHECK: %[[DW:.*]] = graph.matmul %{{.*}}, %[[D]] {transA = true}
// CHECK: graph.sgd_update %{{.*}}, %[[DW]]
func.func @forward(%x: tensor<4x8xf32> {otc.input = "input", otc.role = "data"},
                   %w: tensor<8x3xf32> {otc.param = "w"}) -> (tensor<4x3xf32> {otc.output = "y"}) {
  %y = graph.matmul %x, %w : (tensor<4x8xf32>, tensor<8x3xf32>) -> tensor<4x3xf32>
  %i = graph.arg_reduce "max" %y {axis = 1 : i64, keepdims = false, select_last_index = false} : tensor<4x3xf32> -> tensor<4xi64>
  %h = graph.one_hot %i {axis = 1 : i64, depth = 3 : i64, off_value = 0.0 : f32, on_value = 1.0 : f32} : tensor<4xi64> -> tensor<4x3xf32>
  %z = graph.mul %h, %y : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
  return %z : tensor<4x3xf32>
}
