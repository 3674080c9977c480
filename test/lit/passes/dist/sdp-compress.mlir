// RUN: otc-opt %s --otc-sdp="world-size=4 active=0.5 masking=backward" --otc-build-training="loss=mse" --otc-bucket-gradients --otc-insert-compressed-allreduce="world-size=4" | FileCheck %s

// SDP composed with compression: a bucket per owner set (here {0, 1} for
// b1, {2, 3} for b2, everyone for the head), in parameter order on every
// rank, each averaged over its owners; backward masking then broadcasts
// each component's new values from its first owner, to every rank.
// CHECK-LABEL: func.func @train_step_rank0(
// CHECK: %[[B:.*]] = dist.bucket %{{.*}}, %{{.*}} {ranks = array<i64: 0, 1>} : tensor<4x4xf32>, tensor<4xf32> -> tensor<20xf32>
// CHECK: dist.compressed_all_reduce %[[B]], %{{.*}} {method = "topk-int8", ranks = array<i64: 0, 1>}
// CHECK: %[[H:.*]] = dist.bucket %{{.*}} : tensor<3x4xf32> -> tensor<12xf32>
// CHECK: dist.compressed_all_reduce %[[H]], %{{.*}} {bucket = 1 : i64, method = "topk-int8"} :
// CHECK: dist.broadcast %{{.*}} {root = 0 : i64} : tensor<4x4xf32>
// CHECK: dist.broadcast %{{.*}} {root = 0 : i64} : tensor<4xf32>
// CHECK: dist.broadcast %{{.*}} {root = 2 : i64} : tensor<4x4xf32>
// CHECK: dist.broadcast %{{.*}} {root = 2 : i64} : tensor<4xf32>
// CHECK-LABEL: func.func @train_step_rank2(
// CHECK: dist.compressed_all_reduce %{{.*}}, %{{.*}} {method = "topk-int8", ranks = array<i64: 2, 3>}
// CHECK: dist.compressed_all_reduce %{{.*}}, %{{.*}} {bucket = 1 : i64, method = "topk-int8"} :

func.func @forward(%x: tensor<2x4xf32> {otc.input = "x", otc.role = "data"},
                   %w1: tensor<4x4xf32> {otc.param = "b1.fc.weight"},
                   %c1: tensor<4xf32> {otc.param = "b1.fc.bias"},
                   %w2: tensor<4x4xf32> {otc.param = "b2.fc.weight"},
                   %c2: tensor<4xf32> {otc.param = "b2.fc.bias"},
                   %wh: tensor<3x4xf32> {otc.param = "head.weight"}) -> tensor<2x3xf32> {
  %0 = graph.gemm %x, %w1, %c1 {transB = true} : (tensor<2x4xf32>, tensor<4x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  %1 = graph.relu %0 : tensor<2x4xf32>
  %2 = graph.add %x, %1 : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  %3 = graph.gemm %2, %w2, %c2 {transB = true} : (tensor<2x4xf32>, tensor<4x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  %4 = graph.tanh %3 : tensor<2x4xf32>
  %5 = graph.add %4, %2 : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  %6 = graph.gemm %5, %wh {transB = true} : (tensor<2x4xf32>, tensor<3x4xf32>) -> tensor<2x3xf32>
  return %6 : tensor<2x3xf32>
}

// Forward masking: rank 0 owns b1, rank 1 owns b2; the kept branch is
