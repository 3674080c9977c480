func.func @ce_labels(%a: tensor<4x8xf32>, %l: tensor<5xi64>) {
  %0, %1 = graph.softmax_cross_entropy %a, %l : (tensor<4x8xf32>, tensor<5xi64>) -> (tensor<f32>, tensor<4x8xf32>)
  return
}
