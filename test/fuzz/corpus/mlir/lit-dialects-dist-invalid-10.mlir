func.func @unbucket_size(%b: tensor<7xf32>) {
  %0 = dist.unbucket %b : tensor<7xf32> -> tensor<2x3xf32>
  return
}
