func.func @unary_grad_saved(%dy: tensor<4xf32>, %x: tensor<4xf32>) {
  %0 = graph.unary_grad "relu" %dy x %x : tensor<4xf32>
  return
}
