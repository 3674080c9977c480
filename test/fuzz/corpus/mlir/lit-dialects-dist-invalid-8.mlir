func.func @ratio_min(%g: tensor<4xf32>) {
  %0 = dist.compressed_all_reduce %g {method = "topk", adaptive = true, ratio_min = 0.5 : f32} : tensor<4xf32> -> tensor<4xf32>
  return
}
