func.func @adaptive(%g: tensor<4xf32>) {
  %0 = dist.compressed_all_reduce %g {method = "fp16", adaptive = true} : tensor<4xf32> -> tensor<4xf32>
  return
}
