func.func @reduce_to(%a: tensor<4x8xf32>) {
  %0 = graph.reduce_sum_to %a : tensor<4x8xf32> -> tensor<3xf32>
  return
}
