func.func @train_step(%w1: tensor<4xf32>, %w2: tensor<4xf32>)
    -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %h = graph.neg %w1 : tensor<4xf32>
  %x = graph.exp %w1 : tensor<4xf32>
  %g2 = graph.relu %w2 : tensor<4xf32>
  %g1 = graph.tanh %h : tensor<4xf32>
  %a2 = dist.all_reduce mean %g2 : tensor<4xf32>
  %a1 = dist.all_reduce mean %g1 : tensor<4xf32>
  %u2 = graph.sgd_update %w2, %a2 : tensor<4xf32>
  %u1 = graph.sgd_update %w1, %a1 : tensor<4xf32>
  return %u1, %u2, %x : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}

func.func @in_order(%w: tensor<4xf32>) -> tensor<4xf32> {
  %g = graph.neg %w : tensor<4xf32>
  %a = dist.all_reduce mean %g : tensor<4xf32>
  return %a : tensor<4xf32>
}

func.func @broadcast_stays(%w: tensor<4xf32>, %f: tensor<4xf32>)
    -> (tensor<4xf32>, tensor<4xf32>) {
  %g = graph.neg %w : tensor<4xf32>
  %a = dist.all_reduce mean %g : tensor<4xf32>
  %u = graph.sgd_update %w, %a : tensor<4xf32>
  %b = dist.broadcast %f {root = 0 : i64} : tensor<4xf32>
  return %u, %b : tensor<4xf32>, tensor<4xf32>
}
