func.func @huge(%w: tensor<4xf32> {otc.param = "w"}) -> (tensor<4xf32> {otc.updates = 9999999999 : i64}) {
  return %w : tensor<4xf32>
}
