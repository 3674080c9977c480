// RUN: otc-opt %s --otc-lower-to-exec --otc-plan-memory --otc-place-waits | otc-translate --emit-cpp | FileCheck %s
// RUN: otc-opt %s --otc-lower-to-exec --otc-plan-memory --otc-place-waits | otc-translate --emit-cuda-cpp | FileCheck %s --check-prefix=CUDA

// LAMB, Lion, Adagrad and RMSprop read their hyperparameters from the step
// context (alpha and lr_decay too), times the group's factors; RMSprop's
// optional state is NULL where the program keeps none, and its momentum
// is 0 without a buffer. The EMA updates its state in place from the new
// parameter, copying it on the first optimizer step (updates = step - 1).
// CHECK-LABEL: static int otc_train_step(
// CHECK: otck_lamb_f32(6, [[W1:v[0-9]+]], [[G1:v[0-9]+]], [[M1:v[0-9]+]], [[V1:v[0-9]+]], (float)(ctx->hyper->lr), (float)(ctx->hyper->beta1), (float)(ctx->hyper->beta2), (float)(ctx->hyper->eps), 0.0f, ctx->step, nullptr);
// CHECK-NEXT: }
// CHECK: otck_ema_f32(6, [[E1:v[0-9]+]], [[W1]], 9.990000129e-01f, ctx->step - 1);
// CHECK: otck_lion_f32(6, {{v[0-9]+}}, {{v[0-9]+}}, {{v[0-9]+}}, (float)(ctx->hyper->lr * 0.5), (float)(ctx->hyper->beta1), (float)(ctx->hyper->beta2), (float)(ctx->hyper->weight_decay));
// CHECK: otck_adagrad_f32(6, {{v[0-9]+}}, {{v[0-9]+}}, {{v[0-9]+}}, (float)(ctx->hyper->lr), (float)(ctx->hyper->lr_decay), (float)(ctx->hyper->weight_decay * 2), (float)(ctx->hyper->eps), ctx->step);
// CHECK: otck_rmsprop_f32(6, {{v[0-9]+}}, {{v[0-9]+}}, {{v[0-9]+}}, nullptr, nullptr, (float)(ctx->hyper->lr), (float)(ctx->hyper->alpha), (float)(ctx->hyper->eps), (float)(ctx->hyper->weight_decay), 0.0f);
// CHECK: otck_rmsprop_f32(6, {{v[0-9]+}}, {{v[0-9]+}}, {{v[0-9]+}}, {{v[0-9]+}}, {{v[0-9]+}}, (float)(ctx->hyper->lr), (float)(ctx->hyper->alpha), (float)(ctx->hyper->eps), (float)(ctx->hyper->weight_decay), (float)(ctx->hyper->momentum));
// CHECK: otck_rmsprop_f32(6, {{v[0-9]+}}, {{v[0-9]+}}, {{v[0-9]+}}, nullptr, {{v[0-9]+}}, {{.*}}, (float)(ctx->hyper->momentum));
// CUDA-LABEL: static int otc_train_step(
// CUDA: otckd_lamb_f32(6,
// CUDA: otckd_ema_f32(6, {{v[0-9]+}}, {{v[0-9]+}}, 9.990000129e-01f, ctx->step - 1);
// CUDA: otckd_lion_f32(6,
// CUDA: otckd_adagrad_f32(6,
// CUDA: otckd_rmsprop_f32(6, {{v[0-9]+}}, {{v[0-9]+}}, {{v[0-9]+}}, nullptr, nullptr,
module {
  func.func @train_step(%w1: tensor<2x3xf32> {otc.param = "w1"},
                        %w2: tensor<2x3xf32> {otc.param = "w2"},
                        %w3: tensor<2x3xf32> {otc.param = "w3"},
                        %w4: tensor<2x3xf32> {otc.param = "w4"},
                        %w5: tensor<2x3xf32> {otc.param = "w5"},
                        %w6: tensor<2x3xf32> {otc.param = "w6"},
                        %m1: tensor<2x3xf32> {otc.state = "w1.exp_avg"},
                        %v1: tensor<2x3xf32> {otc.state = "w1.exp_avg_sq"},
                        %e1: tensor<2x3xf32> {otc.state = "w1.ema"},
                        %m2: tensor<2x3xf32> {otc.state = "w2.exp_avg"},
                        %s3: tensor<2x3xf32> {otc.state = "w3.sum"},
                        %q4: tensor<2x3xf32> {otc.state = "w4.square_avg"},
                        %q5: tensor<2x3xf32> {otc.state = "w5.square_avg"},
                        %a5: tensor<2x3xf32> {otc.state = "w5.grad_avg"},
                        %b5: tensor<2x3xf32> {otc.state = "w5.momentum_buffer"},
                        %q6: tensor<2x3xf32> {otc.state = "w6.square_avg"},
                        %b6: tensor<2x3xf32> {otc.state = "w6.momentum_buffer"})
      -> (tensor<2x3xf32> {otc.updates = 0 : i64}, tensor<2x3xf32> {otc.updates = 6 : i64},
          tensor<2x3xf32> {otc.updates = 7 : i64}, tensor<2x3xf32> {otc.updates = 8 : i64},
          tensor<2x3xf32> {otc.updates = 1 : i64}, tensor<2x3xf32> {otc.updates = 9 : i64},
          tensor<2x3xf32> {otc.updates = 2 : i64}, tensor<2x3xf32> {otc.updates = 10 : i64},
          tensor<2x3xf32> {otc.updates = 3 : i64}, tensor<2x3xf32> {otc.updates = 11 : i64},
          tensor<2x3xf32> {otc.updates = 4 : i64}, tensor<2x3xf32> {otc.updates = 12 : i64},
          tensor<2x3xf32> {otc.updates = 13 : i64}, tensor<2x3xf32> {otc.updates = 14 : i64},
          tensor<2x3xf32> {otc.updates = 5 : i64}, tensor<2x3xf32> {otc.updates = 15 : i64},
          tensor<2x3xf32> {otc.updates = 16 : i64}) {
    %g1 = graph.neg %w1 : tensor<2x3xf32>
    %g2 = graph.neg %w2 : tensor<2x3xf32>
    %g3 = graph.neg %w3 : tensor<2x3xf32>
    %g4 = graph.neg %w4 : tensor<2x3xf32>
    %g5 = graph.neg %w5 : tensor<2x3xf32>
    %g6 = graph.neg %w6 : tensor<2x3xf32>
    %u1, %nm1, %nv1 = graph.lamb_update %w1, %g1, %m1, %v1 {wd_scale = 0.0 : f32} : tensor<2x3xf32>
    %ne1 = graph.ema_update %e1, %u1 {decay = 0.999 : f32} : tensor<2x3xf32>
    %u2, %nm2 = graph.lion_update %w2, %g2, %m2 {lr_scale = 0.5 : f32} : tensor<2x3xf32>
    %u3, %ns3 = graph.adagrad_update %w3, %g3, %s3 {wd_scale = 2.0 : f32} : tensor<2x3xf32>
    %u4, %nq4 = graph.rmsprop_update %w4, %g4, %q4 : tensor<2x3xf32>
    %u5, %n5:3 = graph.rmsprop_update %w5, %g5, %q5, %a5, %b5 {centered = true, with_momentum = true} : tensor<2x3xf32>
    %u6, %n6:2 = graph.rmsprop_update %w6, %g6, %q6, %b6 {with_momentum = true} : tensor<2x3xf32>
    return %u1, %nm1, %nv1, %ne1, %u2, %nm2, %u3, %ns3, %u4, %nq4, %u5, %n5#0, %n5#1, %n5#2, %u6, %n6#0, %n6#1
        : tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>,
          tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>,
          tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>
  }
}
