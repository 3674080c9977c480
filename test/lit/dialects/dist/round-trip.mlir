// RUN: otc-opt %s | otc-opt | FileCheck %s

// CHECK-LABEL: func @avg
func.func @avg(%g: tensor<16x8xf32>) -> tensor<16x8xf32> {
  // CHECK: dist.all_reduce mean %{{.*}} : tensor<16x8xf32>
  %0 = dist.all_reduce mean %g : tensor<16x8xf32>
  // CHECK: dist.all_reduce sum
  %1 = dist.all_reduce sum %0 : tensor<16x8xf32>
  return %1 : tensor<16x8xf32>
}

// CHECK-LABEL: func @compressed
func.func @compressed(%b: tensor<1000xf32>) -> tensor<1000xf32> {
  // Default ratio (0.1), block size (256) and error feedback are elided.
  // CHECK: dist.compressed_all_reduce %{{.*}} {block_size = 128 : i64, method = "topk-int8", ratio = 0.00999999977 : f32} : tensor<1000xf32>
  %0 = dist.compressed_all_reduce %b {method = "topk-int8", ratio = 0.01 : f32, block_size = 128 : i64} : tensor<1000xf32>
  // CHECK: dist.compressed_all_reduce %{{.*}} {adaptive = true, method = "topk", warmup_steps = 10 : i64}
  %1 = dist.compressed_all_reduce %0 {method = "topk", adaptive = true, warmup_steps = 10 : i64} : tensor<1000xf32>
  // CHECK: dist.compressed_all_reduce %{{.*}} {error_feedback = false, method = "none"}
  %2 = dist.compressed_all_reduce %1 {method = "none", error_feedback = false} : tensor<1000xf32>
  return %2 : tensor<1000xf32>
}
