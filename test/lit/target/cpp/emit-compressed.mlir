// RUN: otc-opt %s --otc-lower-to-exec --otc-plan-memory --otc-place-waits | otc-translate --emit-cpp | FileCheck %s

// CHECK: #include "otc/compress.h"
// CHECK-LABEL: static int otc_train_step(
// CHECK: { // compressed all-reduce, bucket 0
// CHECK-NEXT: static const otc_compress_desc_t desc = {OTCK_COMPRESS_TOPK_INT8, 1, 1, OTC_EXCHANGE_ALL_GATHER, 128, 5.000000075e-02f, 9.999999776e-03f, 5.000000075e-02f, 3, 0, 0, 0, nullptr};
// CHECK-NEXT: int rc = ctx->compressed_all_reduce_mean_f32(ctx->comm, &desc, [[B:v[0-9]+]], 10, [[R:v[0-9]+]], nullptr, 0.0f, nullptr, 0);
// CHECK-NEXT: if (rc == OTC_STEP_SKIPPED_NONFINITE)
// CHECK-NEXT: return rc;
// CHECK-NEXT: if (rc != 0)
// CHECK-NEXT: return OTC_STEP_ERR_COMM;
// The exchange may go on (overlap) until the wait before the first update.
// CHECK-NOT: otck_
// CHECK: if (int rc = ctx->wait_collectives(ctx->comm))
// CHECK-NEXT: return rc == OTC_STEP_SKIPPED_NONFINITE ? rc : OTC_STEP_ERR_COMM;
// CHECK: otck_sgd_f32(
module {
  func.func @train_step(%w2: tensor<4x2xf32> {otc.param = "w2"}, %b2: tensor<2xf32> {otc.param = "b2"},
                        %r: tensor<10xf32> {otc.state = "bucket0.residual", otc.role = "residual"})
      -> (tensor<4x2xf32> {otc.updates = 0 : i64}, tensor<2xf32> {otc.updates = 1 : i64}, tensor<10xf32> {otc.updates = 2 : i64}) {
    %db2 = graph.neg %b2 : tensor<2xf32>
    %dw2 = graph.relu %w2 : tensor<4x2xf32>
    %b = dist.bucket %db2, %dw2 : tensor<2xf32>, tensor<4x2xf32> -> tensor<10xf32>
    %avg, %r2 = dist.compressed_all_reduce %b, %r {method = "topk-int8", ratio = 0.05 : f32, block_size = 128 : i64, adaptive = true, warmup_steps = 3 : i64} : tensor<10xf32>, tensor<10xf32> -> tensor<10xf32>, tensor<10xf32>
    %u:2 = dist.unbucket %avg : tensor<10xf32> -> tensor<2xf32>, tensor<4x2xf32>
    %n2 = graph.sgd_update %w2, %u#1 : tensor<4x2xf32>
    %n3 = graph.sgd_update %b2, %u#0 : tensor<2xf32>
    return %n2, %n3, %r2 : tensor<4x2xf32>, tensor<2xf32>, tensor<10xf32>
  }
}

