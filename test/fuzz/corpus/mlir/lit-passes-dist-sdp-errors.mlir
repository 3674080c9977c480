func.func @forward(%x: tensor<2x4xf32> {otc.input = "x", otc.role = "data"},
                   %w1: tensor<3x4xf32> {otc.param = "fc1.weight"},
                   %w2: tensor<4x3xf32> {otc.param = "fc2.weight"},
                   %w3: tensor<4x4xf32> {otc.param = "skip.weight"}) -> tensor<2x4xf32> {
  %0 = graph.gemm %x, %w1 {transB = true} : (tensor<2x4xf32>, tensor<3x4xf32>) -> tensor<2x3xf32>
  %1 = graph.relu %0 : tensor<2x3xf32>
  %2 = graph.gemm %1, %w2 {transB = true} : (tensor<2x3xf32>, tensor<4x3xf32>) -> tensor<2x4xf32>
  %3 = graph.gemm %x, %w3 {transB = true} : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
  %4 = graph.add %2, %3 : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  return %4 : tensor<2x4xf32>
}
