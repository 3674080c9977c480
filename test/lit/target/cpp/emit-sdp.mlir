// RUN: otc-opt %s --otc-lower-to-exec --otc-plan-memory --otc-place-waits | otc-translate --emit-cpp | FileCheck %s

// One rank's program of an SDP plan (backward masking): the owned block's
// gradient is averaged in owner group 0 (ranks 0 and 1), the shared head's
// over all ranks; every rank agrees on finiteness before its first update;
// the first owner broadcasts each component's new values. The manifest
// carries the plan and each parameter's owners.
// CHECK: static const char kManifest[] = "{
// CHECK-SAME: \"owners\":[0,1]
// CHECK-SAME: \"frozen\":true
// CHECK-SAME: \"sdp\":{\"active\":0.5,\"assignment\":\"cyclic\",\"components\":[{\"name\":\"b1\",\"owners\":[0,1]},{\"name\":\"b2\",\"owners\":[2,3]}],\"groups\":{{\[}}[0,1],[2,3]],\"masking\":\"backward\",\"mode\":\"block\",\"rank_variant\":[0,0,2,2]}
// CHECK-LABEL: static int otc_train_step(
// CHECK: if (ctx->group_all_reduce_mean_f32(ctx->comm, 0, [[G1:v[0-9]+]], 16) != 0)
// CHECK-NEXT: return OTC_STEP_ERR_COMM;
// The head's gradient goes out in two ranges of its buffer, in place and
// without waiting for the first.
// CHECK: if (ctx->all_reduce_mean_f32(ctx->comm, [[H:v[0-9]+]], 4) != 0)
// CHECK-NOT: wait_collectives
// CHECK: if (ctx->all_reduce_mean_f32(ctx->comm, [[H]] + 4, 8) != 0)
// CHECK: if (int rc = ctx->agree_finite(ctx->comm))
// CHECK-NEXT: return rc == OTC_STEP_SKIPPED_NONFINITE ? rc : OTC_STEP_ERR_COMM;
// CHECK-NEXT: if (ctx->profile)
// CHECK-NEXT: ctx->profile(ctx->profiler, {{[0-9]+}}, 0);
// CHECK-NEXT: if (ctx->profile)
// CHECK-NEXT: ctx->profile(ctx->profiler, {{[0-9]+}}, 1);
// CHECK-NEXT: { // sgd_update
// CHECK: if (ctx->broadcast_f32(ctx->comm, 0, {{v[0-9]+}}, 16) != 0)
// CHECK: if (ctx->broadcast_f32(ctx->comm, 2, {{v[0-9]+}}, 16) != 0)

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
