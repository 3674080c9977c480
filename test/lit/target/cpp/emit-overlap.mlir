// RUN: otc-opt %s --otc-lower-to-exec --otc-plan-memory --otc-place-waits | otc-translate --emit-cpp | FileCheck %s

// Overlap: an all-reduce may still run when its call returns. The program
// goes on with what does not touch the averaged buffer (the second layer's
// gradient here) and waits (wait_collectives) before the first kernel that
// reads it, even before any optimizer update (a gradient norm, here).

// CHECK-LABEL: static int otc_train_step(
// CHECK: if (ctx->all_reduce_mean_f32(ctx->comm, [[G1:v[0-9]+]], 6) != 0)
// CHECK-NOT: wait_collectives
// CHECK: otck_unary_f32(OTCK_RELU, 6
// CHECK-NOT: wait_collectives
// CHECK: if (ctx->all_reduce_mean_f32(ctx->comm, [[G2:v[0-9]+]], 6) != 0)
// CHECK-NOT: otck_
// CHECK: if (int rc = ctx->wait_collectives(ctx->comm))
// CHECK-NEXT: return rc == OTC_STEP_SKIPPED_NONFINITE ? rc : OTC_STEP_ERR_COMM;
// CHECK-NEXT: if (ctx->profile)
// CHECK-NEXT: ctx->profile(ctx->profiler, {{[0-9]+}}, 0);
// CHECK-NEXT: if (ctx->profile)
// CHECK-NEXT: ctx->profile(ctx->profiler, {{[0-9]+}}, 1);
// CHECK-NEXT: { // neg
// CHECK-NEXT: otck_unary_f32(OTCK_NEG, 6, [[G1]],
// Nothing left to wait for before the updates and the return.
// CHECK-NOT: wait_collectives
// CHECK: return OTC_STEP_OK;
module attributes {dist.world_size = 2 : i64} {
  func.func @train_step(%w1: tensor<2x3xf32> {otc.param = "w1"},
                        %w2: tensor<2x3xf32> {otc.param = "w2"})
      -> (tensor<2x3xf32> {otc.updates = 0 : i64},
          tensor<2x3xf32> {otc.updates = 1 : i64},
          tensor<2x3xf32> {otc.output = "n"}) {
    %g1 = graph.neg %w1 : tensor<2x3xf32>
    %a1 = dist.all_reduce mean %g1 : tensor<2x3xf32>
    %g2 = graph.relu %w2 : tensor<2x3xf32>
    %a2 = dist.all_reduce mean %g2 : tensor<2x3xf32>
    %n = graph.neg %a1 : tensor<2x3xf32>
    %u1 = graph.sgd_update %w1, %a1 : tensor<2x3xf32>
    %u2 = graph.sgd_update %w2, %a2 : tensor<2x3xf32>
    return %u1, %u2, %n : tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>
  }
}
