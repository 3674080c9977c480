func.func @gemm_inner(%a: tensor<4x8xf32>, %b: tensor<16x9xf32>) {
  %0 = graph.gemm %a, %b {transB = true} : (tensor<4x8xf32>, tensor<16x9xf32>) -> tensor<4x16xf32>
  return
}
