// RUN: otc-opt %s | otc-opt | FileCheck %s

// CHECK-LABEL: func @avg
func.func @avg(%g: tensor<16x8xf32>) -> tensor<16x8xf32> {
  // CHECK: dist.all_reduce mean %{{.*}} : tensor<16x8xf32>
  %0 = dist.all_reduce mean %g : tensor<16x8xf32>
  // CHECK: dist.all_reduce sum
  %1 = dist.all_reduce sum %0 : tensor<16x8xf32>
  // CHECK: dist.all_reduce mean %{{.*}} {range = array<i64: 8, 64>} : tensor<16x8xf32>
  %r = dist.all_reduce mean %1 {range = array<i64: 8, 64>} : tensor<16x8xf32>
  return %1 : tensor<16x8xf32>
}

// CHECK-LABEL: func @compressed
func.func @compressed(%b: tensor<1000xf32>, %r: tensor<1000xf32>) -> tensor<1000xf32> {
  // Default ratio (0.1) and block size (256) are elided.
  // CHECK: dist.compressed_all_reduce %{{.*}}, %{{.*}} {block_size = 128 : i64, method = "topk-int8", ratio = 0.00999999977 : f32} : tensor<1000xf32>, tensor<1000xf32> -> tensor<1000xf32>, tensor<1000xf32>
  %0, %r2 = dist.compressed_all_reduce %b, %r {method = "topk-int8", ratio = 0.01 : f32, block_size = 128 : i64} : tensor<1000xf32>, tensor<1000xf32> -> tensor<1000xf32>, tensor<1000xf32>
  // CHECK: dist.compressed_all_reduce %{{.*}} {adaptive = true, bucket = 1 : i64, method = "topk", warmup_steps = 10 : i64} : tensor<1000xf32> -> tensor<1000xf32>
  %1 = dist.compressed_all_reduce %0 {method = "topk", adaptive = true, warmup_steps = 10 : i64, bucket = 1 : i64} : tensor<1000xf32> -> tensor<1000xf32>
  // CHECK: dist.compressed_all_reduce %{{.*}} {method = "none"}
  %2 = dist.compressed_all_reduce %1 {method = "none"} : tensor<1000xf32> -> tensor<1000xf32>
  // Momentum-factor masking: a velocity with or without a residual.
  // CHECK: dist.compressed_all_reduce %{{.*}}, %{{.*}} velocity %{{.*}} {method = "topk-int8"} : tensor<1000xf32>, tensor<1000xf32> velocity tensor<1000xf32> -> tensor<1000xf32>, tensor<1000xf32> velocity tensor<1000xf32>
  %3, %r3, %u3 = dist.compressed_all_reduce %2, %r velocity %b {method = "topk-int8"} : tensor<1000xf32>, tensor<1000xf32> velocity tensor<1000xf32> -> tensor<1000xf32>, tensor<1000xf32> velocity tensor<1000xf32>
  // CHECK: dist.compressed_all_reduce %{{.*}} velocity %{{.*}} {method = "topk"} : tensor<1000xf32> velocity tensor<1000xf32> -> tensor<1000xf32> velocity tensor<1000xf32>
  %4, %u4 = dist.compressed_all_reduce %3 velocity %u3 {method = "topk"} : tensor<1000xf32> velocity tensor<1000xf32> -> tensor<1000xf32> velocity tensor<1000xf32>
  return %4 : tensor<1000xf32>
}

// CHECK-LABEL: func @buckets
func.func @buckets(%a: tensor<2x3xf32>, %b: tensor<4xf32>) -> (tensor<2x3xf32>, tensor<4xf32>) {
  // CHECK: %[[B:.*]] = dist.bucket %{{.*}}, %{{.*}} : tensor<2x3xf32>, tensor<4xf32> -> tensor<10xf32>
  %0 = dist.bucket %a, %b : tensor<2x3xf32>, tensor<4xf32> -> tensor<10xf32>
  // CHECK: dist.unbucket %[[B]] : tensor<10xf32> -> tensor<2x3xf32>, tensor<4xf32>
  %1:2 = dist.unbucket %0 : tensor<10xf32> -> tensor<2x3xf32>, tensor<4xf32>
  return %1#0, %1#1 : tensor<2x3xf32>, tensor<4xf32>
}
