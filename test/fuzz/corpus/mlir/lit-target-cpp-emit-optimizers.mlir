module {
  func.func @train_step(%w1: tensor<2x3xf32> {otc.param = "w1"},
                        %w2: tensor<2x3xf32> {otc.param = "w2"},
                        %w3: tensor<2x3xf32> {otc.param = "w3"},
                        %w4: tensor<2x3xf32> {otc.param = "w4"},
                        %w5: tensor<2x3xf32> {otc.param = "w5"},
                        %w6: tensor<2x3xf32> {otc.param = "w6"},
                        %m1: tensor<2x3xf32> {otc.state = "w1.exp_avg"},
                        %v1: tensor<2x3xf32> {otc.state = "w1.exp_avg_sq"},
                        %e1: tensor<2x3xf32> {otc.state = "w1.ema"},
                        %m2: tensor<2x3xf32> {otc.state = "w2.exp_avg"},
                        %s3: tensor<2x3xf32> {otc.state = "w3.sum"},
                        %q4: tensor<2x3xf32> {otc.state = "w4.square_avg"},
                        %q5: tensor<2x3xf32> {otc.state = "w5.square_avg"},
                        %a5: tensor<2x3xf32> {otc.state = "w5.grad_avg"},
                        %b5: tensor<2x3xf32> {otc.state = "w5.momentum_buffer"},
                        %q6: tensor<2x3xf32> {otc.state = "w6.square_avg"},
                        %b6: tensor<2x3xf32> {otc.state = "w6.momentum_buffer"})
      -> (tensor<2x3xf32> {otc.updates = 0 : i64}, tensor<2x3xf32> {otc.updates = 6 : i64},
          tensor<2x3xf32> {otc.updates = 7 : i64}, tensor<2x3xf32> {otc.updates = 8 : i64},
          tensor<2x3xf32> {otc.updates = 1 : i64}, tensor<2x3xf32> {otc.updates = 9 : i64},
          tensor<2x3xf32> {otc.updates = 2 : i64}, tensor<2x3xf32> {otc.updates = 10 : i64},
          tensor<2x3xf32> {otc.updates = 3 : i64}, tensor<2x3xf32> {otc.updates = 11 : i64},
          tensor<2x3xf32> {otc.updates = 4 : i64}, tensor<2x3xf32> {otc.updates = 12 : i64},
          tensor<2x3xf32> {otc.updates = 13 : i64}, tensor<2x3xf32> {otc.updates = 14 : i64},
          tensor<2x3xf32> {otc.updates = 5 : i64}, tensor<2x3xf32> {otc.updates = 15 : i64},
          tensor<2x3xf32> {otc.updates = 16 : i64}) {
    %g1 = graph.neg %w1 : tensor<2x3xf32>
    %g2 = graph.neg %w2 : tensor<2x3xf32>
    %g3 = graph.neg %w3 : tensor<2x3xf32>
    %g4 = graph.neg %w4 : tensor<2x3xf32>
    %g5 = graph.neg %w5 : tensor<2x3xf32>
    %g6 = graph.neg %w6 : tensor<2x3xf32>
    %u1, %nm1, %nv1 = graph.lamb_update %w1, %g1, %m1, %v1 {wd_scale = 0.0 : f32} : tensor<2x3xf32>
    %ne1 = graph.ema_update %e1, %u1 {decay = 0.999 : f32} : tensor<2x3xf32>
    %u2, %nm2 = graph.lion_update %w2, %g2, %m2 {lr_scale = 0.5 : f32} : tensor<2x3xf32>
    %u3, %ns3 = graph.adagrad_update %w3, %g3, %s3 {wd_scale = 2.0 : f32} : tensor<2x3xf32>
    %u4, %nq4 = graph.rmsprop_update %w4, %g4, %q4 : tensor<2x3xf32>
    %u5, %n5:3 = graph.rmsprop_update %w5, %g5, %q5, %a5, %b5 {centered = true, with_momentum = true} : tensor<2x3xf32>
    %u6, %n6:2 = graph.rmsprop_update %w6, %g6, %q6, %b6 {with_momentum = true} : tensor<2x3xf32>
    return %u1, %nm1, %nv1, %ne1, %u2, %nm2, %u3, %ns3, %u4, %nq4, %u5, %n5#0, %n5#1, %n5#2, %u6, %n6#0, %n6#1
        : tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>,
          tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>,
          tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>
  }
}
