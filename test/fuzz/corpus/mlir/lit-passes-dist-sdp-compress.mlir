func.func @forward(%x: tensor<2x4xf32> {otc.input = "x", otc.role = "data"},
                   %w1: tensor<4x4xf32> {otc.param = "b1.fc.weight"},
                   %c1: tensor<4xf32> {otc.param = "b1.fc.bias"},
                   %w2: tensor<4x4xf32> {otc.param = "b2.fc.weight"},
                   %c2: tensor<4xf32> {otc.param = "b2.fc.bias"},
                   %wh: tensor<3x4xf32> {otc.param = "head.weight"}) -> tensor<2x3xf32> {
  %0 = graph.gemm %x, %w1, %c1 {transB = true} : (tensor<2x4xf32>, tensor<4x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  %1 = graph.relu %0 : tensor<2x4xf32>
  %2 = graph.add %x, %1 : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  %3 = graph.gemm %2, %w2, %c2 {transB = true} : (tensor<2x4xf32>, tensor<4x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  %4 = graph.tanh %3 : tensor<2x4xf32>
  %5 = graph.add %4, %2 : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  %6 = graph.gemm %5, %wh {transB = true} : (tensor<2x4xf32>, tensor<3x4xf32>) -> tensor<2x3xf32>
  return %6 : tensor<2x3xf32>
}
