// RUN: otc-opt %s --split-input-file --otc-build-training="optimizer=momentum lr=0.05 nesterov=true" | FileCheck %s
// RUN: otc-opt %s --split-input-file --otc-build-training="loss=mse optimizer=adamw lr=0.001 weight-decay=0.01" | FileCheck %s --check-prefix=ADAMW

func.func @forward(%x: tensor<4x8xf32> {otc.input = "input", otc.role = "data"},
                   %w: tensor<3x8xf32> {otc.param = "fc.weight"},
                   %b: tensor<3xf32> {otc.param = "fc.bias"}) -> (tensor<4x3xf32> {otc.output = "logits"}) {
  %h = graph.gemm %x, %w, %b {transB = true} : (tensor<4x8xf32>, tensor<3x8xf32>, tensor<3xf32>) -> tensor<4x3xf32>
  %y = graph.tanh %h : tensor<4x3xf32>
  return %y : tensor<4x3xf32>
}

// @forward is replaced by @train_step and @eval_step.
// CHECK-NOT: func.func @forward
// CHECK: module attributes {{{.*}}otc.training = {{{.*}}loss = "cross-entropy"{{.*}}optimizer = "momentum"
// CHECK-LABEL: func.func @train_step(
// CHECK-SAME: %[[X:.*]]: tensor<4x8xf32> {otc.input = "input", otc.role = "data"}
// CHECK-SAME: %[[W:.*]]: tensor<3x8xf32> {otc.param = "fc.weight"}
// CHECK-SAME: %[[B:.*]]: tensor<3xf32> {otc.param = "fc.bias"}
// CHECK-SAME: %[[L:.*]]: tensor<4xi64> {otc.input = "labels", otc.role = "label"}
// CHECK-SAME: %[[VW:.*]]: tensor<3x8xf32> {otc.state = "fc.weight.momentum_buffer"}
// CHECK-SAME: %[[VB:.*]]: tensor<3xf32> {otc.state = "fc.bias.momentum_buffer"}
// CHECK-SAME: -> (tensor<3x8xf32> {otc.updates = 1 : i64}, tensor<3x8xf32> {otc.updates = 4 : i64}, tensor<3xf32> {otc.updates = 2 : i64}, tensor<3xf32> {otc.updates = 5 : i64}, tensor<f32> {otc.output = "loss"})
// CHECK: %[[H:.*]] = graph.gemm %[[X]], %[[W]], %[[B]]
// CHECK: %[[Y:.*]] = graph.tanh %[[H]]
// CHECK: %[[LOSS:.*]], %[[P:.*]] = graph.softmax_cross_entropy %[[Y]], %[[L]]
// CHECK: %[[DY:.*]] = graph.softmax_cross_entropy_grad %[[P]], %[[L]]
// CHECK: %[[DH:.*]] = graph.unary_grad "tanh" %[[DY]] y %[[Y]]
// CHECK-DAG: %[[DW:.*]] = graph.gemm %[[DH]], %[[X]] {{{.*}}transA = true
// CHECK-DAG: %[[DB:.*]] = graph.reduce_sum_to %[[DH]] : tensor<4x3xf32> -> tensor<3xf32>
// CHECK: graph.momentum_update %[[W]], %[[DW]], %[[VW]] {{{.*}}nesterov = true
// CHECK: graph.momentum_update %[[B]], %[[DB]], %[[VB]]
// CHECK-LABEL: func.func @eval_step(
// CHECK-SAME: -> (tensor<4x3xf32> {otc.output = "eval_output"}, tensor<f32> {otc.output = "eval_loss"})
// CHECK-NOT: _grad
// CHECK: return

// ADAMW-LABEL: func.func @train_step(
// ADAMW-SAME: tensor<4x3xf32> {otc.input = "labels", otc.role = "label"}
// ADAMW-SAME: {otc.state = "fc.weight.exp_avg"}
// ADAMW-SAME: {otc.state = "fc.weight.exp_avg_sq"}
// ADAMW: graph.mse
// ADAMW: graph.mse_grad
// The hyperparameters are run-time values, not attributes of the update;
// the module records the values a session starts from.
// ADAMW: graph.adamw_update %{{[^{]*}} : tensor<3x8xf32>

// -----

// A parameter the loss does not reach stays as it is, with a warning.
func.func @forward(%x: tensor<2x2xf32> {otc.input = "x", otc.role = "data"},
                   %w: tensor<2x2xf32> {otc.param = "w"},
                   %unused: tensor<2xf32> {otc.param = "unused"}) -> (tensor<2x2xf32> {otc.output = "y"}) {
  %y = graph.matmul %x, %w : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>
  return %y : tensor<2x2xf32>
}
// CHECK-LABEL: func.func @train_step(
// CHECK: graph.momentum_update
// CHECK-NOT: graph.momentum_update
// CHECK: return

// -----

// A layer's parameter gradients come before its input gradient, so that
// their bucket's collective can run while the input gradient is computed:
// fc2's weight and bias gradients, then the gradient flowing back into fc1.
func.func @forward(%x: tensor<4x8xf32> {otc.input = "input", otc.role = "data"},
                   %w1: tensor<6x8xf32> {otc.param = "fc1.weight"},
                   %w2: tensor<3x6xf32> {otc.param = "fc2.weight"},
                   %b2: tensor<3xf32> {otc.param = "fc2.bias"}) -> (tensor<4x3xf32> {otc.output = "logits"}) {
  %h = graph.gemm %x, %w1 {transB = true} : (tensor<4x8xf32>, tensor<6x8xf32>) -> tensor<4x6xf32>
  %r = graph.relu %h : tensor<4x6xf32>
  %y = graph.gemm %r, %w2, %b2 {transB = true} : (tensor<4x6xf32>, tensor<3x6xf32>, tensor<3xf32>) -> tensor<4x3xf32>
  return %y : tensor<4x3xf32>
}
// CHECK-LABEL: func.func @train_step(
// CHECK-SAME: %[[X:[^:]*]]: tensor<4x8xf32>
// CHECK-SAME: %[[W1:[^:]*]]: tensor<6x8xf32>
// CHECK-SAME: %[[W2:[^:]*]]: tensor<3x6xf32>
// CHECK: %[[R:.*]] = graph.relu
// CHECK: %[[DY:.*]] = graph.softmax_cross_entropy_grad
// CHECK-NEXT: %[[DW2:.*]] = graph.gemm %[[DY]], %[[R]] {{{.*}}transA = true
// CHECK-NEXT: %[[DB2:.*]] = graph.reduce_sum_to %[[DY]]
// CHECK-NEXT: %[[DR:.*]] = graph.gemm %[[DY]], %[[W2]]
// CHECK-NEXT: %[[DH:.*]] = graph.unary_grad "relu" %[[DR]]
// CHECK-NEXT: %[[DW1:.*]] = graph.gemm %[[DH]], %[[X]] {{{.*}}transA = true
// CHECK: graph.momentum_update %[[W1]], %[[DW1]]
