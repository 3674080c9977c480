func.func @forward(%x: tensor<4x8xf32> {otc.input = "input", otc.role = "data"},
                   %w: tensor<8xf32> {otc.param = "w"}) -> (tensor<4x8xf32> {otc.output = "y"}) {
  %i = graph.cast %w : tensor<8xf32> -> tensor<8xui8>
  %s = graph.shift_left %i, %i : (tensor<8xui8>, tensor<8xui8>) -> tensor<8xui8>
  %f = graph.cast %s : tensor<8xui8> -> tensor<8xf32>
  %y = graph.mul %x, %f : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}
