func.func @param_name(%w: tensor<4xf32> {otc.param = 3 : i64}) {
  return
}
