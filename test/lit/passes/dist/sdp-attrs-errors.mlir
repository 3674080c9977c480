// RUN: otc-opt %s -split-input-file -verify-diagnostics
// RUN: otc-opt %s -split-input-file -verify-diagnostics --otc-insert-allreduce="world-size=4"
// RUN: otc-opt %s -split-input-file -verify-diagnostics --otc-build-training="loss=mse"

// SDP's argument attributes are verified by the dist dialect wherever they
// appear (here as the input is read), so every pass may read them as
// otc-sdp writes them.

module attributes {dist.world_size = 4 : i64} {
  // expected-error @+1 {{unknown dist argument attribute 'dist.sdp_owner'}}
  func.func @forward(%w: tensor<6x5xf32> {otc.param = "w", dist.sdp_owner = array<i64: 0>}) -> tensor<6x5xf32> {
    return %w : tensor<6x5xf32>
  }
}

// -----

module attributes {dist.world_size = 4 : i64} {
  // expected-error @+1 {{argument 0 ('w'): dist.sdp_owners: owner rank 4 is outside the world of 4}}
  func.func @forward(%w: tensor<6x5xf32> {otc.param = "w", dist.sdp_owners = array<i64: 0, 4>}) -> tensor<6x5xf32> {
    return %w : tensor<6x5xf32>
  }
}

// -----

module attributes {dist.world_size = 4 : i64} {
  // expected-error @+1 {{argument 0 ('w'): dist.sdp_owners: owner ranks must increase}}
  func.func @forward(%w: tensor<6x5xf32> {otc.param = "w", dist.sdp_owners = array<i64: 2, 1>}) -> tensor<6x5xf32> {
    return %w : tensor<6x5xf32>
  }
}

// -----

module attributes {dist.world_size = 4 : i64} {
  // expected-error @+1 {{argument 0 ('w'): dist.sdp_slices: ranges of axis 0 do not fit its size 6}}
  func.func @forward(%w: tensor<6x5xf32> {otc.param = "w", dist.sdp_owners = array<i64: 0, 1>, dist.sdp_slices = [{axis = 0 : i64, ranges = array<i64: 0, 4>}]}) -> tensor<6x5xf32> {
    return %w : tensor<6x5xf32>
  }
}

// -----

module attributes {dist.world_size = 4 : i64} {
  // expected-error @+1 {{argument 0 ('w'): dist.sdp_slices: axis 2 is outside the rank 2}}
  func.func @forward(%w: tensor<6x5xf32> {otc.param = "w", dist.sdp_owners = array<i64: 0, 1>, dist.sdp_slices = [{axis = 2 : i64, ranges = array<i64: 0, 6>}]}) -> tensor<6x5xf32> {
    return %w : tensor<6x5xf32>
  }
}

// -----

module attributes {dist.world_size = 4 : i64} {
  // expected-error @+1 {{argument 0 ('w'): dist.sdp_tiles: has 2 owner sets for 3 tiles}}
  func.func @forward(%w: tensor<6x5xf32> {otc.param = "w", dist.sdp_tiles = {axes = [0], cuts = [array<i64: 0, 2, 4, 6>], owners = [array<i64: 0, 1>, array<i64: 0, 2>]}}) -> tensor<6x5xf32> {
    return %w : tensor<6x5xf32>
  }
}

// -----

module attributes {dist.world_size = 4 : i64} {
  // expected-error @+1 {{argument 0 ('w'): dist.sdp_tiles: the cuts of axis 1 must run from 0 to its size 5}}
  func.func @forward(%w: tensor<6x5xf32> {otc.param = "w", dist.sdp_tiles = {axes = [1], cuts = [array<i64: 0, 2, 6>], owners = [array<i64: 0, 1>, array<i64: 0, 2>]}}) -> tensor<6x5xf32> {
    return %w : tensor<6x5xf32>
  }
}

// -----

module attributes {dist.world_size = 4 : i64} {
  // expected-error @+1 {{argument 0 ('w'): dist.sdp_tiles: must be {axes, cuts, owners}}}
  func.func @forward(%w: tensor<6x5xf32> {otc.param = "w", dist.sdp_tiles = {axes = [0], owners = [array<i64: 0, 1>]}}) -> tensor<6x5xf32> {
    return %w : tensor<6x5xf32>
  }
}

// -----

module attributes {dist.world_size = 4 : i64} {
  // expected-error @+1 {{argument 0 ('w'): dist.sdp_trains: must be {grid, slices, owners or tiles}}}
  func.func @forward(%w: tensor<6x5xf32> {otc.param = "w", dist.sdp_trains = {owners = array<i64: 0, 1>}}) -> tensor<6x5xf32> {
    return %w : tensor<6x5xf32>
  }
}

// -----

module attributes {dist.world_size = 4 : i64} {
  // The grid may leave a tile to nobody; the part's owners may not be empty.
  // expected-error @+1 {{argument 0 ('w'): dist.sdp_trains: an owner set is empty}}
  func.func @forward(%w: tensor<6x5xf32> {otc.param = "w", dist.sdp_trains = {grid = {axes = [0], cuts = [array<i64: 0, 3, 6>], owners = [array<i64>, array<i64: 0, 1>]}, slices = [{axis = 0 : i64, ranges = array<i64: 3, 6>}], owners = array<i64>}}) -> tensor<6x5xf32> {
    return %w : tensor<6x5xf32>
  }
}
