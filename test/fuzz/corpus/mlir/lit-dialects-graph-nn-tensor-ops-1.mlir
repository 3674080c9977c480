func.func @attention(%q: tensor<2x4x16x8xf32>, %k: tensor<2x4x16x8xf32>, %mask: tensor<16x16xi1>,
                     %table: tensor<512x8xf32>, %ids: tensor<2x16xi64>)
    -> (tensor<2x4x16x16xf32>, tensor<2x4x8x8xf32>, tensor<2x16x8xf32>) {
  %s = graph.matmul %q, %k {transB = true} : (tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>) -> tensor<2x4x16x16xf32>
  %ninf = graph.constant dense<0xFF800000> : tensor<f32>
  %m = graph.where %mask, %s, %ninf : (tensor<16x16xi1>, tensor<2x4x16x16xf32>, tensor<f32>) -> tensor<2x4x16x16xf32>
  %h = graph.slice %q {starts = array<i64: 0, 0, 0, 0>, steps = array<i64: 1, 1, 2, 1>}
      : tensor<2x4x16x8xf32> -> tensor<2x4x8x8xf32>
  %e = graph.gather %table, %ids {axis = 0 : i64} : (tensor<512x8xf32>, tensor<2x16xi64>) -> tensor<2x16x8xf32>
  return %m, %h, %e : tensor<2x4x16x16xf32>, tensor<2x4x8x8xf32>, tensor<2x16x8xf32>
}
