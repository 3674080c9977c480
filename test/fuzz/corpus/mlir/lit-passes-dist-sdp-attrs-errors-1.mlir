module attributes {dist.world_size = 4 : i64} {
  func.func @forward(%w: tensor<6x5xf32> {otc.param = "w", dist.sdp_owners = array<i64: 0, 4>}) -> tensor<6x5xf32> {
    return %w : tensor<6x5xf32>
  }
}
