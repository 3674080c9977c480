func.func @forward(%x: tensor<4x8xf32> {otc.input = "input", otc.role = "data"},
                   %w1: tensor<6x8xf32> {otc.param = "fc1.weight"},
                   %b1: tensor<6xf32> {otc.param = "fc1.bias"},
                   %g: tensor<6xf32> {otc.param = "ln.weight"},
                   %w2: tensor<3x6xf32> {otc.param = "fc2.weight"},
                   %b2: tensor<3xf32> {otc.param = "fc2.bias"}) -> (tensor<4x3xf32> {otc.output = "logits"}) {
  %h = graph.gemm %x, %w1, %b1 {transB = true} : (tensor<4x8xf32>, tensor<6x8xf32>, tensor<6xf32>) -> tensor<4x6xf32>
  %n:3 = graph.layer_norm %h, %g {axis = -1 : i64, epsilon = 1.0e-05 : f32}
      : (tensor<4x6xf32>, tensor<6xf32>) -> (tensor<4x6xf32>, tensor<4x1xf32>, tensor<4x1xf32>)
  %y = graph.gemm %n#0, %w2, %b2 {transB = true} : (tensor<4x6xf32>, tensor<3x6xf32>, tensor<3xf32>) -> tensor<4x3xf32>
  return %y : tensor<4x3xf32>
}
