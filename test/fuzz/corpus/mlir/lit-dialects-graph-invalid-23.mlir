func.func @concat_beyond_int64(%a: tensor<4611686018427387904xf32>) {
  %0 = graph.concat %a, %a {axis = 0 : i64} : (tensor<4611686018427387904xf32>, tensor<4611686018427387904xf32>) -> tensor<4xf32>
  return
}
