func.func @kept(%x: tensor<4x3xf32>, %v: tensor<3xf32>)
    -> (tensor<3x4xf32>, tensor<2x2xf32>, tensor<4x3xf32>, tensor<4x3xf32>,
        tensor<2x3xf32>) {
  %r = graph.reshape %x : tensor<4x3xf32> -> tensor<3x4xf32>
  %k = graph.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>
  %kr = graph.reshape %k : tensor<4xf32> -> tensor<2x2xf32>
  %zero = graph.constant dense<0.0> : tensor<4x3xf32>
  %b = graph.add %v, %zero : (tensor<3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
  %one = graph.constant dense<1.0> : tensor<3xf32>
  %p = graph.add %x, %one : (tensor<4x3xf32>, tensor<3xf32>) -> tensor<4x3xf32>
  %s = graph.slice %x {starts = array<i64: 0, 0>, steps = array<i64: 2, 1>} : tensor<4x3xf32> -> tensor<2x3xf32>
  return %r, %kr, %b, %p, %s : tensor<3x4xf32>, tensor<2x2xf32>, tensor<4x3xf32>, tensor<4x3xf32>, tensor<2x3xf32>
}
