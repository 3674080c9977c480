func.func @conv_group(%x: tensor<8x4x8x8xf32>, %w: tensor<6x4x3x3xf32>) {
  %0 = graph.conv %x, %w {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>,
      pads_begin = array<i64: 0, 0>, pads_end = array<i64: 0, 0>, group = 2 : i64}
      : (tensor<8x4x8x8xf32>, tensor<6x4x3x3xf32>) -> tensor<8x6x6x6xf32>
  return
}
