module attributes {dist.world_size = 2 : i64} {
  func.func @train_step(%w: tensor<2x3xf32> {otc.param = "w"},
                        %b: tensor<3xf32> {otc.param = "b"})
      -> (tensor<2x3xf32> {otc.updates = 0 : i64},
          tensor<3xf32> {otc.updates = 1 : i64}) {
    %g1 = graph.neg %w : tensor<2x3xf32>
    %g2 = graph.relu %b : tensor<3xf32>
    %a1 = dist.all_reduce mean %g1 : tensor<2x3xf32>
    %u1 = graph.sgd_update %w, %a1 : tensor<2x3xf32>
    %a2 = dist.all_reduce mean %g2 : tensor<3xf32>
    %u2 = graph.sgd_update %b, %a2 : tensor<3xf32>
    return %u1, %u2 : tensor<2x3xf32>, tensor<3xf32>
  }
}
