func.func @other_type(%w: tensor<4xf32> {otc.param = "w"}, %b: tensor<2xf32> {otc.param = "b"}) -> (tensor<2xf32> {otc.updates = 0 : i64}) {
  return %b : tensor<2xf32>
}
