// RUN: otc-opt %s --split-input-file --otc-momentum-correction | FileCheck %s
// RUN: otc-opt %s --split-input-file --otc-momentum-correction --otc-bucket-gradients --otc-insert-compressed-allreduce="method=topk-int8" | FileCheck %s --check-prefix=BUCKET
// RUN: otc-opt %s --split-input-file --otc-momentum-correction --otc-bucket-gradients --otc-insert-compressed-allreduce="method=topk-int8" --otc-lower-to-exec --otc-plan-memory --otc-place-waits | FileCheck %s --check-prefix=PLAN
// RUN: not otc-opt %s --split-input-file --otc-momentum-correction="factor-masking=false" -o /dev/null 2>&1 | FileCheck %s --check-prefix=NOFM

// Adam and AdamW keep their first moment in the exchange: each update takes
// the averaged value as it is (no graph op in front: weight decay stays the
// update's, applied after the exchange), runs with beta1 = 0
// (first_moment = false) and is marked as taking its momentum from the
// compressed all-reduce. With beta1 0 its m is d whatever it was: the
// exp_avg states leave the step (the others' otc.updates are renumbered)
// and the update takes its gradient for m.
// CHECK-LABEL: func.func @train_step(
// CHECK-SAME: %[[W:[^:]*]]: tensor<4xf32> {otc.param = "w"}, %[[G:[^:]*]]: tensor<4xf32> {otc.input = "g", otc.role = "data"}, %[[V:[^:]*]]: tensor<4xf32> {otc.state = "w.exp_avg_sq"}, %[[B:[^:]*]]: tensor<2xf32> {otc.param = "b"}, %[[GB:[^:]*]]: tensor<2xf32> {otc.input = "gb", otc.role = "data"}, %[[VB:[^:]*]]: tensor<2xf32> {otc.state = "b.exp_avg_sq"})
// CHECK-SAME: -> (tensor<4xf32> {otc.updates = 0 : i64}, tensor<4xf32> {otc.updates = 2 : i64}, tensor<2xf32> {otc.updates = 3 : i64}, tensor<2xf32> {otc.updates = 5 : i64})
// CHECK-NOT: graph.hyperparameter
// CHECK: %[[NW:[^,]*]], %{{[^,]*}}, %[[NV:[^ ]*]] = graph.adam_update %[[W]], %[[G]], %[[G]], %[[V]] {dist.momentum_in_exchange, first_moment = false, lr_scale = 5.000000e-01 : f32} : tensor<4xf32>
// CHECK: %[[NB:[^,]*]], %{{[^,]*}}, %[[NVB:[^ ]*]] = graph.adam_update %[[B]], %[[GB]], %[[GB]], %[[VB]] {dist.momentum_in_exchange, first_moment = false, wd_scale = 0.000000e+00 : f32} : tensor<2xf32>
// CHECK: return %[[NW]], %[[NV]], %[[NB]], %[[NVB]] :

// Every bucket keeps this rank's first moment, decayed by beta1.
// BUCKET-LABEL: func.func @train_step(
// BUCKET-SAME: %{{[^:]*}}: tensor<6xf32> {otc.role = "residual", otc.state = "bucket0.residual"}, %[[U:[^:]*]]: tensor<6xf32> {otc.role = "per-rank", otc.state = "bucket0.velocity"})
// BUCKET: %[[BK:.*]] = dist.bucket
// BUCKET-NEXT: %[[AVG:[^,]*]], {{.*}} = dist.compressed_all_reduce %[[BK]], %{{[^ ]*}} velocity %[[U]] {method = "topk-int8", velocity_decay = "beta1"}
// BUCKET-NEXT: %[[G:.*]]:2 = dist.unbucket %[[AVG]]
// The update reads the average for its m as well (computed in place there).
// BUCKET-NEXT: graph.adam_update %{{[^,]*}}, %[[G]]#0, %[[G]]#0, %{{[^ ]*}} {dist.momentum_in_exchange, first_moment = false
// BUCKET-NEXT: graph.adam_update %{{[^,]*}}, %[[G]]#1, %[[G]]#1, %{{[^ ]*}} {dist.momentum_in_exchange, first_moment = false

// The decay reaches the buffer op; the update's kernel keeps first_moment
// and writes its m into the averaged gradient's buffer, which it reads
// last (no exp_avg buffer).
// PLAN-LABEL: func.func @train_step
// PLAN: exec.compressed_all_reduce %{{.*}}, %{{.*}} velocity %{{.*}} {{{.*}}velocity_decay = "beta1"{{.*}}} : memref<6xf32>, memref<6xf32> velocity memref<6xf32>
// PLAN: exec.wait_collectives
// PLAN: exec.kernel "adam_update" ins(%[[GV:[^ ]*]] : memref<4xf32>) outs(%{{[^,]*}}, %[[GV]], %{{[^ ]*}} : {{.*}}first_moment = false

// Without factor masking Adam is refused: its first moment lives in the
// exchange.
// NOFM: error: momentum correction of Adam keeps its first moment in the compressed all-reduce (momentum-factor masking); without factor masking (--no-factor-masking) it is for momentum SGD only
func.func @train_step(%w: tensor<4xf32> {otc.param = "w"}, %g: tensor<4xf32> {otc.input = "g", otc.role = "data"},
                      %m: tensor<4xf32> {otc.state = "w.exp_avg"}, %v: tensor<4xf32> {otc.state = "w.exp_avg_sq"},
                      %b: tensor<2xf32> {otc.param = "b"}, %gb: tensor<2xf32> {otc.input = "gb", otc.role = "data"},
                      %mb: tensor<2xf32> {otc.state = "b.exp_avg"}, %vb: tensor<2xf32> {otc.state = "b.exp_avg_sq"})
    -> (tensor<4xf32> {otc.updates = 0 : i64}, tensor<4xf32> {otc.updates = 2 : i64}, tensor<4xf32> {otc.updates = 3 : i64},
        tensor<2xf32> {otc.updates = 4 : i64}, tensor<2xf32> {otc.updates = 6 : i64}, tensor<2xf32> {otc.updates = 7 : i64}) {
  %w2, %m2, %v2 = graph.adam_update %w, %g, %m, %v {lr_scale = 0.5 : f32} : tensor<4xf32>
  %b2, %mb2, %vb2 = graph.adam_update %b, %gb, %mb, %vb {wd_scale = 0.0 : f32} : tensor<2xf32>
  return %w2, %m2, %v2, %b2, %mb2, %vb2 : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>
}

// -----

// AdamW: the same, its decoupled decay untouched.
// CHECK-LABEL: func.func @train_step(
// CHECK-NOT: exp_avg"
// CHECK: graph.adamw_update %{{.*}} {dist.momentum_in_exchange, first_moment = false} : tensor<4xf32>
// BUCKET-LABEL: func.func @train_step(
// BUCKET: dist.compressed_all_reduce %{{.*}} velocity %{{.*}} {method = "topk-int8", velocity_decay = "beta1"}
// PLAN-LABEL: func.func @train_step
// PLAN: exec.kernel "adamw_update"{{.*}}first_moment = false
func.func @train_step(%w: tensor<4xf32> {otc.param = "w"}, %g: tensor<4xf32> {otc.input = "g", otc.role = "data"},
                      %m: tensor<4xf32> {otc.state = "w.exp_avg"}, %v: tensor<4xf32> {otc.state = "w.exp_avg_sq"})
    -> (tensor<4xf32> {otc.updates = 0 : i64}, tensor<4xf32> {otc.updates = 2 : i64}, tensor<4xf32> {otc.updates = 3 : i64}) {
  %w2, %m2, %v2 = graph.adamw_update %w, %g, %m, %v : tensor<4xf32>
  return %w2, %m2, %v2 : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}

// -----

// --accumulate: @accumulate_step carries the optimizer state through
// unchanged; the exp_avg states leave it as they leave @train_step.
// CHECK-LABEL: func.func @accumulate_step(
// CHECK-SAME: %{{[^:]*}}: tensor<4xf32> {otc.state = "w.exp_avg_sq"}, %{{[^:]*}}: tensor<4xf32> {otc.state = "w.grad_accum"})
// CHECK-SAME: -> (tensor<4xf32> {otc.updates = 3 : i64})
// CHECK-LABEL: func.func @train_step(
// CHECK-NOT: exp_avg"
// CHECK: graph.adam_update
// BUCKET-LABEL: func.func @accumulate_step(
// PLAN-LABEL: func.func @accumulate_step(
func.func @accumulate_step(%w: tensor<4xf32> {otc.param = "w"}, %g: tensor<4xf32> {otc.input = "g", otc.role = "data"},
                           %m: tensor<4xf32> {otc.state = "w.exp_avg"}, %v: tensor<4xf32> {otc.state = "w.exp_avg_sq"},
                           %acc: tensor<4xf32> {otc.state = "w.grad_accum"})
    -> (tensor<4xf32> {otc.updates = 4 : i64}) {
  %a = graph.add %acc, %g : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %a : tensor<4xf32>
}
func.func @train_step(%w: tensor<4xf32> {otc.param = "w"}, %g: tensor<4xf32> {otc.input = "g", otc.role = "data"},
                      %m: tensor<4xf32> {otc.state = "w.exp_avg"}, %v: tensor<4xf32> {otc.state = "w.exp_avg_sq"})
    -> (tensor<4xf32> {otc.updates = 0 : i64}, tensor<4xf32> {otc.updates = 2 : i64}, tensor<4xf32> {otc.updates = 3 : i64}) {
  %w2, %m2, %v2 = graph.adam_update %w, %g, %m, %v : tensor<4xf32>
  return %w2, %m2, %v2 : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}
