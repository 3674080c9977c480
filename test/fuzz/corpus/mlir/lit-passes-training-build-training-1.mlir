func.func @forward(%x: tensor<2x2xf32> {otc.input = "x", otc.role = "data"},
                   %w: tensor<2x2xf32> {otc.param = "w"},
                   %unused: tensor<2xf32> {otc.param = "unused"}) -> (tensor<2x2xf32> {otc.output = "y"}) {
  %y = graph.matmul %x, %w : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>
  return %y : tensor<2x2xf32>
}
