func.func @identities(%x: tensor<4x3xf32>)
    -> (tensor<4x3xf32>, tensor<4x3xf32>, tensor<4x3xf32>, tensor<4x3xf32>,
        tensor<4x3xf32>, tensor<4x3xf32>) {
  %r = graph.reshape %x : tensor<4x3xf32> -> tensor<4x3xf32>
  %c = graph.cast %x : tensor<4x3xf32> -> tensor<4x3xf32>
  %e = graph.expand %x : tensor<4x3xf32> -> tensor<4x3xf32>
  %s = graph.slice %x {starts = array<i64: 0, 0>, steps = array<i64: 1, 1>} : tensor<4x3xf32> -> tensor<4x3xf32>
  %t = graph.reduce_sum_to %x : tensor<4x3xf32> -> tensor<4x3xf32>
  %zero = graph.constant dense<0.0> : tensor<3xf32>
  %a = graph.add %x, %zero : (tensor<4x3xf32>, tensor<3xf32>) -> tensor<4x3xf32>
  return %r, %c, %e, %s, %t, %a : tensor<4x3xf32>, tensor<4x3xf32>, tensor<4x3xf32>, tensor<4x3xf32>, tensor<4x3xf32>, tensor<4x3xf32>
}
