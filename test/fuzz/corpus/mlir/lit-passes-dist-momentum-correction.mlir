func.func @train_step(%w: tensor<4xf32> {otc.param = "w"}, %g: tensor<4xf32> {otc.input = "g", otc.role = "data"},
                      %v: tensor<4xf32> {otc.state = "w.momentum_buffer"})
    -> (tensor<4xf32> {otc.updates = 0 : i64}, tensor<4xf32> {otc.updates = 2 : i64}) {
  %w2, %v2 = graph.momentum_update %w, %g, %v {lr_scale = 0.5 : f32, wd_scale = 2.0 : f32} : tensor<4xf32>
  return %w2, %v2 : tensor<4xf32>, tensor<4xf32>
}
