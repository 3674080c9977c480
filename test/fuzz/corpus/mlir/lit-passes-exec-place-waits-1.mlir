module attributes {dist.world_size = 2 : i64} {
  func.func @train_step(%w1: tensor<2x3xf32> {otc.param = "w1"},
                        %w2: tensor<2x3xf32> {otc.param = "w2"})
      -> (tensor<2x3xf32> {otc.updates = 0 : i64},
          tensor<2x3xf32> {otc.updates = 1 : i64},
          tensor<2x3xf32> {otc.output = "n"}) {
    %g1 = graph.neg %w1 : tensor<2x3xf32>
    %a1 = dist.all_reduce mean %g1 : tensor<2x3xf32>
    %g2 = graph.relu %w2 : tensor<2x3xf32>
    %a2 = dist.all_reduce mean %g2 : tensor<2x3xf32>
    %n = graph.neg %a1 : tensor<2x3xf32>
    %u1 = graph.sgd_update %w1, %a1 : tensor<2x3xf32>
    %u2 = graph.sgd_update %w2, %a2 : tensor<2x3xf32>
    return %u1, %u2, %n : tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>
  }
}
