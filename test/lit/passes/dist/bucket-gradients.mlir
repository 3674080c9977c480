// RUN: otc-opt %s --otc-bucket-gradients=bucket-mb=0.00005 | FileCheck %s
// RUN: otc-opt %s --otc-bucket-gradients | FileCheck %s --check-prefix=ONE

// Buckets follow the order backward produces the gradients (db2 and dw2
// first), hold at most bucket-mb (here 52 bytes: 13 floats), and are formed
// right after their last gradient; all unbuckets precede the first update.
// CHECK-LABEL: func.func @train_step
func.func @train_step(%w1: tensor<4x4xf32>, %w2: tensor<4x2xf32>, %b2: tensor<2xf32>, %x: tensor<8x4xf32>)
    -> (tensor<4x4xf32>, tensor<4x2xf32>, tensor<2xf32>) {
  // CHECK: %[[DB2:.*]] = graph.neg
  %db2 = graph.neg %b2 : tensor<2xf32>
  // CHECK-NEXT: %[[DW2:.*]] = graph.relu
  %dw2 = graph.relu %w2 : tensor<4x2xf32>
  // CHECK-NEXT: %[[B0:.*]] = dist.bucket %[[DB2]], %[[DW2]] : tensor<2xf32>, tensor<4x2xf32> -> tensor<10xf32>
  // CHECK-NEXT: %[[DW1:.*]] = graph.tanh
  %dw1 = graph.tanh %w1 : tensor<4x4xf32>
  // CHECK-NEXT: %[[B1:.*]] = dist.bucket %[[DW1]] : tensor<4x4xf32> -> tensor<16xf32>
  // CHECK-NEXT: %[[U0:.*]]:2 = dist.unbucket %[[B0]] : tensor<10xf32> -> tensor<2xf32>, tensor<4x2xf32>
  // CHECK-NEXT: %[[U1:.*]] = dist.unbucket %[[B1]] : tensor<16xf32> -> tensor<4x4xf32>
  // CHECK-NEXT: graph.sgd_update %{{.*}}, %[[U1]]
  %n1 = graph.sgd_update %w1, %dw1 : tensor<4x4xf32>
  // CHECK-NEXT: graph.sgd_update %{{.*}}, %[[U0]]#1
  %n2 = graph.sgd_update %w2, %dw2 : tensor<4x2xf32>
  // CHECK-NEXT: graph.sgd_update %{{.*}}, %[[U0]]#0
  %n3 = graph.sgd_update %b2, %db2 : tensor<2xf32>
  return %n1, %n2, %n3 : tensor<4x4xf32>, tensor<4x2xf32>, tensor<2xf32>
}

// With the default 25 MiB, one bucket holds everything.
// ONE: dist.bucket {{.*}} -> tensor<26xf32>
// ONE-NOT: dist.bucket
