// RUN: not otc-opt %s --otc-sdp="mode=neuron world-size=2 active=0.5 masking=backward" --otc-build-training="loss=mse optimizer=lamb" 2>&1 | FileCheck %s --check-prefix=LAMB-BWD
// RUN: not otc-opt %s --otc-sdp="mode=neuron world-size=2 active=0.5" --otc-build-training="loss=mse optimizer=lamb" 2>&1 | FileCheck %s --check-prefix=LAMB-FWD
// RUN: not otc-opt %s --otc-sdp="mode=neuron world-size=2 active=0.5" --otc-build-training="loss=mse optimizer=adam ema=0.99" 2>&1 | FileCheck %s --check-prefix=EMA
// RUN: otc-opt %s --otc-sdp="mode=neuron world-size=2 active=0.5 masking=backward" --otc-build-training="loss=mse optimizer=rmsprop centered=true" | FileCheck %s --check-prefix=RMS-BWD

// Neuron groups (as in passes/dist/sdp-neuron.mlir): fc1's 8 hidden units
// into fc2; with 2 ranks each trains half of them.
func.func @forward(%x: tensor<2x5xf32> {otc.input = "x", otc.role = "data"},
                   %w1: tensor<8x5xf32> {otc.param = "fc1.weight"},
                   %c1: tensor<8xf32> {otc.param = "fc1.bias"},
                   %w2: tensor<3x8xf32> {otc.param = "fc2.weight"}) -> tensor<2x3xf32> {
  %0 = graph.gemm %x, %w1, %c1 {transB = true} : (tensor<2x5xf32>, tensor<8x5xf32>, tensor<8xf32>) -> tensor<2x8xf32>
  %1 = graph.relu %0 : tensor<2x8xf32>
  %2 = graph.gemm %1, %w2 {transB = true} : (tensor<2x8xf32>, tensor<3x8xf32>) -> tensor<2x3xf32>
  return %2 : tensor<2x3xf32>
}

// LAMB's trust ratio is one number per whole tensor: a rank that trains
// (backward masking) or holds (forward masking) only part of one is
// refused, naming the parameter.
// LAMB-BWD: error: LAMB with SDP: this rank trains only part of parameter 'fc1.weight', but LAMB's trust ratio is per whole tensor; use block SDP (--sdp block) or another optimizer
// LAMB-FWD: error: LAMB with SDP: this rank holds only part of parameter 'fc1.weight', but LAMB's trust ratio is per whole tensor
// EMA: error: an EMA of the weights is not supported with SDP (each rank holds only its subnetwork's)

// The elementwise optimizers update the part a rank trains as they are:
// state of the part's size, the update marked with the parameter it is a
// part of.
// RMS-BWD-LABEL: func.func @train_step_rank0(
// RMS-BWD-SAME: tensor<4x5xf32> {otc.state = "fc1.weight.square_avg"}
// RMS-BWD-SAME: tensor<4x5xf32> {otc.state = "fc1.weight.grad_avg"}
// RMS-BWD: graph.rmsprop_update %{{.*}} {centered = true, dist.sdp_part_of = 1 : i64} : tensor<4x5xf32>
