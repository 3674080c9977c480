func.func @method(%g: tensor<4xf32>) {
  %0 = dist.compressed_all_reduce %g {method = "powersgd"} : tensor<4xf32> -> tensor<4xf32>
  return
}
