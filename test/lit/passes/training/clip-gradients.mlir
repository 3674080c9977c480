// RUN: otc-opt %s --otc-clip-gradients="max-norm=1.0" | FileCheck %s
// RUN: otc-opt %s --otc-clip-gradients="max-value=0.5" | FileCheck %s --check-prefix=VALUE
// RUN: otc-opt %s --otc-clip-gradients="max-norm=1.0" --otc-lower-to-exec --otc-plan-memory --otc-place-waits | otc-translate --emit-cpp | FileCheck %s --check-prefix=CPP
// RUN: otc-opt %s --otc-clip-gradients | FileCheck %s --check-prefix=MEASURE
// RUN: not otc-opt %s --otc-clip-gradients="max-norm=1 max-value=1" 2>&1 | FileCheck %s --check-prefix=BOTH

// One op takes every update's (averaged) gradient before the first update;
// the updates read its results and the norm becomes the step's output.
// CHECK-LABEL: func.func @train_step(
// CHECK-SAME: -> (tensor<2x3xf32> {otc.updates = 0 : i64}, tensor<3xf32> {otc.updates = 1 : i64}, tensor<f32> {otc.output = "loss"}, tensor<f32> {otc.output = "grad_norm"})
// CHECK: %[[A1:.*]] = dist.all_reduce mean
// CHECK: %[[A2:.*]] = dist.all_reduce mean
// CHECK: %[[C:.*]]:2, %[[N:.*]] = graph.clip_gradients %[[A1]], %[[A2]] {max_norm = 1.000000e+00 : f32}
// CHECK: graph.sgd_update %arg0, %[[C]]#0
// CHECK: graph.sgd_update %arg1, %[[C]]#1
// CHECK: return {{.*}}, %[[N]]
// VALUE: graph.clip_gradients {{.*}} {max_value = 5.000000e-01 : f32}
// The kernel: the norm over all gradients in one pass, then the scaling,
// both in place after the all-reduces are waited for.
// CPP: wait_collectives
// CPP: float *const grads[] = {[[G1:v[0-9]+]], [[G2:v[0-9]+]]};
// CPP-NEXT: static const int64_t sizes[] = {6, 3};
// CPP-NEXT: otck_global_norm_f32(2, grads, sizes, [[N:v[0-9]+]]);
// A NaN or infinity in the averaged gradient skips the step, before any
// update, on every rank (they average the same values).
// CPP-NEXT: if (!([[N]][0] - [[N]][0] == 0.0f))
// CPP-NEXT: return OTC_STEP_SKIPPED_NONFINITE;
// CPP-NEXT: otck_clip_by_norm_f32(2, grads, sizes, [[N]], 1.000000000e+00f);
// CPP: otck_sgd_f32(6, {{v[0-9]+}}, [[G1]],
// Without a limit the norm is measured (metrics, the non-finite skip) and
// nothing is clipped.
// MEASURE: graph.clip_gradients %{{.*}}, %{{.*}} : (
// BOTH: give at most one of max-norm and max-value, positive
module attributes {dist.world_size = 2 : i64} {
  func.func @train_step(%w: tensor<2x3xf32> {otc.param = "w"},
                        %b: tensor<3xf32> {otc.param = "b"})
      -> (tensor<2x3xf32> {otc.updates = 0 : i64},
          tensor<3xf32> {otc.updates = 1 : i64},
          tensor<f32> {otc.output = "loss"}) {
    %g1 = graph.neg %w : tensor<2x3xf32>
    %g2 = graph.relu %b : tensor<3xf32>
    %l = graph.constant dense<1.0> : tensor<f32>
    %a1 = dist.all_reduce mean %g1 : tensor<2x3xf32>
    %a2 = dist.all_reduce mean %g2 : tensor<3xf32>
    %u1 = graph.sgd_update %w, %a1 : tensor<2x3xf32>
    %u2 = graph.sgd_update %b, %a2 : tensor<3xf32>
    return %u1, %u2, %l : tensor<2x3xf32>, tensor<3xf32>, tensor<f32>
  }
}

