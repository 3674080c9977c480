module {
  func.func @train_step(%w2: tensor<4x2xf32> {otc.param = "w2"}, %b2: tensor<2xf32> {otc.param = "b2"},
                        %r: tensor<10xf32> {otc.state = "bucket0.residual", otc.role = "residual"})
      -> (tensor<4x2xf32> {otc.updates = 0 : i64}, tensor<2xf32> {otc.updates = 1 : i64}, tensor<10xf32> {otc.updates = 2 : i64}) {
    %db2 = graph.neg %b2 : tensor<2xf32>
    %dw2 = graph.relu %w2 : tensor<4x2xf32>
    %b = dist.bucket %db2, %dw2 : tensor<2xf32>, tensor<4x2xf32> -> tensor<10xf32>
    %avg, %r2 = dist.compressed_all_reduce %b, %r {method = "topk-int8", ratio = 0.05 : f32, block_size = 128 : i64, adaptive = true, warmup_steps = 3 : i64} : tensor<10xf32>, tensor<10xf32> -> tensor<10xf32>, tensor<10xf32>
    %u:2 = dist.unbucket %avg : tensor<10xf32> -> tensor<2xf32>, tensor<4x2xf32>
    %n2 = graph.sgd_update %w2, %u#1 : tensor<4x2xf32>
    %n3 = graph.sgd_update %b2, %u#0 : tensor<2xf32>
    return %n2, %n3, %r2 : tensor<4x2xf32>, tensor<2xf32>, tensor<10xf32>
  }
}
