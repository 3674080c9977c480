// RUN: otc-opt %s --otc-build-training="optimizer=sgd lr=0.1" | FileCheck %s

// GELU's derivative reads its input and its output (Phi(x) = y / x), in
// both forms; the tanh form carries beta = 1.
func.func @forward(%x: tensor<4x8xf32> {otc.input = "input", otc.role = "data"},
                   %w: tensor<3x8xf32> {otc.param = "fc.weight"}) -> (tensor<4x3xf32> {otc.output = "logits"}) {
  %h = graph.gemm %x, %w {transB = true} : (tensor<4x8xf32>, tensor<3x8xf32>) -> tensor<4x3xf32>
  %g = graph.gelu %h : tensor<4x3xf32>
  %t = graph.gelu %g {approximate = "tanh"} : tensor<4x3xf32>
  return %t : tensor<4x3xf32>
}

// CHECK-LABEL: func.func @train_step(
// CHECK: %[[H:.*]] = graph.gemm
// CHECK: %[[G:.*]] = graph.gelu %[[H]] :
// CHECK: %[[T:.*]] = graph.gelu %[[G]] {approximate = "tanh"}
// CHECK: %[[DT:.*]] = graph.softmax_cross_entropy_grad
// CHECK: %[[DG:.*]] = graph.unary_grad "gelu" %[[DT]] x %[[G]] y %[[T]] {beta = 1.000000e+00 : f32}
// CHECK: graph.unary_grad "gelu" %[[DG]] x %[[H]] y %[[G]] :
