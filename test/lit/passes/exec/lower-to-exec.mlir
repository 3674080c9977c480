// RUN: otc-opt %s --otc-lower-to-exec | FileCheck %s --implicit-check-not=graph. --implicit-check-not=dist.

// CHECK-LABEL: func.func @train_step(
// CHECK-SAME: %[[X:[^:]*]]: memref<4x8xf32> {otc.input = "x", otc.role = "data"}
// CHECK-SAME: %[[W:[^:]*]]: memref<8x3xf32> {otc.param = "w"}
func.func @train_step(%x: tensor<4x8xf32> {otc.input = "x", otc.role = "data"},
                      %w: tensor<8x3xf32> {otc.param = "w"},
                      %l: tensor<4xi64> {otc.input = "labels", otc.role = "label"})
    -> (tensor<8x3xf32> {otc.updates = 1 : i64}, tensor<f32> {otc.output = "loss"}) {
  // CHECK: %[[ONE:.*]] = exec.constant dense<1.000000e+00>
  %one = graph.constant dense<1.0> : tensor<f32>
  // CHECK: %[[Y:.*]] = exec.alloc : memref<4x3xf32>
  // CHECK: exec.kernel "gemm" ins(%[[X]], %[[W]] : memref<4x8xf32>, memref<8x3xf32>) outs(%[[Y]] : memref<4x3xf32>)
  %y = graph.matmul %x, %w : (tensor<4x8xf32>, tensor<8x3xf32>) -> tensor<4x3xf32>
  // CHECK: exec.kernel "softmax_cross_entropy" ins(%[[Y]], %{{.*}}) outs(%[[LOSS:.*]], %[[P:.*]] : memref<f32>, memref<4x3xf32>)
  %loss, %p = graph.softmax_cross_entropy %y, %l : (tensor<4x3xf32>, tensor<4xi64>) -> (tensor<f32>, tensor<4x3xf32>)
  %dy = graph.softmax_cross_entropy_grad %p, %l, %one : (tensor<4x3xf32>, tensor<4xi64>, tensor<f32>) -> tensor<4x3xf32>
  // CHECK: exec.kernel "gemm" {{.*}}outs(%[[DW:.*]] : memref<8x3xf32>) {{{.*}}transA = true
  %dw = graph.gemm %x, %dy {transA = true} : (tensor<4x8xf32>, tensor<4x3xf32>) -> tensor<8x3xf32>
  // The all-reduce and the update work in place.
  // CHECK: exec.all_reduce mean %[[DW]]
  %avg = dist.all_reduce mean %dw : tensor<8x3xf32>
  // CHECK: exec.kernel "sgd_update" ins(%[[DW]] : memref<8x3xf32>) outs(%[[W]] : memref<8x3xf32>) {lr_scale = 1.000000e+00 : f32
  %w2 = graph.sgd_update %w, %avg : tensor<8x3xf32>
  // CHECK: return %[[W]], %[[LOSS]]
  return %w2, %loss : tensor<8x3xf32>, tensor<f32>
}

// A parameter still read after its update is copied first.
// CHECK-LABEL: func.func @late_use(
func.func @late_use(%w: tensor<3xf32> {otc.param = "w"}, %g: tensor<3xf32> {otc.input = "g", otc.role = "data"}) -> (tensor<3xf32>, tensor<3xf32>) {
  // CHECK: %[[C:.*]] = exec.alloc : memref<3xf32>
  // CHECK: exec.kernel "copy" ins(%{{.*}} : memref<3xf32>) outs(%[[C]] : memref<3xf32>)
  // CHECK: exec.kernel "sgd_update" ins(%{{.*}} : memref<3xf32>) outs(%[[C]] : memref<3xf32>)
  %w2 = graph.sgd_update %w, %g : tensor<3xf32>
  %r = graph.relu %w : tensor<3xf32>
  return %w2, %r : tensor<3xf32>, tensor<3xf32>
}
