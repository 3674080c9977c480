func.func @rmsprop_state_count(%w: tensor<3xf32>, %g: tensor<3xf32>, %sq: tensor<3xf32>) {
  %0:2 = graph.rmsprop_update %w, %g, %sq {centered = true, with_momentum = true} : tensor<3xf32>
  return
}
