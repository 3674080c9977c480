module {
  func.func @eval_step(%x: tensor<1x1x3x3xf32> {otc.input = "x", otc.role = "data"},
                       %w: tensor<1x2x3x3xf32> {otc.param = "w"})
      -> (tensor<1x2x7x7xf32> {otc.output = "y"}) {
    %y = graph.conv_transpose %x, %w {strides = array<i64: 2, 2>, dilations = array<i64: 1, 1>,
        pads_begin = array<i64: 0, 0>, pads_end = array<i64: 0, 0>, group = 1 : i64}
        : (tensor<1x1x3x3xf32>, tensor<1x2x3x3xf32>) -> tensor<1x2x7x7xf32>
    return %y : tensor<1x2x7x7xf32>
  }
}
