// RUN: otc-opt %s --otc-lower-to-exec --otc-plan-memory --otc-place-waits | otc-translate --emit-cpp | FileCheck %s

// Momentum correction of Adam: the exchange decays the bucket's velocity
// (the first moment) with the step's run-time beta1, and the update runs
// with beta1 = 0 on the average (first_moment = false), beta2 and eps as
// the step has them; its m is computed in the gradient's buffer (with
// beta1 0 it is d, the first moment lives in the exchange).
// CHECK-LABEL: static int otc_train_step(
// CHECK: { // compressed all-reduce, bucket 0
// CHECK: int rc = ctx->compressed_all_reduce_mean_f32(ctx->comm, &desc, [[B:v[0-9]+]], 4, [[R:v[0-9]+]], [[U:v[0-9]+]], (float)(ctx->hyper->beta1), nullptr, 0);
// CHECK: otck_adam_f32(4, {{[^,]*}}, [[G:[^,]*]], [[G]], {{[^,]*}}, (float)(ctx->hyper->lr), 0.0f, (float)(ctx->hyper->beta2), (float)(ctx->hyper->eps), (float)(ctx->hyper->weight_decay), ctx->step, 0);
module {
  func.func @train_step(%w: tensor<4xf32> {otc.param = "w"}, %v: tensor<4xf32> {otc.state = "w.exp_avg_sq"},
                        %r: tensor<4xf32> {otc.state = "bucket0.residual", otc.role = "residual"},
                        %u: tensor<4xf32> {otc.state = "bucket0.velocity", otc.role = "per-rank"})
      -> (tensor<4xf32> {otc.updates = 0 : i64}, tensor<4xf32> {otc.updates = 1 : i64},
          tensor<4xf32> {otc.updates = 2 : i64}, tensor<4xf32> {otc.updates = 3 : i64}) {
    %dw = graph.neg %w : tensor<4xf32>
    %b = dist.bucket %dw : tensor<4xf32> -> tensor<4xf32>
    %avg, %r2, %u2 = dist.compressed_all_reduce %b, %r velocity %u {method = "topk-int8", velocity_decay = "beta1"} : tensor<4xf32>, tensor<4xf32> velocity tensor<4xf32> -> tensor<4xf32>, tensor<4xf32> velocity tensor<4xf32>
    %g = dist.unbucket %avg : tensor<4xf32> -> tensor<4xf32>
    %w2, %m2, %v2 = graph.adam_update %w, %g, %g, %v {dist.momentum_in_exchange, first_moment = false} : tensor<4xf32>
    return %w2, %v2, %r2, %u2 : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
  }
}
