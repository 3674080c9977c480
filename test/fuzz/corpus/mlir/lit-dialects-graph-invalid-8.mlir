func.func @conv_shape(%x: tensor<8x3x32x32xf32>, %w: tensor<16x3x3x3xf32>) {
  %0 = graph.conv %x, %w {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>,
      pads_begin = array<i64: 0, 0>, pads_end = array<i64: 0, 0>, group = 1 : i64}
      : (tensor<8x3x32x32xf32>, tensor<16x3x3x3xf32>) -> tensor<8x16x32x32xf32>
  return
}
