// RUN: otc-opt %s --otc-clip-gradients="max-norm=1.0" | FileCheck %s

// An all-reduce placed at its update (before the collectives are
// scheduled): the clip follows the last gradient, the updates follow it.
// CHECK-LABEL: func.func @train_step(
// CHECK: %[[A1:.*]] = dist.all_reduce mean
// CHECK-NOT: graph.sgd_update
// CHECK: %[[A2:.*]] = dist.all_reduce mean
// CHECK-NEXT: %[[C:.*]]:2, %{{.*}} = graph.clip_gradients %[[A1]], %[[A2]]
// CHECK-NEXT: graph.sgd_update %arg0, %[[C]]#0
// CHECK-NEXT: graph.sgd_update %arg1, %[[C]]#1
module attributes {dist.world_size = 2 : i64} {
  func.func @train_step(%w: tensor<2x3xf32> {otc.param = "w"},
                        %b: tensor<3xf32> {otc.param = "b"})
      -> (tensor<2x3xf32> {otc.updates = 0 : i64},
          tensor<3xf32> {otc.updates = 1 : i64}) {
    %g1 = graph.neg %w : tensor<2x3xf32>
    %g2 = graph.relu %b : tensor<3xf32>
    %a1 = dist.all_reduce mean %g1 : tensor<2x3xf32>
    %u1 = graph.sgd_update %w, %a1 : tensor<2x3xf32>
    %a2 = dist.all_reduce mean %g2 : tensor<3xf32>
    %u2 = graph.sgd_update %b, %a2 : tensor<3xf32>
    return %u1, %u2 : tensor<2x3xf32>, tensor<3xf32>
  }
}
