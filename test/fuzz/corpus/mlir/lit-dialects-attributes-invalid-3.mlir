func.func @an_input(%w: tensor<4xf32> {otc.param = "w"}, %x: tensor<4xf32> {otc.input = "x", otc.role = "data"}) -> (tensor<4xf32> {otc.updates = 1 : i64}) {
  return %w : tensor<4xf32>
}
