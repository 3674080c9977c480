func.func @train_step(%w: tensor<10xf32> {otc.param = "w"}, %g: tensor<10xf32> {otc.input = "g", otc.role = "data"})
    -> (tensor<10xf32> {otc.updates = 0 : i64}) {
  %b = dist.bucket %g : tensor<10xf32> -> tensor<10xf32>
  %u = dist.unbucket %b : tensor<10xf32> -> tensor<10xf32>
  %w2 = graph.sgd_update %w, %u : tensor<10xf32>
  return %w2 : tensor<10xf32>
}
