// RUN: otc-opt %s --otc-sdp="world-size=2 active=0.5" | FileCheck %s --check-prefix=FWD
// RUN: otc-opt %s --otc-sdp="world-size=2 active=0.5 masking=backward" | FileCheck %s --check-prefix=BWD
// RUN: otc-opt %s --otc-sdp="world-size=2 active=1" | FileCheck %s --check-prefix=ALL

// Two residual MLP blocks on a 4-wide stream, a head.
func.func @forward(%x: tensor<2x4xf32> {otc.input = "x", otc.role = "data"},
                   %w1: tensor<4x4xf32> {otc.param = "b1.fc.weight"},
                   %c1: tensor<4xf32> {otc.param = "b1.fc.bias"},
                   %w2: tensor<4x4xf32> {otc.param = "b2.fc.weight"},
                   %c2: tensor<4xf32> {otc.param = "b2.fc.bias"},
                   %wh: tensor<3x4xf32> {otc.param = "head.weight"}) -> tensor<2x3xf32> {
  %0 = graph.gemm %x, %w1, %c1 {transB = true} : (tensor<2x4xf32>, tensor<4x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  %1 = graph.relu %0 : tensor<2x4xf32>
  %2 = graph.add %x, %1 : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  %3 = graph.gemm %2, %w2, %c2 {transB = true} : (tensor<2x4xf32>, tensor<4x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  %4 = graph.tanh %3 : tensor<2x4xf32>
  %5 = graph.add %4, %2 : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  %6 = graph.gemm %5, %wh {transB = true} : (tensor<2x4xf32>, tensor<3x4xf32>) -> tensor<2x3xf32>
  return %6 : tensor<2x3xf32>
}

// Forward masking: rank 0 owns b1, rank 1 owns b2; the kept branch is
// scaled by 2 (= world / owners), the dropped one is gone with its
// parameters.
// FWD: module attributes {dist.sdp = {active = 5.000000e-01 : f64, assignment = "cyclic", components = [{name = "b1.fc", owners = array<i64: 0>}, {name = "b2.fc", owners = array<i64: 1>}], groups = [], masking = "forward", mode = "block", rank_variant = array<i64: 0, 1>, rescale = true, seed = 0 : i64}, dist.world_size = 2 : i64}
// FWD-LABEL: func.func @forward(
// FWD-LABEL: func.func @forward_rank0(
// FWD-SAME: %{{.*}}: tensor<4x4xf32> {dist.sdp_owners = array<i64: 0>, otc.param = "b1.fc.weight"}
// FWD-SAME: %{{.*}}: tensor<4xf32> {dist.sdp_owners = array<i64: 0>, otc.param = "b1.fc.bias"}
// FWD-SAME: %{{.*}}: tensor<3x4xf32> {otc.param = "head.weight"})
// FWD: %[[G:.*]] = graph.gemm %[[X:arg0]],
// FWD: %[[R:.*]] = graph.relu %[[G]]
// FWD: %[[TWO:.*]] = graph.constant dense<2.000000e+00> : tensor<f32>
// FWD: %[[S:.*]] = graph.mul %[[R]], %[[TWO]]
// FWD: %[[A:.*]] = graph.add %[[X]], %[[S]]
// FWD-NEXT: %[[H:.*]] = graph.gemm %[[A]], %{{.*}} {transB = true} : (tensor<2x4xf32>, tensor<3x4xf32>)
// FWD-NEXT: return %[[H]]
// FWD-LABEL: func.func @forward_rank1(
// FWD-SAME: %[[X1:.*]]: tensor<2x4xf32> {otc.input = "x", otc.role = "data"}, %{{.*}}: tensor<4x4xf32> {dist.sdp_owners = array<i64: 1>, otc.param = "b2.fc.weight"}
// FWD-NEXT: graph.gemm %[[X1]],
// FWD-NEXT: graph.tanh
// FWD-NEXT: graph.constant dense<2.000000e+00>
// FWD-NEXT: graph.mul
// FWD-NEXT: graph.add %{{.*}}, %[[X1]]

// Backward masking: the forward is whole; what a rank does not own is
// frozen.
// BWD-LABEL: func.func @forward_rank0(
// BWD-SAME: {dist.sdp_owners = array<i64: 0>, otc.param = "b1.fc.weight"}
// BWD-SAME: {dist.sdp_frozen, dist.sdp_owners = array<i64: 1>, otc.param = "b2.fc.weight"}
// BWD-NOT: graph.mul
// BWD-LABEL: func.func @forward_rank1(
// BWD-SAME: {dist.sdp_frozen, dist.sdp_owners = array<i64: 0>, otc.param = "b1.fc.weight"}
// BWD-SAME: {dist.sdp_owners = array<i64: 1>, otc.param = "b2.fc.weight"}

// Active fraction 1: one variant, every rank owns everything, no rescaling.
// ALL: rank_variant = array<i64: 0, 0>
// ALL-LABEL: func.func @forward_rank0(
// ALL-SAME: dist.sdp_owners = array<i64: 0, 1>
// ALL-NOT: graph.mul
// ALL-NOT: func.func @forward_rank1

