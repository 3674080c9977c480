// RUN: otc-opt %s --split-input-file --otc-lower-to-exec --otc-plan-memory --otc-place-waits | FileCheck %s
// The placement passes the plan's verifier.
// RUN: otc-opt %s --split-input-file --otc-lower-to-exec --otc-plan-memory --otc-place-waits --otc-verify-plan -o /dev/null
// The emitter refuses a step whose collectives are never waited for.
// RUN: otc-opt %s --split-input-file --otc-lower-to-exec --otc-plan-memory | not otc-translate --split-input-file --emit-cpp 2>&1 | FileCheck %s --check-prefix=UNPLACED

// A started collective holds its buffer until exec.wait_collectives: the
// step goes on with what does not touch those bytes and waits before the
// first op that does, before the first update and before the return.

// UNPLACED: error: returns before waiting for its collectives (run otc-place-waits after otc-plan-memory)

// CHECK-LABEL: func.func @train_step
// CHECK: exec.all_reduce mean %{{.*}} : memref<10xf32>
// CHECK-NOT: exec.wait_collectives
// CHECK: exec.kernel "neg"
// CHECK-NOT: exec.wait_collectives
// CHECK: exec.all_reduce mean
// CHECK-NOT: exec.kernel
// CHECK: exec.wait_collectives
// CHECK-NEXT: exec.check_errors
// CHECK-NEXT: exec.kernel "sgd_update"
// CHECK-NOT: exec.wait_collectives
// CHECK: return

// A bucketed step: the first bucket's all-reduce overlaps the second
// bucket's gradients; one wait before the first update covers both.
module attributes {dist.world_size = 2 : i64} {
  func.func @train_step(%w1: tensor<2x3xf32> {otc.param = "w1"},
                        %w2: tensor<2x3xf32> {otc.param = "w2"},
                        %w3: tensor<4xf32> {otc.param = "w3"})
      -> (tensor<2x3xf32> {otc.updates = 0 : i64},
          tensor<2x3xf32> {otc.updates = 1 : i64},
          tensor<4xf32> {otc.updates = 2 : i64}) {
    %g3 = graph.neg %w3 : tensor<4xf32>
    %g2 = graph.relu %w2 : tensor<2x3xf32>
    %b0 = dist.bucket %g3, %g2 : tensor<4xf32>, tensor<2x3xf32> -> tensor<10xf32>
    %a0 = dist.all_reduce mean %b0 : tensor<10xf32>
    %g1 = graph.neg %w1 : tensor<2x3xf32>
    %a1 = dist.all_reduce mean %g1 : tensor<2x3xf32>
    %u:2 = dist.unbucket %a0 : tensor<10xf32> -> tensor<4xf32>, tensor<2x3xf32>
    %n1 = graph.sgd_update %w1, %a1 : tensor<2x3xf32>
    %n2 = graph.sgd_update %w2, %u#1 : tensor<2x3xf32>
    %n3 = graph.sgd_update %w3, %u#0 : tensor<4xf32>
    return %n1, %n2, %n3 : tensor<2x3xf32>, tensor<2x3xf32>, tensor<4xf32>
  }
}

// -----

// A kernel that reads an averaged gradient (a gradient norm, here) waits
// for it even before any update; the other layer's gradient goes out
// first.
// CHECK-LABEL: func.func @train_step
// CHECK: exec.all_reduce mean %[[G1:.*]] : memref<2x3xf32>
// CHECK-NOT: exec.wait_collectives
// CHECK: exec.kernel "relu"
// CHECK-NOT: exec.wait_collectives
// CHECK: exec.all_reduce mean
// CHECK-NOT: exec.kernel
// CHECK: exec.wait_collectives
// CHECK-NEXT: exec.kernel "neg" ins(%[[G1]]
// CHECK-NEXT: exec.check_errors
// CHECK-NEXT: exec.kernel "sgd_update"
// CHECK-NOT: exec.wait_collectives
// CHECK: return

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

// -----

// A compressed bucket with its residual: waited for before the updates
// read the gradients back from the bucket.
// CHECK-LABEL: func.func @train_step
// CHECK: exec.compressed_all_reduce
// CHECK-NOT: exec.kernel
// CHECK: exec.wait_collectives
// CHECK-NEXT: exec.check_errors
// CHECK-NEXT: exec.kernel "sgd_update"

module {
  func.func @train_step(%w2: tensor<4x2xf32> {otc.param = "w2"}, %b2: tensor<2xf32> {otc.param = "b2"},
                        %r: tensor<10xf32> {otc.state = "bucket0.residual", otc.role = "residual"})
      -> (tensor<4x2xf32> {otc.updates = 0 : i64}, tensor<2xf32> {otc.updates = 1 : i64}, tensor<10xf32> {otc.updates = 2 : i64}) {
    %db2 = graph.neg %b2 : tensor<2xf32>
    %dw2 = graph.relu %w2 : tensor<4x2xf32>
    %b = dist.bucket %db2, %dw2 : tensor<2xf32>, tensor<4x2xf32> -> tensor<10xf32>
    %avg, %r2 = dist.compressed_all_reduce %b, %r {method = "topk-int8"} : tensor<10xf32>, tensor<10xf32> -> tensor<10xf32>, tensor<10xf32>
    %u:2 = dist.unbucket %avg : tensor<10xf32> -> tensor<2xf32>, tensor<4x2xf32>
    %n2 = graph.sgd_update %w2, %u#1 : tensor<4x2xf32>
    %n3 = graph.sgd_update %b2, %u#0 : tensor<2xf32>
    return %n2, %n3, %r2 : tensor<4x2xf32>, tensor<2xf32>, tensor<10xf32>
  }
}

// -----

// SDP: the owner group's all-reduce and the head's two ranges go out
// without waiting for one another; every rank agrees on finiteness before
// its first update; broadcasts complete as they are called.
// CHECK-LABEL: func.func @train_step
// CHECK: exec.all_reduce mean %{{.*}} {group = 0 : i64}
// CHECK-NEXT: exec.all_reduce mean %[[H:.*]] {range = array<i64: 0, 4>}
// CHECK-NEXT: exec.all_reduce mean %[[H]] {range = array<i64: 4, 12>}
// CHECK-NEXT: exec.wait_collectives
// CHECK-NEXT: exec.check_errors
// CHECK-NEXT: exec.agree_finite
// CHECK-NEXT: exec.kernel "sgd_update"
// CHECK-NOT: exec.wait_collectives
// CHECK: return

module attributes {dist.world_size = 4 : i64, dist.sdp = {active = 5.000000e-01 : f64, assignment = "cyclic", components = [{name = "b1", owners = array<i64: 0, 1>}, {name = "b2", owners = array<i64: 2, 3>}], groups = [array<i64: 0, 1>, array<i64: 2, 3>], masking = "backward", mode = "block", rank_variant = array<i64: 0, 0, 2, 2>, rescale = true, seed = 0 : i64}} {
  func.func @train_step(%x: tensor<2x4xf32> {otc.input = "x", otc.role = "data"},
                        %w1: tensor<4x4xf32> {otc.param = "b1.weight", dist.sdp_owners = array<i64: 0, 1>},
                        %w2: tensor<4x4xf32> {otc.param = "b2.weight", dist.sdp_frozen, dist.sdp_owners = array<i64: 2, 3>},
                        %wh: tensor<3x4xf32> {otc.param = "head.weight"},
                        %l: tensor<2x3xf32> {otc.input = "labels", otc.role = "label"})
      -> (tensor<4x4xf32> {otc.updates = 1 : i64}, tensor<3x4xf32> {otc.updates = 3 : i64},
          tensor<4x4xf32> {otc.updates = 2 : i64}, tensor<f32> {otc.output = "loss"}) {
    %h = graph.matmul %x, %w1 : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
    %h2 = graph.matmul %h, %w2 : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
    %y = graph.gemm %h2, %wh {transB = true} : (tensor<2x4xf32>, tensor<3x4xf32>) -> tensor<2x3xf32>
    %loss = graph.mse %y, %l : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<f32>
    %dw1 = graph.gemm %x, %h {transA = true} : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<4x4xf32>
    %dwh = graph.gemm %y, %h2 {transA = true} : (tensor<2x3xf32>, tensor<2x4xf32>) -> tensor<3x4xf32>
    %a1 = dist.all_reduce mean %dw1 {ranks = array<i64: 0, 1>} : tensor<4x4xf32>
    %ah0 = dist.all_reduce mean %dwh {range = array<i64: 0, 4>} : tensor<3x4xf32>
    %ah = dist.all_reduce mean %ah0 {range = array<i64: 4, 12>} : tensor<3x4xf32>
    %n1 = graph.sgd_update %w1, %a1 : tensor<4x4xf32>
    %nh = graph.sgd_update %wh, %ah : tensor<3x4xf32>
    %b1 = dist.broadcast %n1 {root = 0 : i64} : tensor<4x4xf32>
    %b2 = dist.broadcast %w2 {root = 2 : i64} : tensor<4x4xf32>
    return %b1, %nh, %b2, %loss : tensor<4x4xf32>, tensor<3x4xf32>, tensor<4x4xf32>, tensor<f32>
  }
}
