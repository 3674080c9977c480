// RUN: otc-opt %s --otc-build-training="optimizer=adamw weight-decay=0.1 no-weight-decay=bias,norm lr-scale=fc2.*=0.5,1d=2" | FileCheck %s
// RUN: otc-opt %s --otc-build-training="optimizer=adamw freeze=fc1.*" | FileCheck %s --check-prefix=FREEZE
// RUN: not otc-opt %s --otc-build-training="freeze=conv*" 2>&1 | FileCheck %s --check-prefix=NOMATCH
// RUN: not otc-opt %s --otc-build-training="freeze=*" 2>&1 | FileCheck %s --check-prefix=ALL
// RUN: not otc-opt %s --otc-build-training="lr-scale=fc1.weight" 2>&1 | FileCheck %s --check-prefix=FACTOR

// Parameter groups are compile-time factors on the run-time lr and weight
// decay: biases (by name and as gemm's C) and the LayerNorm scale get no
// decay; the first matching --lr-scale pattern sets the factor.
// CHECK-LABEL: func.func @train_step(
// CHECK: graph.adamw_update %arg1, {{.*}} : tensor<6x8xf32>
// CHECK: graph.adamw_update %arg2, {{.*}} {lr_scale = 2.000000e+00 : f32, wd_scale = 0.000000e+00 : f32} : tensor<6xf32>
// CHECK: graph.adamw_update %arg3, {{.*}} {lr_scale = 2.000000e+00 : f32, wd_scale = 0.000000e+00 : f32} : tensor<6xf32>
// CHECK: graph.adamw_update %arg4, {{.*}} {lr_scale = 5.000000e-01 : f32} : tensor<3x6xf32>
// CHECK: graph.adamw_update %arg5, {{.*}} {lr_scale = 5.000000e-01 : f32, wd_scale = 0.000000e+00 : f32} : tensor<3xf32>

// Frozen: marked, no gradient work only they need (fc1's weight gradient,
// the gemm's input gradient), no state, no result.
// FREEZE-LABEL: func.func @train_step(
// FREEZE-SAME: %arg1: tensor<6x8xf32> {otc.frozen, otc.param = "fc1.weight"}
// FREEZE-SAME: %arg2: tensor<6xf32> {otc.frozen, otc.param = "fc1.bias"}
// FREEZE-NOT: fc1.weight.exp_avg
// FREEZE-SAME: {otc.state = "ln.weight.exp_avg"}
// FREEZE-NOT: -> tensor<6x8xf32>
// FREEZE: graph.adamw_update %arg3
// FREEZE-NOT: graph.adamw_update %arg1
// FREEZE-NOT: graph.adamw_update %arg2
// FREEZE: return
// FREEZE-LABEL: func.func @eval_step(
// FREEZE-SAME: {otc.frozen, otc.param = "fc1.weight"}

// NOMATCH: --freeze pattern 'conv*' matches no parameter (parameters: fc1.weight, fc1.bias, ln.weight, fc2.weight, fc2.bias)
// ALL: --freeze freezes every parameter: nothing would train
// FACTOR: --lr-scale 'fc1.weight': expected PATTERN=FACTOR with a factor >= 0
func.func @forward(%x: tensor<4x8xf32> {otc.input = "input", otc.role = "data"},
                   %w1: tensor<6x8xf32> {otc.param = "fc1.weight"},
                   %b1: tensor<6xf32> {otc.param = "fc1.bias"},
                   %g: tensor<6xf32> {otc.param = "ln.weight"},
                   %w2: tensor<3x6xf32> {otc.param = "fc2.weight"},
                   %b2: tensor<3xf32> {otc.param = "fc2.bias"}) -> (tensor<4x3xf32> {otc.output = "logits"}) {
  %h = graph.gemm %x, %w1, %b1 {transB = true} : (tensor<4x8xf32>, tensor<6x8xf32>, tensor<6xf32>) -> tensor<4x6xf32>
  %n:3 = graph.layer_norm %h, %g {axis = -1 : i64, epsilon = 1.0e-05 : f32}
      : (tensor<4x6xf32>, tensor<6xf32>) -> (tensor<4x6xf32>, tensor<4x1xf32>, tensor<4x1xf32>)
  %y = graph.gemm %n#0, %w2, %b2 {transB = true} : (tensor<4x6xf32>, tensor<3x6xf32>, tensor<3xf32>) -> tensor<4x3xf32>
  return %y : tensor<4x3xf32>
}
