func.func @broadcast(%a: tensor<4x8xf32>, %b: tensor<3xf32>) {
  %0 = graph.add %a, %b : (tensor<4x8xf32>, tensor<3xf32>) -> tensor<4x8xf32>
  return
}
