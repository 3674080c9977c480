func.func @residual_type(%g: tensor<4xf32>, %r: tensor<3xf32>) {
  %0, %1 = dist.compressed_all_reduce %g, %r {method = "topk"} : tensor<4xf32>, tensor<3xf32> -> tensor<4xf32>, tensor<3xf32>
  return
}
