func.func @forward(%x: tensor<4x8xf32> {otc.input = "input", otc.role = "data"},
                   %w: tensor<3x8xf32> {otc.param = "fc.weight"},
                   %b: tensor<3xf32> {otc.param = "fc.bias"}) -> (tensor<4x3xf32> {otc.output = "logits"}) {
  %h = graph.gemm %x, %w, %b {transB = true} : (tensor<4x8xf32>, tensor<3x8xf32>, tensor<3xf32>) -> tensor<4x3xf32>
  return %h : tensor<4x3xf32>
}
