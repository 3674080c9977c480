func.func @layer_norm_scale(%x: tensor<8x64xf32>, %s: tensor<32xf32>) {
  %0:3 = graph.layer_norm %x, %s {axis = -1 : i64, epsilon = 1.0e-05 : f32}
      : (tensor<8x64xf32>, tensor<32xf32>) -> (tensor<8x64xf32>, tensor<8x1xf32>, tensor<8x1xf32>)
  return
}
