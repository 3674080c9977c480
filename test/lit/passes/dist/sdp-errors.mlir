// RUN: not otc-opt %s --otc-sdp="mode=layer" 2>&1 | FileCheck %s --check-prefix=MODE
// RUN: not otc-opt %s --otc-sdp="active=0" 2>&1 | FileCheck %s --check-prefix=ACTIVE
// RUN: not otc-opt %s --otc-sdp="masking=sideways" 2>&1 | FileCheck %s --check-prefix=MASKING
// RUN: not otc-opt %s --otc-sdp="world-size=2" 2>&1 | FileCheck %s --check-prefix=NONE
// RUN: not otc-opt %s --otc-sdp="mode=neuron world-size=4" 2>&1 | FileCheck %s --check-prefix=NARROW
// RUN: not otc-opt %s --otc-sdp="world-size=2" --otc-sdp="world-size=2" 2>&1 | FileCheck %s --check-prefix=TWICE
// RUN: not otc-opt %s --otc-sdp="rescale=maybe" 2>&1 | FileCheck %s --check-prefix=RESCALE

// MODE: unknown SDP mode 'layer' (expected block or neuron)
// ACTIVE: the active fraction must be in (0, 1], got 0
// MASKING: unknown SDP masking 'sideways' (expected forward or backward)
// NONE: error: found no residual branches to drop
// NONE: note: not a residual connection: neither operand is computed from the other
// NARROW: error: neuron group 'fc1' has 3 features, fewer than the world size 4
// TWICE: error: found no residual branches to drop
// RESCALE: unknown SDP rescale 'maybe' (expected auto, on or off)

// No residual branch: the add sums two separate paths.
func.func @forward(%x: tensor<2x4xf32> {otc.input = "x", otc.role = "data"},
                   %w1: tensor<3x4xf32> {otc.param = "fc1.weight"},
                   %w2: tensor<4x3xf32> {otc.param = "fc2.weight"},
                   %w3: tensor<4x4xf32> {otc.param = "skip.weight"}) -> tensor<2x4xf32> {
  %0 = graph.gemm %x, %w1 {transB = true} : (tensor<2x4xf32>, tensor<3x4xf32>) -> tensor<2x3xf32>
  %1 = graph.relu %0 : tensor<2x3xf32>
  %2 = graph.gemm %1, %w2 {transB = true} : (tensor<2x3xf32>, tensor<4x3xf32>) -> tensor<2x4xf32>
  %3 = graph.gemm %x, %w3 {transB = true} : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
  %4 = graph.add %2, %3 : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  return %4 : tensor<2x4xf32>
}
