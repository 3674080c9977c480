func.func @train_step(%x: tensor<4x8xf32> {otc.input = "x", otc.role = "data"},
                      %w: tensor<8x3xf32> {otc.param = "w"},
                      %l: tensor<4xi64> {otc.input = "labels", otc.role = "label"})
    -> (tensor<8x3xf32> {otc.updates = 1 : i64}, tensor<f32> {otc.output = "loss"}) {
  %one = graph.constant dense<1.0> : tensor<f32>
  %y = graph.matmul %x, %w : (tensor<4x8xf32>, tensor<8x3xf32>) -> tensor<4x3xf32>
  %loss, %p = graph.softmax_cross_entropy %y, %l : (tensor<4x3xf32>, tensor<4xi64>) -> (tensor<f32>, tensor<4x3xf32>)
  %dy = graph.softmax_cross_entropy_grad %p, %l, %one : (tensor<4x3xf32>, tensor<4xi64>, tensor<f32>) -> tensor<4x3xf32>
  %dw = graph.gemm %x, %dy {transA = true} : (tensor<4x8xf32>, tensor<4x3xf32>) -> tensor<8x3xf32>
  %avg = dist.all_reduce mean %dw : tensor<8x3xf32>
  %w2 = graph.sgd_update %w, %avg : tensor<8x3xf32>
  return %w2, %loss : tensor<8x3xf32>, tensor<f32>
}

func.func @late_use(%w: tensor<3xf32> {otc.param = "w"}, %g: tensor<3xf32> {otc.input = "g", otc.role = "data"}) -> (tensor<3xf32>, tensor<3xf32>) {
  %w2 = graph.sgd_update %w, %g : tensor<3xf32>
  %r = graph.relu %w : tensor<3xf32>
  return %w2, %r : tensor<3xf32>, tensor<3xf32>
}
