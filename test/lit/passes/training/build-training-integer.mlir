// RUN: otc-opt %s --split-input-file --otc-build-training="loss=mse" --verify-diagnostics

// A parameter that reaches the loss only through integers would get no
// gradient: refused, at the cast back to float.
func.func @forward(%x: tensor<4x8xf32> {otc.input = "input", otc.role = "data"},
                   %w: tensor<8xf32> {otc.param = "w"}) -> (tensor<4x8xf32> {otc.output = "y"}) {
  %i = graph.cast %w : tensor<8xf32> -> tensor<8xui8>
  %s = graph.shift_left %i, %i : (tensor<8xui8>, tensor<8xui8>) -> tensor<8xui8>
  // expected-error @+1 {{the loss depends on parameters through integer values (a cast from 'ui8' to 'f32'), which have no gradient}}
  %f = graph.cast %s : tensor<8xui8> -> tensor<8xf32>
  %y = graph.mul %x, %f : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

// Integer inputs computed on beside the parameters are fine: no gradient
// flows into them.
func.func @forward(%x: tensor<4x8xf32> {otc.input = "input", otc.role = "data"},
                   %k: tensor<4x8xi16> {otc.input = "k", otc.role = "data"},
                   %w: tensor<8xf32> {otc.param = "w"}) -> (tensor<4x8xf32> {otc.output = "y"}) {
  %m = graph.max %k, %k : (tensor<4x8xi16>, tensor<4x8xi16>) -> tensor<4x8xi16>
  %f = graph.cast %m : tensor<4x8xi16> -> tensor<4x8xf32>
  %xw = graph.mul %x, %w : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %y = graph.add %xw, %f : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}
