module {
  func.func @train_step(%w1: tensor<2x3xf32> {otc.param = "w1"},
                        %w2: tensor<2x3xf32> {otc.param = "w2"},
                        %v2: tensor<2x3xf32> {otc.state = "w2.momentum_buffer"})
      -> (tensor<2x3xf32> {otc.updates = 0 : i64},
          tensor<2x3xf32> {otc.updates = 1 : i64},
          tensor<2x3xf32> {otc.updates = 2 : i64},
          tensor<2x3xf32> {otc.output = "n"}) {
    %mu = graph.hyperparameter "momentum" : tensor<f32>
    %g1 = graph.mul %w1, %mu : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
    %g2 = graph.neg %w2 : tensor<2x3xf32>
    %u1 = graph.sgd_update %w1, %g1 {lr_scale = 0.5 : f32, wd_scale = 0.0 : f32} : tensor<2x3xf32>
    %u2, %nv = graph.momentum_update %w2, %g2, %v2 {wd_scale = 2.0 : f32, nesterov = true} : tensor<2x3xf32>
    return %u1, %u2, %nv, %g1 : tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>
  }
}
