// RUN: otc-opt %s --split-input-file --verify-diagnostics

func.func @kind(%g: tensor<4xf32>) {
  // expected-error @+1 {{expected string or keyword containing one of the following enum values for attribute 'kind' [sum, mean]}}
  %0 = dist.all_reduce %g : tensor<4xf32>
  return
}

// -----

func.func @method(%g: tensor<4xf32>) {
  // expected-error @+1 {{unknown method 'lowrank' (expected none, fp16, bf16, int8, topk, topk-int8, randomk or powersgd)}}
  %0 = dist.compressed_all_reduce %g {method = "lowrank"} : tensor<4xf32> -> tensor<4xf32>
  return
}

// -----

func.func @ratio(%g: tensor<4xf32>) {
  // expected-error @+1 {{ratio must be in (0, 1] for 'topk-int8', got 0}}
  %0 = dist.compressed_all_reduce %g {method = "topk-int8", ratio = 0.0 : f32} : tensor<4xf32> -> tensor<4xf32>
  return
}

// -----

func.func @block(%g: tensor<4xf32>) {
  // expected-error @+1 {{block_size must be in [1, 65536], got 0}}
  %0 = dist.compressed_all_reduce %g {method = "int8", block_size = 0 : i64} : tensor<4xf32> -> tensor<4xf32>
  return
}

// -----

func.func @feedback(%g: tensor<4xf32>) {
  // expected-error @+1 {{error feedback needs a lossy method; 'none' sends the gradient exactly}}
  %0, %1 = dist.compressed_all_reduce %g, %g {method = "none"} : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>, tensor<4xf32>
  return
}

// -----

func.func @adaptive(%g: tensor<4xf32>) {
  // expected-error @+1 {{adaptive ratio applies to topk, topk-int8 and randomk, not 'fp16'}}
  %0 = dist.compressed_all_reduce %g {method = "fp16", adaptive = true} : tensor<4xf32> -> tensor<4xf32>
  return
}

// -----

func.func @rank(%g: tensor<2x2xf32>) {
  // expected-error @+1 {{expects a flat gradient bucket (rank 1), got 'tensor<2x2xf32>'}}
  %0 = dist.compressed_all_reduce %g {method = "topk"} : tensor<2x2xf32> -> tensor<2x2xf32>
  return
}

// -----

func.func @residual_type(%g: tensor<4xf32>, %r: tensor<3xf32>) {
  // expected-error @+1 {{residual must have the bucket's type}}
  %0, %1 = dist.compressed_all_reduce %g, %r {method = "topk"} : tensor<4xf32>, tensor<3xf32> -> tensor<4xf32>, tensor<3xf32>
  return
}

// -----

func.func @ratio_min(%g: tensor<4xf32>) {
  // expected-error @+1 {{ratio_min must be in (0, ratio], got 5.000000e-01}}
  %0 = dist.compressed_all_reduce %g {method = "topk", adaptive = true, ratio_min = 0.5 : f32} : tensor<4xf32> -> tensor<4xf32>
  return
}

// -----

func.func @bucket_size(%a: tensor<2x3xf32>) {
  // expected-error @+1 {{result must be a 1-D tensor of 6 elements, got 'tensor<7xf32>'}}
  %0 = dist.bucket %a : tensor<2x3xf32> -> tensor<7xf32>
  return
}

// -----

func.func @unbucket_size(%b: tensor<7xf32>) {
  // expected-error @+1 {{bucket of 7 elements does not split into 6}}
  %0 = dist.unbucket %b : tensor<7xf32> -> tensor<2x3xf32>
  return
}

// -----

func.func @range(%g: tensor<2x4xf32>) {
  // expected-error @+1 {{range must be [begin, end) with 0 <= begin < end <= 8}}
  %0 = dist.all_reduce mean %g {range = array<i64: 4, 9>} : tensor<2x4xf32>
  return
}

// -----

func.func @velocity_result(%g: tensor<4xf32>, %u: tensor<4xf32>) {
  // expected-error @+1 {{takes a velocity exactly when it returns one}}
  %0 = dist.compressed_all_reduce %g velocity %u {method = "topk"} : tensor<4xf32> velocity tensor<4xf32> -> tensor<4xf32>
  return
}

// -----

func.func @velocity_decay(%g: tensor<4xf32>, %u: tensor<4xf32>) {
  // expected-error @+1 {{velocity_decay must be 'momentum' or 'beta1', got 'beta2'}}
  %0, %1 = dist.compressed_all_reduce %g velocity %u {method = "topk", velocity_decay = "beta2"} : tensor<4xf32> velocity tensor<4xf32> -> tensor<4xf32> velocity tensor<4xf32>
  return
}

// -----

func.func @unknown_exchange(%g: tensor<4xf32>) {
  // expected-error @+1 {{exchange must be all-gather, reduce-scatter or all-reduce, got 'ring'}}
  %0 = dist.compressed_all_reduce %g {method = "topk", exchange = "ring"} : tensor<4xf32> -> tensor<4xf32>
  return
}

// -----

func.func @all_reduce_of_a_payload(%g: tensor<4xf32>) {
  // expected-error @+1 {{exchange 'all-reduce' sends fp32 and takes method 'none' or 'powersgd', not 'fp16'}}
  %0 = dist.compressed_all_reduce %g {method = "fp16", exchange = "all-reduce"} : tensor<4xf32> -> tensor<4xf32>
  return
}

// -----

func.func @powersgd_gathers(%g: tensor<64xf32>, %q: tensor<16xf32>) {
  // expected-error @+1 {{method 'powersgd' all-reduces its factors: its exchange is 'all-reduce', not 'all-gather'}}
  %0, %1 = dist.compressed_all_reduce %g state %q {method = "powersgd", powersgd_rank = 2 : i64, matrices = array<i64: 0, 8, 8>} : tensor<64xf32> state tensor<16xf32> -> tensor<64xf32> state tensor<16xf32>
  return
}

// -----

func.func @powersgd_state_size(%g: tensor<64xf32>, %q: tensor<8xf32>) {
  // expected-error @+1 {{the matrices' Q take 16 floats, but the state holds 8}}
  %0, %1 = dist.compressed_all_reduce %g state %q {method = "powersgd", exchange = "all-reduce", powersgd_rank = 2 : i64, matrices = array<i64: 0, 8, 8>} : tensor<64xf32> state tensor<8xf32> -> tensor<64xf32> state tensor<8xf32>
  return
}

// -----

func.func @powersgd_matrix_outside(%g: tensor<64xf32>, %q: tensor<16xf32>) {
  // expected-error @+1 {{matrix 0 at 8 (8 x 8) is not after the previous one within the bucket of 64 elements}}
  %0, %1 = dist.compressed_all_reduce %g state %q {method = "powersgd", exchange = "all-reduce", powersgd_rank = 2 : i64, matrices = array<i64: 8, 8, 8>} : tensor<64xf32> state tensor<16xf32> -> tensor<64xf32> state tensor<16xf32>
  return
}

// -----

func.func @state_without_powersgd(%g: tensor<64xf32>, %q: tensor<16xf32>) {
  // expected-error @+1 {{takes matrices, a powersgd_rank and a state with method 'powersgd' only}}
  %0, %1 = dist.compressed_all_reduce %g state %q {method = "topk"} : tensor<64xf32> state tensor<16xf32> -> tensor<64xf32> state tensor<16xf32>
  return
}

// -----

func.func @bucket_beyond_int64(%a: tensor<4611686018427387904xf32>) {
  // expected-error @+1 {{the gradients hold more than 2^63 - 1 elements}}
  %0 = dist.bucket %a, %a : tensor<4611686018427387904xf32>, tensor<4611686018427387904xf32> -> tensor<4xf32>
  return
}

// -----

func.func @velocity_type(%g: tensor<4xf32>, %u: tensor<3xf32>) {
  // expected-error @+1 {{velocity must have the bucket's type}}
  %0, %1 = dist.compressed_all_reduce %g velocity %u {method = "topk"} : tensor<4xf32> velocity tensor<3xf32> -> tensor<4xf32> velocity tensor<3xf32>
  return
}

// -----

func.func @unbucket_beyond_int64(%b: tensor<4xf32>) {
  // expected-error @+1 {{the results hold more than 2^63 - 1 elements}}
  %0:2 = dist.unbucket %b : tensor<4xf32> -> tensor<4611686018427387904xf32>, tensor<4611686018427387904xf32>
  return
}
