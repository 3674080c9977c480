// The exchange each bucket's compressed all-reduce takes: with exchange=auto,
// the one whose bytes per rank are fewer (reduce-scatter from three ranks on,
// for a bucket of more blocks than ranks); method none takes the plain fp32
// all-reduce; an explicit exchange applies to every method.
// RUN: otc-opt %s --otc-insert-compressed-allreduce="world-size=2" | FileCheck %s --check-prefix=W2
// RUN: otc-opt %s --otc-insert-compressed-allreduce="world-size=3" | FileCheck %s --check-prefix=W3
// RUN: otc-opt %s --otc-insert-compressed-allreduce="world-size=8 ratio=0.01" | FileCheck %s --check-prefix=W8
// RUN: otc-opt %s --otc-insert-compressed-allreduce="world-size=4 method=none" | FileCheck %s --check-prefix=NONE
// RUN: otc-opt %s --otc-insert-compressed-allreduce="world-size=4 method=none exchange=reduce-scatter" | FileCheck %s --check-prefix=NONE-RS
// RUN: otc-opt %s --otc-insert-compressed-allreduce="world-size=4 exchange=all-gather" | FileCheck %s --check-prefix=AG
// RUN: otc-opt %s --otc-insert-compressed-allreduce="world-size=4 exchange=reduce-scatter" | otc-opt --otc-lower-to-exec --otc-plan-memory --otc-place-waits | otc-translate --emit-cpp | FileCheck %s --check-prefix=EMIT
// RUN: not otc-opt %s --otc-insert-compressed-allreduce="world-size=4 exchange=ring" 2>&1 | FileCheck %s --check-prefix=BAD

// 2560 floats: 10 blocks of 256. Two ranks send as much either way (all-gather
// wins the tie); more blocks than ranks from three on: reduce-scatter.
// W2: dist.compressed_all_reduce %{{.*}}, %{{.*}} {method = "topk-int8"}
// W3: dist.compressed_all_reduce %{{.*}}, %{{.*}} {exchange = "reduce-scatter", method = "topk-int8"}
// W8: dist.compressed_all_reduce %{{.*}}, %{{.*}} {exchange = "reduce-scatter", method = "topk-int8", ratio = 0.00999999977 : f32}
// NONE: dist.compressed_all_reduce %{{.*}} {exchange = "all-reduce", method = "none"}
// NONE-RS: dist.compressed_all_reduce %{{.*}} {exchange = "reduce-scatter", method = "none"}
// AG: dist.compressed_all_reduce %{{.*}}, %{{.*}} {method = "topk-int8"}
// EMIT: static const otc_compress_desc_t desc = {OTCK_COMPRESS_TOPK_INT8, 1, 0, OTC_EXCHANGE_REDUCE_SCATTER, 256,
// BAD: exchange must be all-gather, reduce-scatter or all-reduce, got 'ring'
func.func @train_step(%w: tensor<2560xf32> {otc.param = "w"}, %g: tensor<2560xf32> {otc.input = "g", otc.role = "data"})
    -> (tensor<2560xf32> {otc.updates = 0 : i64}) {
  %b = dist.bucket %g : tensor<2560xf32> -> tensor<2560xf32>
  %u = dist.unbucket %b : tensor<2560xf32> -> tensor<2560xf32>
  %w2 = graph.sgd_update %w, %u : tensor<2560xf32>
  return %w2 : tensor<2560xf32>
}
