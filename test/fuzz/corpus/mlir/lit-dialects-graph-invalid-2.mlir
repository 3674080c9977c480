func.func @reshape(%a: tensor<4x8xf32>) {
  %0 = graph.reshape %a : tensor<4x8xf32> -> tensor<5x7xf32>
  return
}
