func.func @binary_grad_kind(%dy: tensor<4xf32>, %a: tensor<4xf32>) {
  %0 = graph.binary_grad "remainder" 0 %dy, %a, %a : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return
}
