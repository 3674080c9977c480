func.func @train_step(%w1: tensor<4x4xf32>, %w2: tensor<4x2xf32>, %b2: tensor<2xf32>, %x: tensor<8x4xf32>)
    -> (tensor<4x4xf32>, tensor<4x2xf32>, tensor<2xf32>) {
  %db2 = graph.neg %b2 : tensor<2xf32>
  %dw2 = graph.relu %w2 : tensor<4x2xf32>
  %dw1 = graph.tanh %w1 : tensor<4x4xf32>
  %n1 = graph.sgd_update %w1, %dw1 : tensor<4x4xf32>
  %n2 = graph.sgd_update %w2, %dw2 : tensor<4x2xf32>
  %n3 = graph.sgd_update %b2, %db2 : tensor<2xf32>
  return %n1, %n2, %n3 : tensor<4x4xf32>, tensor<4x2xf32>, tensor<2xf32>
}
