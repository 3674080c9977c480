// Momentum correction without factor masking (--no-factor-masking); with it:
// momentum-factor-masking.mlir.
// RUN: otc-opt %s --otc-momentum-correction="factor-masking=false" | FileCheck %s
// RUN: otc-opt %s --otc-momentum-correction="factor-masking=false" --otc-bucket-gradients --otc-insert-compressed-allreduce="method=topk" --otc-lower-to-exec --otc-plan-memory | FileCheck %s --check-prefix=PLAN

// The velocity is accumulated locally (momentum * v + g + wd * w) and is
// what gets averaged; the parameter takes a plain SGD step with it, and the
// velocity becomes per-rank state.
// CHECK-LABEL: func.func @train_step(
// CHECK-SAME: %[[W:[^:]*]]: tensor<4xf32> {otc.param = "w"}
// CHECK-SAME: %[[G:[^:]*]]: tensor<4xf32> {otc.input = "g", otc.role = "data"}
// CHECK-SAME: %[[V:[^:]*]]: tensor<4xf32> {otc.role = "per-rank", otc.state = "w.momentum_buffer"}
// Momentum and weight decay stay run-time values; the group's factors stay
// compile-time ones.
// CHECK: %[[MU:.*]] = graph.hyperparameter "momentum" : tensor<f32>
// CHECK: %[[MV:.*]] = graph.mul %[[V]], %[[MU]]
// CHECK: %[[A:.*]] = graph.add %[[MV]], %[[G]]
// CHECK: %[[WD:.*]] = graph.hyperparameter "weight_decay" : tensor<f32>
// CHECK: %[[TWO:.*]] = graph.constant dense<2.000000e+00> : tensor<f32>
// CHECK: %[[GWD:.*]] = graph.mul %[[WD]], %[[TWO]]
// CHECK: %[[DW:.*]] = graph.mul %[[W]], %[[GWD]]
// CHECK: %[[NV:.*]] = graph.add %[[A]], %[[DW]]
// CHECK: %[[NW:.*]] = graph.sgd_update %[[W]], %[[NV]] {lr_scale = 5.000000e-01 : f32, wd_scale = 0.000000e+00 : f32}
// CHECK-NOT: momentum_update
// CHECK: return %[[NW]], %[[NV]]

// The local velocity is computed into a buffer of its own (it is packed and
// averaged), and copied into the state's buffer at the end of the step.
// PLAN-LABEL: func.func @train_step
// PLAN: exec.compressed_all_reduce
// PLAN: exec.kernel "sgd_update"
// PLAN: exec.kernel "copy" ins(%{{.*}} : memref<4xf32>) outs(%{{.*}} : memref<4xf32>)
// PLAN-NEXT: return
func.func @train_step(%w: tensor<4xf32> {otc.param = "w"}, %g: tensor<4xf32> {otc.input = "g", otc.role = "data"},
                      %v: tensor<4xf32> {otc.state = "w.momentum_buffer"})
    -> (tensor<4xf32> {otc.updates = 0 : i64}, tensor<4xf32> {otc.updates = 2 : i64}) {
  %w2, %v2 = graph.momentum_update %w, %g, %v {lr_scale = 0.5 : f32, wd_scale = 2.0 : f32} : tensor<4xf32>
  return %w2, %v2 : tensor<4xf32>, tensor<4xf32>
}
