func.func @train_step(%w: tensor<3xf32>, %g: tensor<3xf32>, %v: tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>) {
  %w2, %v2 = graph.momentum_update %w, %g, %v : tensor<3xf32>
  return %w2, %v2 : tensor<3xf32>, tensor<3xf32>
}
