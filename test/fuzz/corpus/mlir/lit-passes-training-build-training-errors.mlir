module {
  func.func @forward(%x: tensor<4x8xf32> {otc.input = "input", otc.role = "data"},
                     %w: tensor<8x3xf32> {otc.param = "w"}) -> (tensor<4x3xf32> {otc.output = "y"}) {
    %y = graph.matmul %x, %w : (tensor<4x8xf32>, tensor<8x3xf32>) -> tensor<4x3xf32>
    return %y : tensor<4x3xf32>
  }
}
