// RUN: otc-opt %s --otc-sdp-find-components=mode=neuron 2>&1 | FileCheck %s --check-prefix=FIND
// RUN: otc-opt %s --otc-sdp="mode=neuron world-size=2 active=0.5" | FileCheck %s

// Heads from separate q, k and v projections (LLaMA-style, each with a
// bias): the attention matmuls join the three into one group of 2 heads,
// named after their module. v comes first here: tried alone it is rejected,
// but once the group from q claims it, that rejection is gone.
// FIND-NOT: as attention heads
// FIND: remark: N-SDP attention-head group 'attn': 2 heads, 1 consumer(s), 7 sliced parameters
// FIND-NOT: as attention heads
// FIND: remark: not an SDP component: the features are a model output
// FIND-NOT: N-SDP

// Rank 1 keeps head 1: rows 2..4 of q, k and v (and their biases), columns
// 2..4 of the output projection.
// CHECK-LABEL: func.func @forward_rank1(
// CHECK-SAME: tensor<2x4xf32> {dist.sdp_owners = array<i64: 1>, dist.sdp_slices = [{axis = 0 : i64, ranges = array<i64: 2, 4>}], otc.param = "attn.q.weight"}
// CHECK-SAME: tensor<2xf32> {{{[^}]*}}ranges = array<i64: 2, 4>}]{{.*}}otc.param = "attn.q.bias"
// CHECK-SAME: tensor<2x4xf32> {{{[^}]*}}ranges = array<i64: 2, 4>}]{{.*}}otc.param = "attn.k.weight"
// CHECK-SAME: tensor<2x4xf32> {{{[^}]*}}ranges = array<i64: 2, 4>}]{{.*}}otc.param = "attn.v.weight"
// CHECK-SAME: tensor<4x2xf32> {dist.sdp_owners = array<i64: 1>, dist.sdp_slices = [{axis = 1 : i64, ranges = array<i64: 2, 4>}], otc.param = "attn.proj.weight"}
// CHECK: graph.matmul {{.*}} -> tensor<1x1x2x2xf32>
// CHECK: graph.softmax {{.*}} : tensor<1x1x2x2xf32>
// CHECK: graph.reshape {{.*}} : tensor<1x2x1x2xf32> -> tensor<1x2x2xf32>
// CHECK: graph.mul

module {
  func.func @forward(%x: tensor<1x2x4xf32> {otc.input = "x", otc.role = "data"},
                     %wq: tensor<4x4xf32> {otc.param = "attn.q.weight"}, %bq: tensor<4xf32> {otc.param = "attn.q.bias"},
                     %wk: tensor<4x4xf32> {otc.param = "attn.k.weight"}, %bk: tensor<4xf32> {otc.param = "attn.k.bias"},
                     %wv: tensor<4x4xf32> {otc.param = "attn.v.weight"}, %bv: tensor<4xf32> {otc.param = "attn.v.bias"},
                     %p: tensor<4x4xf32> {otc.param = "attn.proj.weight"}) -> (tensor<1x2x4xf32> {otc.output = "y"}) {
    %wvt = graph.transpose %wv {perm = array<i64: 1, 0>} : tensor<4x4xf32> -> tensor<4x4xf32>
    %v0 = graph.matmul %x, %wvt : (tensor<1x2x4xf32>, tensor<4x4xf32>) -> tensor<1x2x4xf32>
    %v = graph.add %bv, %v0 : (tensor<4xf32>, tensor<1x2x4xf32>) -> tensor<1x2x4xf32>
    %wqt = graph.transpose %wq {perm = array<i64: 1, 0>} : tensor<4x4xf32> -> tensor<4x4xf32>
    %q0 = graph.matmul %x, %wqt : (tensor<1x2x4xf32>, tensor<4x4xf32>) -> tensor<1x2x4xf32>
    %q = graph.add %bq, %q0 : (tensor<4xf32>, tensor<1x2x4xf32>) -> tensor<1x2x4xf32>
    %wkt = graph.transpose %wk {perm = array<i64: 1, 0>} : tensor<4x4xf32> -> tensor<4x4xf32>
    %k0 = graph.matmul %x, %wkt : (tensor<1x2x4xf32>, tensor<4x4xf32>) -> tensor<1x2x4xf32>
    %k = graph.add %bk, %k0 : (tensor<4xf32>, tensor<1x2x4xf32>) -> tensor<1x2x4xf32>
    %q4 = graph.reshape %q : tensor<1x2x4xf32> -> tensor<1x2x2x2xf32>
    %qt = graph.transpose %q4 {perm = array<i64: 0, 2, 1, 3>} : tensor<1x2x2x2xf32> -> tensor<1x2x2x2xf32>
    %k4 = graph.reshape %k : tensor<1x2x4xf32> -> tensor<1x2x2x2xf32>
    %v4 = graph.reshape %v : tensor<1x2x4xf32> -> tensor<1x2x2x2xf32>
    %vt = graph.transpose %v4 {perm = array<i64: 0, 2, 1, 3>} : tensor<1x2x2x2xf32> -> tensor<1x2x2x2xf32>
    %kt = graph.transpose %k4 {perm = array<i64: 0, 2, 3, 1>} : tensor<1x2x2x2xf32> -> tensor<1x2x2x2xf32>
    %s = graph.matmul %qt, %kt : (tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>) -> tensor<1x2x2x2xf32>
    %a = graph.softmax %s {axis = 3 : i64} : tensor<1x2x2x2xf32>
    %o = graph.matmul %a, %vt : (tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>) -> tensor<1x2x2x2xf32>
    %ot = graph.transpose %o {perm = array<i64: 0, 2, 1, 3>} : tensor<1x2x2x2xf32> -> tensor<1x2x2x2xf32>
    %m = graph.reshape %ot : tensor<1x2x2x2xf32> -> tensor<1x2x4xf32>
    %pt = graph.transpose %p {perm = array<i64: 1, 0>} : tensor<4x4xf32> -> tensor<4x4xf32>
    %y = graph.matmul %m, %pt : (tensor<1x2x4xf32>, tensor<4x4xf32>) -> tensor<1x2x4xf32>
    return %y : tensor<1x2x4xf32>
  }
}
