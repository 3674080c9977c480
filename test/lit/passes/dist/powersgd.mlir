// PowerSGD: each gradient of rank 2 or more whose rank-r factors are smaller
// than it is a matrix of the bucket (offset, rows = shape[0], cols = rest);
// the others are averaged uncompressed; the matrices' Q are per-rank state.
// RUN: otc-opt %s --otc-insert-compressed-allreduce="world-size=2 method=powersgd powersgd-rank=4" | FileCheck %s
// RUN: otc-opt %s --otc-insert-compressed-allreduce="world-size=2 method=powersgd powersgd-rank=4" | otc-opt --otc-lower-to-exec --otc-plan-memory --otc-place-waits | otc-translate --emit-cpp | FileCheck %s --check-prefix=EMIT
// RUN: otc-opt %s --otc-insert-compressed-allreduce="world-size=2 method=powersgd powersgd-rank=1 error-feedback=false" | FileCheck %s --check-prefix=RANK1

// 64x32 (offset 0): (64 + 32) * 4 < 2048, compressed, Q 32 x 4. The bias
// (rank 1) and the 4x3 matrix ((4 + 3) * 3 >= 12) are not. 2x8x4 at 2092:
// [2, 32], r = 2, (2 + 32) * 2 > 64, not compressed either.
// CHECK-LABEL: func.func @train_step(
// CHECK-SAME: tensor<2156xf32> {otc.role = "residual", otc.state = "bucket0.residual"}
// CHECK-SAME: tensor<128xf32> {otc.role = "per-rank", otc.state = "bucket0.powersgd_q"}
// CHECK: dist.compressed_all_reduce %{{.*}}, %{{.*}} state %{{.*}} {exchange = "all-reduce", matrices = array<i64: 0, 64, 32>, method = "powersgd", powersgd_rank = 4 : i64}
// CHECK-SAME: -> tensor<2156xf32>, tensor<2156xf32> state tensor<128xf32>
// EMIT: static const int64_t matrices[] = {0, 64, 32};
// EMIT-NEXT: static const otc_compress_desc_t desc = {OTCK_COMPRESS_POWERSGD, 1, 0, OTC_EXCHANGE_ALL_REDUCE, 256, {{.*}}, 0, 0, 4, 1, matrices};
// EMIT-NEXT: int rc = ctx->compressed_all_reduce_mean_f32(ctx->comm, &desc, {{v[0-9]+}}, 2156, {{v[0-9]+}}, nullptr, 0.0f, {{v[0-9]+}}, 0);
// Rank 1: the 4x3 matrix saves too ((4 + 3) * 1 < 12) and 2x8x4 ((2 + 32) < 64).
// RANK1: tensor<67xf32> {otc.role = "per-rank", otc.state = "bucket0.powersgd_q"}
// RANK1: dist.compressed_all_reduce %{{[^,]*}} state %{{.*}} {exchange = "all-reduce", matrices = array<i64: 0, 64, 32, 2080, 4, 3, 2092, 2, 32>, method = "powersgd", powersgd_rank = 1 : i64}
func.func @train_step(%w: tensor<64x32xf32> {otc.param = "w"}, %b: tensor<32xf32> {otc.param = "b"},
                      %v: tensor<4x3xf32> {otc.param = "v"}, %t: tensor<2x8x4xf32> {otc.param = "t"},
                      %gw: tensor<64x32xf32> {otc.input = "gw", otc.role = "data"},
                      %gb: tensor<32xf32> {otc.input = "gb", otc.role = "data"},
                      %gv: tensor<4x3xf32> {otc.input = "gv", otc.role = "data"},
                      %gt: tensor<2x8x4xf32> {otc.input = "gt", otc.role = "data"})
    -> (tensor<64x32xf32> {otc.updates = 0 : i64}, tensor<32xf32> {otc.updates = 1 : i64},
        tensor<4x3xf32> {otc.updates = 2 : i64}, tensor<2x8x4xf32> {otc.updates = 3 : i64}) {
  %bk = dist.bucket %gw, %gb, %gv, %gt : tensor<64x32xf32>, tensor<32xf32>, tensor<4x3xf32>, tensor<2x8x4xf32> -> tensor<2156xf32>
  %u:4 = dist.unbucket %bk : tensor<2156xf32> -> tensor<64x32xf32>, tensor<32xf32>, tensor<4x3xf32>, tensor<2x8x4xf32>
  %w2 = graph.sgd_update %w, %u#0 : tensor<64x32xf32>
  %b2 = graph.sgd_update %b, %u#1 : tensor<32xf32>
  %v2 = graph.sgd_update %v, %u#2 : tensor<4x3xf32>
  %t2 = graph.sgd_update %t, %u#3 : tensor<2x8x4xf32>
  return %w2, %b2, %v2, %t2 : tensor<64x32xf32>, tensor<32xf32>, tensor<4x3xf32>, tensor<2x8x4xf32>
}
