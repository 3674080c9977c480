module attributes {dist.world_size = 4 : i64, otc.seed = 7 : i64} {
  func.func @train_step(%x: tensor<2x4xf32> {otc.input = "x", otc.role = "data"}, %w: tensor<4x4xf32> {otc.param = "w", dist.sdp_owners = array<i64: 0, 2>, dist.sdp_slices = [{axis = 0 : i64, ranges = array<i64: 0, 2, 3, 5>}]}, %b: tensor<4xf32> {otc.param = "b", otc.buffer}, %m: tensor<4x4xf32> {otc.state = "w.momentum_buffer"}, %r: tensor<20xf32> {otc.role = "residual", otc.state = "bucket0.residual"}) -> (tensor<4x4xf32> {otc.updates = 1 : i64}, tensor<4x4xf32> {otc.updates = 3 : i64}, tensor<20xf32> {otc.updates = 4 : i64}, tensor<4xf32> {otc.output = "y"}) {
    %0 = dist.bucket %w, %b : tensor<4x4xf32>, tensor<4xf32> -> tensor<20xf32>
    %1, %r2 = dist.compressed_all_reduce %0, %r {method = "topk-int8", ratio = 0.25 : f32, block_size = 8 : i64, adaptive = true, warmup_steps = 2 : i64, bucket = 0 : i64} : tensor<20xf32>, tensor<20xf32> -> tensor<20xf32>, tensor<20xf32>
    %2:2 = dist.unbucket %1 : tensor<20xf32> -> tensor<4x4xf32>, tensor<4xf32>
    %3 = dist.all_reduce mean %2#0 {range = array<i64: 4, 12>} : tensor<4x4xf32>
    return %3, %m, %r2, %2#1 : tensor<4x4xf32>, tensor<4x4xf32>, tensor<20xf32>, tensor<4xf32>
  }
}
