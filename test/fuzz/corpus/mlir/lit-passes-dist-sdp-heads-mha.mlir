module {
  func.func @forward(%x: tensor<2x2x4xf32> {otc.input = "x", otc.role = "data"}, %w: tensor<12x4xf32> {otc.param = "attn.in_proj_weight"}, %p: tensor<4x4xf32> {otc.param = "attn.out_proj.weight"}, %pb: tensor<4xf32> {otc.param = "attn.out_proj.bias"}) -> (tensor<4x4xf32> {otc.output = "y"}) {
    %wt = graph.transpose %w {perm = array<i64: 1, 0>} : tensor<12x4xf32> -> tensor<4x12xf32>
    %qkv = graph.matmul %x, %wt : (tensor<2x2x4xf32>, tensor<4x12xf32>) -> tensor<2x2x12xf32>
    %q = graph.slice %qkv {starts = array<i64: 0, 0, 0>, steps = array<i64: 1, 1, 1>} : tensor<2x2x12xf32> -> tensor<2x2x4xf32>
    %k = graph.slice %qkv {starts = array<i64: 0, 0, 4>, steps = array<i64: 1, 1, 1>} : tensor<2x2x12xf32> -> tensor<2x2x4xf32>
    %v = graph.slice %qkv {starts = array<i64: 0, 0, 8>, steps = array<i64: 1, 1, 1>} : tensor<2x2x12xf32> -> tensor<2x2x4xf32>
    %q3 = graph.reshape %q : tensor<2x2x4xf32> -> tensor<2x4x2xf32>
    %qt = graph.transpose %q3 {perm = array<i64: 1, 0, 2>} : tensor<2x4x2xf32> -> tensor<4x2x2xf32>
    %k3 = graph.reshape %k : tensor<2x2x4xf32> -> tensor<2x4x2xf32>
    %v3 = graph.reshape %v : tensor<2x2x4xf32> -> tensor<2x4x2xf32>
    %vt = graph.transpose %v3 {perm = array<i64: 1, 0, 2>} : tensor<2x4x2xf32> -> tensor<4x2x2xf32>
    %c = graph.constant dense<1.41421354> : tensor<f32>
    %qs = graph.div %qt, %c : (tensor<4x2x2xf32>, tensor<f32>) -> tensor<4x2x2xf32>
    %kt = graph.transpose %k3 {perm = array<i64: 1, 2, 0>} : tensor<2x4x2xf32> -> tensor<4x2x2xf32>
    %s = graph.matmul %qs, %kt : (tensor<4x2x2xf32>, tensor<4x2x2xf32>) -> tensor<4x2x2xf32>
    %a = graph.softmax %s : tensor<4x2x2xf32>
    %o = graph.matmul %a, %vt : (tensor<4x2x2xf32>, tensor<4x2x2xf32>) -> tensor<4x2x2xf32>
    %ot = graph.transpose %o {perm = array<i64: 1, 0, 2>} : tensor<4x2x2xf32> -> tensor<2x4x2xf32>
    %m = graph.reshape %ot : tensor<2x4x2xf32> -> tensor<4x4xf32>
    %y = graph.gemm %m, %p, %pb {transB = true} : (tensor<4x4xf32>, tensor<4x4xf32>, tensor<4xf32>) -> tensor<4x4xf32>
    return %y : tensor<4x4xf32>
  }
}
