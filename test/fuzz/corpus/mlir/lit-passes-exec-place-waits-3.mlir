module attributes {dist.world_size = 4 : i64, dist.sdp = {active = 5.000000e-01 : f64, assignment = "cyclic", components = [{name = "b1", owners = array<i64: 0, 1>}, {name = "b2", owners = array<i64: 2, 3>}], groups = [array<i64: 0, 1>, array<i64: 2, 3>], masking = "backward", mode = "block", rank_variant = array<i64: 0, 0, 2, 2>, rescale = true, seed = 0 : i64}} {
  func.func @train_step(%x: tensor<2x4xf32> {otc.input = "x", otc.role = "data"},
                        %w1: tensor<4x4xf32> {otc.param = "b1.weight", dist.sdp_owners = array<i64: 0, 1>},
                        %w2: tensor<4x4xf32> {otc.param = "b2.weight", dist.sdp_frozen, dist.sdp_owners = array<i64: 2, 3>},
                        %wh: tensor<3x4xf32> {otc.param = "head.weight"},
                        %l: tensor<2x3xf32> {otc.input = "labels", otc.role = "label"})
      -> (tensor<4x4xf32> {otc.updates = 1 : i64}, tensor<3x4xf32> {otc.updates = 3 : i64},
          tensor<4x4xf32> {otc.updates = 2 : i64}, tensor<f32> {otc.output = "loss"}) {
    %h = graph.matmul %x, %w1 : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
    %h2 = graph.matmul %h, %w2 : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
    %y = graph.gemm %h2, %wh {transB = true} : (tensor<2x4xf32>, tensor<3x4xf32>) -> tensor<2x3xf32>
    %loss = graph.mse %y, %l : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<f32>
    %dw1 = graph.gemm %x, %h {transA = true} : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<4x4xf32>
    %dwh = graph.gemm %y, %h2 {transA = true} : (tensor<2x3xf32>, tensor<2x4xf32>) -> tensor<3x4xf32>
    %a1 = dist.all_reduce mean %dw1 {ranks = array<i64: 0, 1>} : tensor<4x4xf32>
    %ah0 = dist.all_reduce mean %dwh {range = array<i64: 0, 4>} : tensor<3x4xf32>
    %ah = dist.all_reduce mean %ah0 {range = array<i64: 4, 12>} : tensor<3x4xf32>
    %n1 = graph.sgd_update %w1, %a1 : tensor<4x4xf32>
    %nh = graph.sgd_update %wh, %ah : tensor<3x4xf32>
    %b1 = dist.broadcast %n1 {root = 0 : i64} : tensor<4x4xf32>
    %b2 = dist.broadcast %w2 {root = 2 : i64} : tensor<4x4xf32>
    return %b1, %nh, %b2, %loss : tensor<4x4xf32>, tensor<3x4xf32>, tensor<4x4xf32>, tensor<f32>
  }
}
