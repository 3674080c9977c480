func.func @ema_decay(%e: tensor<3xf32>, %w: tensor<3xf32>) {
  %0 = graph.ema_update %e, %w {decay = 1.0 : f32} : tensor<3xf32>
  return
}
