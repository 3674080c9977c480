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
