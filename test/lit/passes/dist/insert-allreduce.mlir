// RUN: otc-opt %s --otc-insert-allreduce=world-size=4 | FileCheck %s
// RUN: otc-opt %s --otc-insert-allreduce=world-size=1 | FileCheck %s --check-prefix=ONE

// CHECK: module attributes {dist.world_size = 4 : i64}
// ONE: module attributes {dist.world_size = 1 : i64}
// ONE-NOT: dist.all_reduce
// CHECK-LABEL: func.func @train_step
func.func @train_step(%w: tensor<3xf32>, %g: tensor<3xf32>, %v: tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>) {
  // CHECK: %[[AVG:.*]] = dist.all_reduce mean %[[G:.*]] : tensor<3xf32>
  // CHECK: graph.momentum_update %{{.*}}, %[[AVG]], %{{.*}}
  %w2, %v2 = graph.momentum_update %w, %g, %v : tensor<3xf32>
  return %w2, %v2 : tensor<3xf32>, tensor<3xf32>
}
