module attributes {dist.world_size = 2 : i64} {
  func.func @train_step(%x: tensor<4x8xf32> {otc.input = "x", otc.role = "data"},
                        %w: tensor<8x3xf32> {otc.param = "w"},
                        %l: tensor<4xi64> {otc.input = "labels", otc.role = "label"},
                        %m: tensor<8x3xf32> {otc.state = "w.exp_avg"},
                        %v: tensor<8x3xf32> {otc.state = "w.exp_avg_sq"})
      -> (tensor<8x3xf32> {otc.updates = 1 : i64}, tensor<8x3xf32> {otc.updates = 3 : i64},
          tensor<8x3xf32> {otc.updates = 4 : i64}, tensor<f32> {otc.output = "loss"}) {
    %one = graph.constant dense<1.0> : tensor<f32>
    %y = graph.matmul %x, %w : (tensor<4x8xf32>, tensor<8x3xf32>) -> tensor<4x3xf32>
    %loss, %p = graph.softmax_cross_entropy %y, %l : (tensor<4x3xf32>, tensor<4xi64>) -> (tensor<f32>, tensor<4x3xf32>)
    %dy = graph.softmax_cross_entropy_grad %p, %l, %one : (tensor<4x3xf32>, tensor<4xi64>, tensor<f32>) -> tensor<4x3xf32>
    %dw = graph.gemm %x, %dy {transA = true} : (tensor<4x8xf32>, tensor<4x3xf32>) -> tensor<8x3xf32>
    %avg = dist.all_reduce mean %dw : tensor<8x3xf32>
    %w2, %m2, %v2 = graph.adam_update %w, %avg, %m, %v : tensor<8x3xf32>
    return %w2, %m2, %v2, %loss : tensor<8x3xf32>, tensor<8x3xf32>, tensor<8x3xf32>, tensor<f32>
  }
}
