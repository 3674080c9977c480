func.func @bucket_size(%a: tensor<2x3xf32>) {
  %0 = dist.bucket %a : tensor<2x3xf32> -> tensor<7xf32>
  return
}
