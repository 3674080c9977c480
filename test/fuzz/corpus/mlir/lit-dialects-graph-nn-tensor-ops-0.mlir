func.func @cnn(%x: tensor<8x3x32x32xf32>, %w: tensor<16x3x3x3xf32>, %b: tensor<16xf32>,
               %s: tensor<16xf32>, %m: tensor<16xf32>, %v: tensor<16xf32>) -> tensor<8x16x1x1xf32> {
  %c = graph.conv %x, %w, %b {strides = array<i64: 2, 2>, dilations = array<i64: 1, 1>,
      pads_begin = array<i64: 1, 1>, pads_end = array<i64: 1, 1>, group = 1 : i64}
      : (tensor<8x3x32x32xf32>, tensor<16x3x3x3xf32>, tensor<16xf32>) -> tensor<8x16x16x16xf32>
  %y, %rm, %rv, %sm, %si = graph.batch_norm %c, %s, %b, %m, %v {epsilon = 1.0e-05 : f32, momentum = 0.9 : f32}
      : (tensor<8x16x16x16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>)
      -> (tensor<8x16x16x16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>)
  %p, %i = graph.max_pool %y {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>,
      dilations = array<i64: 1, 1>, pads_begin = array<i64: 0, 0>, pads_end = array<i64: 0, 0>}
      : tensor<8x16x16x16xf32> -> (tensor<8x16x8x8xf32>, tensor<8x16x8x8xi64>)
  %g = graph.reduce "mean" %p {axes = array<i64: 2, 3>, keepdims = true}
      : tensor<8x16x8x8xf32> -> tensor<8x16x1x1xf32>
  return %g : tensor<8x16x1x1xf32>
}
