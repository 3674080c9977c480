func.func @ratio(%g: tensor<4xf32>) {
  %0 = dist.compressed_all_reduce %g {method = "topk-int8", ratio = 0.0 : f32} : tensor<4xf32> -> tensor<4xf32>
  return
}
