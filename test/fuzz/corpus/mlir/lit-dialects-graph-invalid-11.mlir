func.func @reduce_kind(%x: tensor<4x8xf32>) {
  %0 = graph.reduce "median" %x {axes = array<i64: 1>, keepdims = false} : tensor<4x8xf32> -> tensor<4xf32>
  return
}
