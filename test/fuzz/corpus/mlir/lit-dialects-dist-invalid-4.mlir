func.func @feedback(%g: tensor<4xf32>) {
  %0, %1 = dist.compressed_all_reduce %g, %g {method = "none"} : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>, tensor<4xf32>
  return
}
