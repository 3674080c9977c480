func.func @const(%a: memref<4xf32>) {
  %c = exec.constant dense<1.0> : tensor<3xf32> : memref<4xf32>
  return
}
