func.func @unbucket_beyond_int64(%b: tensor<4xf32>) {
  %0:2 = dist.unbucket %b : tensor<4xf32> -> tensor<4611686018427387904xf32>, tensor<4611686018427387904xf32>
  return
}
