module attributes {dist.world_size = 4 : i64} {
  func.func @forward(%w: tensor<6x5xf32> {otc.param = "w", dist.sdp_trains = {grid = {axes = [0], cuts = [array<i64: 0, 3, 6>], owners = [array<i64>, array<i64: 0, 1>]}, slices = [{axis = 0 : i64, ranges = array<i64: 3, 6>}], owners = array<i64>}}) -> tensor<6x5xf32> {
    return %w : tensor<6x5xf32>
  }
}
