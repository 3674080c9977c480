func.func @twice(%w: tensor<4xf32> {otc.param = "w"}) -> (tensor<4xf32> {otc.updates = 0 : i64}, tensor<4xf32> {otc.updates = 0 : i64}) {
  return %w, %w : tensor<4xf32>, tensor<4xf32>
}
