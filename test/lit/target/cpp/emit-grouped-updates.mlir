// RUN: otc-opt %s --otc-lower-to-exec --otc-plan-memory --otc-place-waits --otc-group-updates | otc-translate --emit-cpp | FileCheck %s
// RUN: otc-opt %s --otc-lower-to-exec --otc-plan-memory --otc-place-waits --otc-group-updates | otc-translate --emit-cuda-cpp | FileCheck %s --check-prefix=CUDA

// Updates grouped by otc-group-updates are one call over host arrays of the
// parameters' pointers and sizes (device pointers on CUDA): AdamW's three
// parameters, then SGD's two (a parameter group of its own, lr halved), and
// the momentum update of the last parameter alone.
// CHECK-LABEL: static int otc_train_step(
// CHECK: { // adamw_update
// CHECK-NEXT: static const int64_t sizes[] = {6, 4, 2};
// CHECK-NEXT: float *const ws[] = {[[W1:v[0-9]+]], [[W2:v[0-9]+]], [[W3:v[0-9]+]]};
// CHECK-NEXT: const float *const gs[] = {[[G1:v[0-9]+]], [[G2:v[0-9]+]], [[G3:v[0-9]+]]};
// CHECK-NEXT: float *const s1[] = {{{v[0-9]+}}, {{v[0-9]+}}, {{v[0-9]+}}};
// CHECK-NEXT: float *const s2[] = {{{v[0-9]+}}, {{v[0-9]+}}, {{v[0-9]+}}};
// CHECK-NEXT: otck_adam_multi_f32(3, sizes, ws, gs, s1, s2, (float)(ctx->hyper->lr), (float)(ctx->hyper->beta1), (float)(ctx->hyper->beta2), (float)(ctx->hyper->eps), (float)(ctx->hyper->weight_decay), ctx->step, 1);
// CHECK: { // sgd_update
// CHECK-NEXT: static const int64_t sizes[] = {3, 5};
// CHECK-NEXT: float *const ws[] = {{{v[0-9]+}}, {{v[0-9]+}}};
// CHECK-NEXT: const float *const gs[] = {{{v[0-9]+}}, {{v[0-9]+}}};
// CHECK-NEXT: otck_sgd_multi_f32(2, sizes, ws, gs, (float)(ctx->hyper->lr * 0.5), (float)(ctx->hyper->weight_decay));
// CHECK: otck_momentum_f32(7,
// CUDA-LABEL: static int otc_train_step(
// CUDA: otckd_adam_multi_f32(3, sizes, ws, gs, s1, s2,
// CUDA: otckd_sgd_multi_f32(2, sizes, ws, gs,
// CUDA: otckd_momentum_f32(7,
module {
  func.func @train_step(%w1: tensor<2x3xf32> {otc.param = "w1"},
                        %w2: tensor<4xf32> {otc.param = "w2"},
                        %w3: tensor<2xf32> {otc.param = "w3"},
                        %w4: tensor<3xf32> {otc.param = "w4"},
                        %w5: tensor<5xf32> {otc.param = "w5"},
                        %w6: tensor<7xf32> {otc.param = "w6"},
                        %m1: tensor<2x3xf32> {otc.state = "w1.exp_avg"},
                        %v1: tensor<2x3xf32> {otc.state = "w1.exp_avg_sq"},
                        %m2: tensor<4xf32> {otc.state = "w2.exp_avg"},
                        %v2: tensor<4xf32> {otc.state = "w2.exp_avg_sq"},
                        %m3: tensor<2xf32> {otc.state = "w3.exp_avg"},
                        %v3: tensor<2xf32> {otc.state = "w3.exp_avg_sq"},
                        %b6: tensor<7xf32> {otc.state = "w6.momentum_buffer"})
      -> (tensor<2x3xf32> {otc.updates = 0 : i64}, tensor<2x3xf32> {otc.updates = 6 : i64},
          tensor<2x3xf32> {otc.updates = 7 : i64}, tensor<4xf32> {otc.updates = 1 : i64},
          tensor<4xf32> {otc.updates = 8 : i64}, tensor<4xf32> {otc.updates = 9 : i64},
          tensor<2xf32> {otc.updates = 2 : i64}, tensor<2xf32> {otc.updates = 10 : i64},
          tensor<2xf32> {otc.updates = 11 : i64}, tensor<3xf32> {otc.updates = 3 : i64},
          tensor<5xf32> {otc.updates = 4 : i64}, tensor<7xf32> {otc.updates = 5 : i64},
          tensor<7xf32> {otc.updates = 12 : i64}) {
    %g1 = graph.neg %w1 : tensor<2x3xf32>
    %g2 = graph.neg %w2 : tensor<4xf32>
    %g3 = graph.neg %w3 : tensor<2xf32>
    %g4 = graph.neg %w4 : tensor<3xf32>
    %g5 = graph.neg %w5 : tensor<5xf32>
    %g6 = graph.neg %w6 : tensor<7xf32>
    %u1, %nm1, %nv1 = graph.adamw_update %w1, %g1, %m1, %v1 : tensor<2x3xf32>
    %u2, %nm2, %nv2 = graph.adamw_update %w2, %g2, %m2, %v2 : tensor<4xf32>
    %u3, %nm3, %nv3 = graph.adamw_update %w3, %g3, %m3, %v3 : tensor<2xf32>
    %u4 = graph.sgd_update %w4, %g4 {lr_scale = 0.5 : f32} : tensor<3xf32>
    %u5 = graph.sgd_update %w5, %g5 {lr_scale = 0.5 : f32} : tensor<5xf32>
    %u6, %nb6 = graph.momentum_update %w6, %g6, %b6 : tensor<7xf32>
    return %u1, %nm1, %nv1, %u2, %nm2, %nv2, %u3, %nm3, %nv3, %u4, %u5, %u6, %nb6
        : tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>,
          tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<3xf32>, tensor<5xf32>, tensor<7xf32>, tensor<7xf32>
  }
}
