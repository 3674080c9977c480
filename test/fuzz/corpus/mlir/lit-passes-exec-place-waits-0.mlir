module attributes {dist.world_size = 2 : i64} {
  func.func @train_step(%w1: tensor<2x3xf32> {otc.param = "w1"},
                        %w2: tensor<2x3xf32> {otc.param = "w2"},
                        %w3: tensor<4xf32> {otc.param = "w3"})
      -> (tensor<2x3xf32> {otc.updates = 0 : i64},
          tensor<2x3xf32> {otc.updates = 1 : i64},
          tensor<4xf32> {otc.updates = 2 : i64}) {
    %g3 = graph.neg %w3 : tensor<4xf32>
    %g2 = graph.relu %w2 : tensor<2x3xf32>
    %b0 = dist.bucket %g3, %g2 : tensor<4xf32>, tensor<2x3xf32> -> tensor<10xf32>
    %a0 = dist.all_reduce mean %b0 : tensor<10xf32>
    %g1 = graph.neg %w1 : tensor<2x3xf32>
    %a1 = dist.all_reduce mean %g1 : tensor<2x3xf32>
    %u:2 = dist.unbucket %a0 : tensor<10xf32> -> tensor<4xf32>, tensor<2x3xf32>
    %n1 = graph.sgd_update %w1, %a1 : tensor<2x3xf32>
    %n2 = graph.sgd_update %w2, %u#1 : tensor<2x3xf32>
    %n3 = graph.sgd_update %w3, %u#0 : tensor<4xf32>
    return %n1, %n2, %n3 : tensor<2x3xf32>, tensor<2x3xf32>, tensor<4xf32>
  }
}
