func.func @bucket_beyond_int64(%a: tensor<4611686018427387904xf32>) {
  %0 = dist.bucket %a, %a : tensor<4611686018427387904xf32>, tensor<4611686018427387904xf32> -> tensor<4xf32>
  return
}
