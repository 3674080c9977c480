func.func @not_an_integer(%w: tensor<4xf32> {otc.param = "w"}) -> (tensor<4xf32> {otc.updates = "w"}) {
  return %w : tensor<4xf32>
}
