// RUN: otc-opt %s --otc-momentum-correction | FileCheck %s
// RUN: otc-opt %s --otc-momentum-correction --otc-bucket-gradients --otc-insert-compressed-allreduce="method=topk-int8" | FileCheck %s --check-prefix=BUCKET
// RUN: otc-opt %s --otc-momentum-correction --otc-bucket-gradients --otc-insert-compressed-allreduce="method=topk-int8 error-feedback=false" | FileCheck %s --check-prefix=NOEF
// RUN: otc-opt %s --otc-momentum-correction --otc-bucket-gradients --otc-insert-compressed-allreduce="method=topk-int8" --otc-lower-to-exec --otc-plan-memory --otc-place-waits | FileCheck %s --check-prefix=PLAN

// DGC's momentum-factor masking: the velocity moves into the exchange. Each
// update becomes a plain SGD step on g + wd * w, marked as taking its
// momentum from the compressed all-reduce, and the velocity states leave
// the step (the remaining states' otc.updates are renumbered).
// CHECK-LABEL: func.func @train_step(
// CHECK-SAME: %[[W:[^:]*]]: tensor<4xf32> {otc.param = "w"}, %[[G:[^:]*]]: tensor<4xf32> {otc.input = "g", otc.role = "data"}, %[[B:[^:]*]]: tensor<2xf32> {otc.param = "b"}, %[[GB:[^:]*]]: tensor<2xf32> {otc.input = "gb", otc.role = "data"})
// CHECK-SAME: -> (tensor<4xf32> {otc.updates = 0 : i64}, tensor<2xf32> {otc.updates = 2 : i64})
// CHECK-NOT: graph.hyperparameter "momentum"
// CHECK: %[[WD:.*]] = graph.hyperparameter "weight_decay" : tensor<f32>
// CHECK: %[[TWO:.*]] = graph.constant dense<2.000000e+00> : tensor<f32>
// CHECK: %[[GWD:.*]] = graph.mul %[[WD]], %[[TWO]]
// CHECK: %[[DW:.*]] = graph.mul %[[W]], %[[GWD]]
// CHECK: %[[NG:.*]] = graph.add %[[G]], %[[DW]]
// CHECK: %[[NW:.*]] = graph.sgd_update %[[W]], %[[NG]] {dist.momentum_in_exchange, lr_scale = 5.000000e-01 : f32, wd_scale = 0.000000e+00 : f32}
// CHECK: %[[NB:.*]] = graph.sgd_update %[[B]], %[[GB]] {dist.momentum_in_exchange, wd_scale = 0.000000e+00 : f32}
// CHECK-NOT: momentum_update
// CHECK: return %[[NW]], %[[NB]] : tensor<4xf32>, tensor<2xf32>

// Every bucket keeps this rank's velocity next to its residual.
// BUCKET-LABEL: func.func @train_step(
// BUCKET-SAME: %[[R:[^:]*]]: tensor<6xf32> {otc.role = "residual", otc.state = "bucket0.residual"}, %[[U:[^:]*]]: tensor<6xf32> {otc.role = "per-rank", otc.state = "bucket0.velocity"})
// BUCKET-SAME: -> (tensor<4xf32> {otc.updates = 0 : i64}, tensor<2xf32> {otc.updates = 2 : i64}, tensor<6xf32> {otc.updates = 4 : i64}, tensor<6xf32> {otc.updates = 5 : i64})
// BUCKET: %[[BK:.*]] = dist.bucket
// BUCKET-NEXT: %[[AVG:.*]], %[[R2:.*]], %[[U2:.*]] = dist.compressed_all_reduce %[[BK]], %[[R]] velocity %[[U]] {method = "topk-int8"} : tensor<6xf32>, tensor<6xf32> velocity tensor<6xf32> -> tensor<6xf32>, tensor<6xf32> velocity tensor<6xf32>
// BUCKET: return %{{.*}}, %{{.*}}, %[[R2]], %[[U2]]

// Without error feedback: a velocity and no residual.
// NOEF-LABEL: func.func @train_step(
// NOEF-SAME: %[[U:[^:]*]]: tensor<6xf32> {otc.role = "per-rank", otc.state = "bucket0.velocity"})
// NOEF-NOT: residual
// NOEF: dist.compressed_all_reduce %{{.*}} velocity %[[U]] {method = "topk-int8"} : tensor<6xf32> velocity tensor<6xf32> -> tensor<6xf32> velocity tensor<6xf32>

// The velocity is a planned state buffer that the exchange updates in place
// (its waits cover it, as the residual's).
// PLAN-LABEL: func.func @train_step
// PLAN: exec.compressed_all_reduce %{{.*}}, %{{.*}} velocity %{{.*}} {{{.*}}method = "topk-int8"{{.*}}} : memref<6xf32>, memref<6xf32> velocity memref<6xf32>
// PLAN: exec.wait_collectives
// PLAN: exec.kernel "sgd_update"
func.func @train_step(%w: tensor<4xf32> {otc.param = "w"}, %g: tensor<4xf32> {otc.input = "g", otc.role = "data"},
                      %v: tensor<4xf32> {otc.state = "w.momentum_buffer"},
                      %b: tensor<2xf32> {otc.param = "b"}, %gb: tensor<2xf32> {otc.input = "gb", otc.role = "data"},
                      %vb: tensor<2xf32> {otc.state = "b.momentum_buffer"})
    -> (tensor<4xf32> {otc.updates = 0 : i64}, tensor<4xf32> {otc.updates = 2 : i64},
        tensor<2xf32> {otc.updates = 3 : i64}, tensor<2xf32> {otc.updates = 5 : i64}) {
  %w2, %v2 = graph.momentum_update %w, %g, %v {lr_scale = 0.5 : f32, wd_scale = 2.0 : f32} : tensor<4xf32>
  %b2, %vb2 = graph.momentum_update %b, %gb, %vb {wd_scale = 0.0 : f32} : tensor<2xf32>
  return %w2, %v2, %b2, %vb2 : tensor<4xf32>, tensor<4xf32>, tensor<2xf32>, tensor<2xf32>
}
