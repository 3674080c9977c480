// RUN: otc-opt %s | otc-opt | FileCheck %s

// CHECK-LABEL: func @step
func.func @step(%arena: memref<?xi8>) {
  // CHECK: exec.view %{{.*}}[0] : memref<?xi8> -> memref<4x8xf32>
  %x = exec.view %arena[0] : memref<?xi8> -> memref<4x8xf32>
  %w = exec.view %arena[128] : memref<?xi8> -> memref<16x8xf32>
  %y = exec.view %arena[640] : memref<?xi8> -> memref<4x16xf32>
  // CHECK: exec.kernel "gemm" ins(%{{.*}}, %{{.*}} : memref<4x8xf32>, memref<16x8xf32>) outs(%{{.*}} : memref<4x16xf32>) {transB = true}
  exec.kernel "gemm" ins(%x, %w : memref<4x8xf32>, memref<16x8xf32>) outs(%y : memref<4x16xf32>) {transB = true}
  // CHECK: exec.all_reduce mean %{{.*}} : memref<16x8xf32>
  exec.all_reduce mean %w : memref<16x8xf32>
  // CHECK: exec.alloc : memref<3xf32>
  %t = exec.alloc : memref<3xf32>
  // CHECK: exec.constant dense<1.000000e+00>
  %c = exec.constant dense<1.0> : tensor<f32> : memref<f32>
  return
}
