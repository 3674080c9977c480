func.func @transpose(%a: tensor<4x8xf32>) {
  %0 = graph.transpose %a {perm = array<i64: 0, 0>} : tensor<4x8xf32> -> tensor<4x4xf32>
  return
}
