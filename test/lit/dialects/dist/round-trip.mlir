// RUN: otc-opt %s | otc-opt | FileCheck %s

// CHECK-LABEL: func @avg
func.func @avg(%g: tensor<16x8xf32>) -> tensor<16x8xf32> {
  // CHECK: dist.all_reduce mean %{{.*}} : tensor<16x8xf32>
  %0 = dist.all_reduce mean %g : tensor<16x8xf32>
  // CHECK: dist.all_reduce sum
  %1 = dist.all_reduce sum %0 : tensor<16x8xf32>
  return %1 : tensor<16x8xf32>
}
