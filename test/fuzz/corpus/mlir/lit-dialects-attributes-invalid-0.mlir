func.func @negative(%w: tensor<4xf32> {otc.param = "w"}) -> (tensor<4xf32> {otc.updates = -1 : i64}) {
  return %w : tensor<4xf32>
}
