// RUN: otc-opt %s --otc-lower-to-exec --otc-plan-memory --otc-place-waits | otc-translate --emit-cpp | FileCheck %s

// Momentum-factor masking: the bucket's velocity and the step's run-time
// momentum go to the exchange (CPU and CUDA programs print the same call).
// CHECK-LABEL: static int otc_train_step(
// CHECK: { // compressed all-reduce, bucket 0
// CHECK-NEXT: static const otc_compress_desc_t desc = {OTCK_COMPRESS_TOPK_INT8, 1, 0, OTC_EXCHANGE_ALL_GATHER, 256, 1.000000015e-01f, 9.999999776e-03f, 1.000000015e-01f, 0, 0, 0, 0, nullptr};
// CHECK-NEXT: int rc = ctx->compressed_all_reduce_mean_f32(ctx->comm, &desc, [[B:v[0-9]+]], 10, [[R:v[0-9]+]], [[U:v[0-9]+]], (float)(ctx->hyper->momentum), nullptr, 0);
// CHECK-NEXT: if (rc == OTC_STEP_SKIPPED_NONFINITE)
// CHECK: otck_sgd_f32(
module {
  func.func @train_step(%w2: tensor<4x2xf32> {otc.param = "w2"}, %b2: tensor<2xf32> {otc.param = "b2"},
                        %r: tensor<10xf32> {otc.state = "bucket0.residual", otc.role = "residual"},
                        %u: tensor<10xf32> {otc.state = "bucket0.velocity", otc.role = "per-rank"})
      -> (tensor<4x2xf32> {otc.updates = 0 : i64}, tensor<2xf32> {otc.updates = 1 : i64},
          tensor<10xf32> {otc.updates = 2 : i64}, tensor<10xf32> {otc.updates = 3 : i64}) {
    %db2 = graph.neg %b2 : tensor<2xf32>
    %dw2 = graph.relu %w2 : tensor<4x2xf32>
    %b = dist.bucket %db2, %dw2 : tensor<2xf32>, tensor<4x2xf32> -> tensor<10xf32>
    %avg, %r2, %u2 = dist.compressed_all_reduce %b, %r velocity %u {method = "topk-int8"} : tensor<10xf32>, tensor<10xf32> velocity tensor<10xf32> -> tensor<10xf32>, tensor<10xf32> velocity tensor<10xf32>
    %g:2 = dist.unbucket %avg : tensor<10xf32> -> tensor<2xf32>, tensor<4x2xf32>
    %n2 = graph.sgd_update %w2, %g#1 {dist.momentum_in_exchange} : tensor<4x2xf32>
    %n3 = graph.sgd_update %b2, %g#0 {dist.momentum_in_exchange} : tensor<2xf32>
    return %n2, %n3, %r2, %u2 : tensor<4x2xf32>, tensor<2xf32>, tensor<10xf32>, tensor<10xf32>
  }
}
