func.func @forward(%x: tensor<2x5xf32> {otc.input = "x", otc.role = "data"},
                   %w1: tensor<8x5xf32> {otc.param = "fc1.weight"},
                   %c1: tensor<8xf32> {otc.param = "fc1.bias"},
                   %w2: tensor<6x8xf32> {otc.param = "fc2.weight"},
                   %c2: tensor<6xf32> {otc.param = "fc2.bias"},
                   %w3: tensor<6x3xf32> {otc.param = "fc3.weight"}) -> tensor<2x3xf32> {
  %0 = graph.gemm %x, %w1, %c1 {transB = true} : (tensor<2x5xf32>, tensor<8x5xf32>, tensor<8xf32>) -> tensor<2x8xf32>
  %1 = graph.relu %0 : tensor<2x8xf32>
  %2 = graph.gemm %1, %w2, %c2 {transB = true} : (tensor<2x8xf32>, tensor<6x8xf32>, tensor<6xf32>) -> tensor<2x6xf32>
  %3 = graph.sigmoid %2 : tensor<2x6xf32>
  %4 = graph.matmul %3, %w3 : (tensor<2x6xf32>, tensor<6x3xf32>) -> tensor<2x3xf32>
  return %4 : tensor<2x3xf32>
}
