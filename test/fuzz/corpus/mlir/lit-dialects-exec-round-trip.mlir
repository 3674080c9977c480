func.func @step(%arena: memref<?xi8>) {
  %x = exec.view %arena[0] : memref<?xi8> -> memref<4x8xf32>
  %w = exec.view %arena[128] : memref<?xi8> -> memref<16x8xf32>
  %y = exec.view %arena[640] : memref<?xi8> -> memref<4x16xf32>
  exec.kernel "gemm" ins(%x, %w : memref<4x8xf32>, memref<16x8xf32>) outs(%y : memref<4x16xf32>) {transB = true}
  exec.all_reduce mean %w : memref<16x8xf32>
  %t = exec.alloc : memref<3xf32>
  %c = exec.constant dense<1.0> : tensor<f32> : memref<f32>
  return
}
