func.func @forward(%x: tensor<4x8xf32> {otc.input = "input", otc.role = "data"},
                   %k: tensor<4x8xi16> {otc.input = "k", otc.role = "data"},
                   %w: tensor<8xf32> {otc.param = "w"}) -> (tensor<4x8xf32> {otc.output = "y"}) {
  %m = graph.max %k, %k : (tensor<4x8xi16>, tensor<4x8xi16>) -> tensor<4x8xi16>
  %f = graph.cast %m : tensor<4x8xi16> -> tensor<4x8xf32>
  %xw = graph.mul %x, %w : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %y = graph.add %xw, %f : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}
