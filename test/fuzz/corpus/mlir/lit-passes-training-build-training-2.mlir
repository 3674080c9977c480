func.func @forward(%x: tensor<4x8xf32> {otc.input = "input", otc.role = "data"},
                   %w1: tensor<6x8xf32> {otc.param = "fc1.weight"},
                   %w2: tensor<3x6xf32> {otc.param = "fc2.weight"},
                   %b2: tensor<3xf32> {otc.param = "fc2.bias"}) -> (tensor<4x3xf32> {otc.output = "logits"}) {
  %h = graph.gemm %x, %w1 {transB = true} : (tensor<4x8xf32>, tensor<6x8xf32>) -> tensor<4x6xf32>
  %r = graph.relu %h : tensor<4x6xf32>
  %y = graph.gemm %r, %w2, %b2 {transB = true} : (tensor<4x6xf32>, tensor<3x6xf32>, tensor<3xf32>) -> tensor<4x3xf32>
  return %y : tensor<4x3xf32>
}
