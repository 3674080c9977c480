module {
  func.func @forward(%x: tensor<1x2x4xf32> {otc.input = "x", otc.role = "data"}, %w: tensor<12x4xf32> {otc.param = "attn.qkv.weight"}, %p: tensor<4x4xf32> {otc.param = "attn.proj.weight"}) -> (tensor<1x2x4xf32> {otc.output = "y"}) {
    %wt = graph.transpose %w {perm = array<i64: 1, 0>} : tensor<12x4xf32> -> tensor<4x12xf32>
    %qkv = graph.matmul %x, %wt : (tensor<1x2x4xf32>, tensor<4x12xf32>) -> tensor<1x2x12xf32>
    %q = graph.slice %qkv {starts = array<i64: 0, 0, 0>, steps = array<i64: 1, 1, 1>} : tensor<1x2x12xf32> -> tensor<1x2x4xf32>
    %k = graph.slice %qkv {starts = array<i64: 0, 0, 4>, steps = array<i64: 1, 1, 1>} : tensor<1x2x12xf32> -> tensor<1x2x4xf32>
    %v = graph.slice %qkv {starts = array<i64: 0, 0, 8>, steps = array<i64: 1, 1, 1>} : tensor<1x2x12xf32> -> tensor<1x2x4xf32>
    %q4 = graph.reshape %q : tensor<1x2x4xf32> -> tensor<1x2x2x2xf32>
    %k4 = graph.reshape %k : tensor<1x2x4xf32> -> tensor<1x2x2x2xf32>
    %v4 = graph.reshape %v : tensor<1x2x4xf32> -> tensor<1x2x2x2xf32>
    %qt = graph.transpose %q4 {perm = array<i64: 0, 2, 1, 3>} : tensor<1x2x2x2xf32> -> tensor<1x2x2x2xf32>
    %kt = graph.transpose %k4 {perm = array<i64: 0, 2, 3, 1>} : tensor<1x2x2x2xf32> -> tensor<1x2x2x2xf32>
    %vt = graph.transpose %v4 {perm = array<i64: 0, 2, 1, 3>} : tensor<1x2x2x2xf32> -> tensor<1x2x2x2xf32>
    %s = graph.matmul %qt, %kt : (tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>) -> tensor<1x2x2x2xf32>
    %a = graph.softmax %s {axis = 1 : i64} : tensor<1x2x2x2xf32>
    %o = graph.matmul %a, %vt : (tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>) -> tensor<1x2x2x2xf32>
    %ot = graph.transpose %o {perm = array<i64: 0, 2, 1, 3>} : tensor<1x2x2x2xf32> -> tensor<1x2x2x2xf32>
    %m = graph.reshape %ot : tensor<1x2x2x2xf32> -> tensor<1x2x4xf32>
    %pt = graph.transpose %p {perm = array<i64: 1, 0>} : tensor<4x4xf32> -> tensor<4x4xf32>
    %y = graph.matmul %m, %pt : (tensor<1x2x4xf32>, tensor<4x4xf32>) -> tensor<1x2x4xf32>
    return %y : tensor<1x2x4xf32>
  }
}
