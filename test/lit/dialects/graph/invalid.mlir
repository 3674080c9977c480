// RUN: otc-opt %s --split-input-file --verify-diagnostics

func.func @gemm_inner(%a: tensor<4x8xf32>, %b: tensor<16x9xf32>) {
  // expected-error @+2 {{Gemm inner dimensions differ: 8 vs 9}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.gemm %a, %b {transB = true} : (tensor<4x8xf32>, tensor<16x9xf32>) -> tensor<4x16xf32>
  return
}

// -----

func.func @broadcast(%a: tensor<4x8xf32>, %b: tensor<3xf32>) {
  // expected-error @+2 {{operand shapes are not broadcastable}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.add %a, %b : (tensor<4x8xf32>, tensor<3xf32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @reshape(%a: tensor<4x8xf32>) {
  // expected-error @+1 {{cannot reshape 32 elements into 'tensor<5x7xf32>' with 35 elements}}
  %0 = graph.reshape %a : tensor<4x8xf32> -> tensor<5x7xf32>
  return
}

// -----

func.func @transpose(%a: tensor<4x8xf32>) {
  // expected-error @+1 {{perm is not a permutation}}
  %0 = graph.transpose %a {perm = array<i64: 0, 0>} : tensor<4x8xf32> -> tensor<4x4xf32>
  return
}

// -----

func.func @softmax_axis(%a: tensor<4x8xf32>) {
  // expected-error @+1 {{axis 2 out of range for rank 2}}
  %0 = graph.softmax %a {axis = 2 : i64} : tensor<4x8xf32>
  return
}

// -----

func.func @ce_labels(%a: tensor<4x8xf32>, %l: tensor<5xi64>) {
  // expected-error @+1 {{expects labels of shape [4]}}
  %0, %1 = graph.softmax_cross_entropy %a, %l : (tensor<4x8xf32>, tensor<5xi64>) -> (tensor<f32>, tensor<4x8xf32>)
  return
}

// -----

func.func @dropout_ratio(%a: tensor<4xf32>) {
  // expected-error @+1 {{ratio must be in [0, 1)}}
  %0, %1 = graph.dropout %a {ratio = 1.0 : f32, stream = 0 : i64} : tensor<4xf32>
  return
}

// -----

func.func @reduce_to(%a: tensor<4x8xf32>) {
  // expected-error @+1 {{result shape does not broadcast to the input shape}}
  %0 = graph.reduce_sum_to %a : tensor<4x8xf32> -> tensor<3xf32>
  return
}

// -----

func.func @conv_shape(%x: tensor<8x3x32x32xf32>, %w: tensor<16x3x3x3xf32>) {
  // expected-error @+1 {{result must have shape [8, 16, 30, 30]}}
  %0 = graph.conv %x, %w {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>,
      pads_begin = array<i64: 0, 0>, pads_end = array<i64: 0, 0>, group = 1 : i64}
      : (tensor<8x3x32x32xf32>, tensor<16x3x3x3xf32>) -> tensor<8x16x32x32xf32>
  return
}

// -----

func.func @conv_group(%x: tensor<8x4x8x8xf32>, %w: tensor<6x4x3x3xf32>) {
  // expected-error @+1 {{do not fit group 2}}
  %0 = graph.conv %x, %w {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>,
      pads_begin = array<i64: 0, 0>, pads_end = array<i64: 0, 0>, group = 2 : i64}
      : (tensor<8x4x8x8xf32>, tensor<6x4x3x3xf32>) -> tensor<8x6x6x6xf32>
  return
}

// -----

func.func @slice_bounds(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{dimension 1 reads outside [0, 8)}}
  %0 = graph.slice %x {starts = array<i64: 0, 6>, steps = array<i64: 1, 1>} : tensor<4x8xf32> -> tensor<4x3xf32>
  return
}

// -----

func.func @reduce_kind(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{unknown reduction 'median'}}
  %0 = graph.reduce "median" %x {axes = array<i64: 1>, keepdims = false} : tensor<4x8xf32> -> tensor<4xf32>
  return
}

// -----

func.func @unary_grad_saved(%dy: tensor<4xf32>, %x: tensor<4xf32>) {
  // expected-error @+1 {{the derivative of 'relu' reads the forward's output (y) only}}
  %0 = graph.unary_grad "relu" %dy x %x : tensor<4xf32>
  return
}

// -----

func.func @unary_grad_tan_reads_y(%dy: tensor<4xf32>, %x: tensor<4xf32>) {
  // expected-error @+1 {{the derivative of 'tan' reads the forward's output (y) only}}
  %0 = graph.unary_grad "tan" %dy x %x : tensor<4xf32>
  return
}

// -----

func.func @unary_grad_gelu_needs_x(%dy: tensor<4xf32>, %y: tensor<4xf32>) {
  // expected-error @+1 {{the derivative of 'gelu' reads the forward's input (x), and its output (y) if given}}
  %0 = graph.unary_grad "gelu" %dy y %y : tensor<4xf32>
  return
}

// -----

func.func @binary_grad_kind(%dy: tensor<4xf32>, %a: tensor<4xf32>) {
  // expected-error @+1 {{unknown kind 'remainder'}}
  %0 = graph.binary_grad "remainder" 0 %dy, %a, %a : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @layer_norm_scale(%x: tensor<8x64xf32>, %s: tensor<32xf32>) {
  // expected-error @+1 {{scale and bias must have shape [64]}}
  %0:3 = graph.layer_norm %x, %s {axis = -1 : i64, epsilon = 1.0e-05 : f32}
      : (tensor<8x64xf32>, tensor<32xf32>) -> (tensor<8x64xf32>, tensor<8x1xf32>, tensor<8x1xf32>)
  return
}

// -----

func.func @unknown_hyperparameter() {
  // expected-error @+1 {{unknown hyperparameter 'learning_rate' (expected one of lr, weight_decay, momentum, beta1, beta2, eps, alpha, lr_decay)}}
  %0 = graph.hyperparameter "learning_rate" : tensor<f32>
  return
}

// -----

func.func @rmsprop_state_count(%w: tensor<3xf32>, %g: tensor<3xf32>, %sq: tensor<3xf32>) {
  // expected-error @+1 {{expects 3 state operands (square_avg, grad_avg, momentum_buffer), got 1}}
  %0:2 = graph.rmsprop_update %w, %g, %sq {centered = true, with_momentum = true} : tensor<3xf32>
  return
}

// -----

func.func @ema_decay(%e: tensor<3xf32>, %w: tensor<3xf32>) {
  // expected-error @+1 {{decay must be in (0, 1), got 1}}
  %0 = graph.ema_update %e, %w {decay = 1.0 : f32} : tensor<3xf32>
  return
}

// -----

// Numbers beyond int64 (found by fuzzing: the checks overflowed).
func.func @dynamic(%x: tensor<?xf32>) {
  // expected-error @+1 {{operand #0 must be statically shaped tensor of any type values, but got 'tensor<?xf32>'}}
  %0 = graph.pad %x {mode = "constant", pads_begin = array<i64: -1>, pads_end = array<i64: 0>} : tensor<?xf32> -> tensor<?xf32>
  return
}

// -----

func.func @pad_beyond_int64(%x: tensor<4xf32>) {
  // expected-error @+1 {{dimension 0 pads by 9223372036854775807 and 9223372036854775807: beyond int64}}
  %0 = graph.pad %x {mode = "constant", pads_begin = array<i64: 9223372036854775807>, pads_end = array<i64: 9223372036854775807>} : tensor<4xf32> -> tensor<8xf32>
  return
}

// -----

func.func @slice_step_beyond_int64(%x: tensor<4xf32>) {
  // expected-error @+1 {{dimension 0 reads outside [0, 4)}}
  %0 = graph.slice %x {starts = array<i64: 1>, steps = array<i64: 9223372036854775807>} : tensor<4xf32> -> tensor<2xf32>
  return
}

// -----

func.func @tile_beyond_int64(%x: tensor<4xf32>) {
  // expected-error @+1 {{result dimension 0 is not the input's times its repeat}}
  %0 = graph.tile %x {repeats = array<i64: 4611686018427387904>} : tensor<4xf32> -> tensor<8xf32>
  return
}

// -----

func.func @concat_beyond_int64(%a: tensor<4611686018427387904xf32>) {
  // expected-error @+1 {{inputs add up to more than int64 along the axis}}
  %0 = graph.concat %a, %a {axis = 0 : i64} : (tensor<4611686018427387904xf32>, tensor<4611686018427387904xf32>) -> tensor<4xf32>
  return
}
