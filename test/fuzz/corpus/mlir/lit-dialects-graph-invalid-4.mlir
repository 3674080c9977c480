func.func @softmax_axis(%a: tensor<4x8xf32>) {
  %0 = graph.softmax %a {axis = 2 : i64} : tensor<4x8xf32>
  return
}
