func.func @f(%a: tensor<4611686018427387904xf32>, %b: tensor<4611686018427387904xf32>) -> tensor<4xf32> {
  %0 = dist.bucket %a, %b : tensor<4611686018427387904xf32>, tensor<4611686018427387904xf32> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
