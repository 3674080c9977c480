// RUN: otc-opt %s --split-input-file --otc-insert-compressed-allreduce="world-size=4 method=topk-int8 ratio=0.05" | FileCheck %s
// RUN: otc-opt %s --split-input-file --otc-insert-compressed-allreduce="method=none" | FileCheck %s --check-prefix=NONE
// RUN: not otc-opt %s --split-input-file --otc-insert-compressed-allreduce="method=fp16 adaptive=true" 2>&1 | FileCheck %s --check-prefix=BAD

// CHECK: module attributes {dist.world_size = 4 : i64}
// CHECK-LABEL: func.func @train_step(
// CHECK-SAME: %[[W:[^:]*]]: tensor<10xf32> {otc.param = "w"}
// CHECK-SAME: %[[R:[^:]*]]: tensor<10xf32> {otc.role = "residual", otc.state = "bucket0.residual"}
// CHECK-SAME: -> (tensor<10xf32> {otc.updates = 0 : i64}, tensor<10xf32> {otc.updates = 2 : i64})
// CHECK: %[[B:.*]] = dist.bucket
// CHECK-NEXT: %[[AVG:.*]], %[[R2:.*]] = dist.compressed_all_reduce %[[B]], %[[R]] {method = "topk-int8", ratio = 5.000000e-02 : f32} : tensor<10xf32>, tensor<10xf32> -> tensor<10xf32>, tensor<10xf32>
// CHECK-NEXT: dist.unbucket %[[AVG]]
// CHECK: return %{{.*}}, %[[R2]]
// NONE-NOT: residual
// NONE: dist.compressed_all_reduce %{{.*}} {exchange = "all-reduce", method = "none"} : tensor<10xf32> -> tensor<10xf32>
// BAD: adaptive ratio applies to topk, topk-int8 and randomk, not 'fp16'
func.func @train_step(%w: tensor<10xf32> {otc.param = "w"}, %g: tensor<10xf32> {otc.input = "g", otc.role = "data"})
    -> (tensor<10xf32> {otc.updates = 0 : i64}) {
  %b = dist.bucket %g : tensor<10xf32> -> tensor<10xf32>
  %u = dist.unbucket %b : tensor<10xf32> -> tensor<10xf32>
  %w2 = graph.sgd_update %w, %u : tensor<10xf32>
  return %w2 : tensor<10xf32>
}
