module attributes {otc.seed = 0 : i64} {
  func.func @forward(%arg0: tensor<2x4xi64> {otc.input = "input.1", otc.role = "data"}, %arg1: tensor<16x8xf32> {otc.param = "tok.weight"}, %arg2: tensor<4x8xf32> {otc.param = "pos.weight"}, %arg3: tensor<8xf32> {otc.param = "blocks.0.ln1.weight"}, %arg4: tensor<8xf32> {otc.param = "blocks.0.ln1.bias"}, %arg5: tensor<8xf32> {otc.param = "blocks.0.ln2.weight"}, %arg6: tensor<8xf32> {otc.param = "blocks.0.ln2.bias"}, %arg7: tensor<24x8xf32> {otc.param = "blocks.0.qkv.weight"}, %arg8: tensor<24xf32> {otc.param = "blocks.0.qkv.bias"}, %arg9: tensor<8x8xf32> {otc.param = "blocks.0.proj.weight"}, %arg10: tensor<8xf32> {otc.param = "blocks.0.proj.bias"}, %arg11: tensor<32x8xf32> {otc.param = "blocks.0.fc.weight"}, %arg12: tensor<32xf32> {otc.param = "blocks.0.fc.bias"}, %arg13: tensor<8x32xf32> {otc.param = "blocks.0.out.weight"}, %arg14: tensor<8xf32> {otc.param = "blocks.0.out.bias"}, %arg15: tensor<8xf32> {otc.param = "blocks.1.ln1.weight"}, %arg16: tensor<8xf32> {otc.param = "blocks.1.ln1.bias"}, %arg17: tensor<8xf32> {otc.param = "blocks.1.ln2.weight"}, %arg18: tensor<8xf32> {otc.param = "blocks.1.ln2.bias"}, %arg19: tensor<24x8xf32> {otc.param = "blocks.1.qkv.weight"}, %arg20: tensor<24xf32> {otc.param = "blocks.1.qkv.bias"}, %arg21: tensor<8x8xf32> {otc.param = "blocks.1.proj.weight"}, %arg22: tensor<8xf32> {otc.param = "blocks.1.proj.bias"}, %arg23: tensor<32x8xf32> {otc.param = "blocks.1.fc.weight"}, %arg24: tensor<32xf32> {otc.param = "blocks.1.fc.bias"}, %arg25: tensor<8x32xf32> {otc.param = "blocks.1.out.weight"}, %arg26: tensor<8xf32> {otc.param = "blocks.1.out.bias"}, %arg27: tensor<8xf32> {otc.param = "ln.weight"}, %arg28: tensor<8xf32> {otc.param = "ln.bias"}, %arg29: tensor<16x8xf32> {otc.param = "head.weight"}, %arg30: tensor<16xf32> {otc.param = "head.bias"}) -> (tensor<2x4x16xf32> {otc.output = "247"}) {
    %0 = graph.gather %arg1, %arg0 {axis = 0 : i64} : (tensor<16x8xf32>, tensor<2x4xi64>) -> tensor<2x4x8xf32>
    %1 = graph.constant dense<[0, 1, 2, 3]> : tensor<4xi64>
    %2 = graph.gather %arg2, %1 {axis = 0 : i64} : (tensor<4x8xf32>, tensor<4xi64>) -> tensor<4x8xf32>
    %3 = graph.add %0, %2 : (tensor<2x4x8xf32>, tensor<4x8xf32>) -> tensor<2x4x8xf32>
    %4 = graph.reduce "mean" %3 {axes = array<i64: 2>, keepdims = true} : tensor<2x4x8xf32> -> tensor<2x4x1xf32>
    %5 = graph.sub %3, %4 : (tensor<2x4x8xf32>, tensor<2x4x1xf32>) -> tensor<2x4x8xf32>
    %6 = graph.constant dense<2.000000e+00> : tensor<f32>
    %7 = graph.pow %5, %6 : (tensor<2x4x8xf32>, tensor<f32>) -> tensor<2x4x8xf32>
    %8 = graph.reduce "mean" %7 {axes = array<i64: 2>, keepdims = true} : tensor<2x4x8xf32> -> tensor<2x4x1xf32>
    %9 = graph.constant dense<9.99999974E-6> : tensor<f32>
    %10 = graph.add %8, %9 : (tensor<2x4x1xf32>, tensor<f32>) -> tensor<2x4x1xf32>
    %11 = graph.sqrt %10 : tensor<2x4x1xf32>
    %12 = graph.div %5, %11 : (tensor<2x4x8xf32>, tensor<2x4x1xf32>) -> tensor<2x4x8xf32>
    %13 = graph.mul %12, %arg3 : (tensor<2x4x8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
    %14 = graph.add %13, %arg4 : (tensor<2x4x8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
    %15 = graph.transpose %arg7 {perm = array<i64: 1, 0>} : tensor<24x8xf32> -> tensor<8x24xf32>
    %16 = graph.matmul %14, %15 : (tensor<2x4x8xf32>, tensor<8x24xf32>) -> tensor<2x4x24xf32>
    %17 = graph.add %arg8, %16 : (tensor<24xf32>, tensor<2x4x24xf32>) -> tensor<2x4x24xf32>
    %18 = graph.slice %17 {starts = array<i64: 0, 0, 0>, steps = array<i64: 1, 1, 1>} : tensor<2x4x24xf32> -> tensor<2x4x8xf32>
    %19 = graph.slice %17 {starts = array<i64: 0, 0, 8>, steps = array<i64: 1, 1, 1>} : tensor<2x4x24xf32> -> tensor<2x4x8xf32>
    %20 = graph.slice %17 {starts = array<i64: 0, 0, 16>, steps = array<i64: 1, 1, 1>} : tensor<2x4x24xf32> -> tensor<2x4x8xf32>
    %21 = graph.reshape %18 : tensor<2x4x8xf32> -> tensor<2x4x2x4xf32>
    %22 = graph.transpose %21 {perm = array<i64: 0, 2, 1, 3>} : tensor<2x4x2x4xf32> -> tensor<2x2x4x4xf32>
    %23 = graph.reshape %19 : tensor<2x4x8xf32> -> tensor<2x4x2x4xf32>
    %24 = graph.reshape %20 : tensor<2x4x8xf32> -> tensor<2x4x2x4xf32>
    %25 = graph.transpose %24 {perm = array<i64: 0, 2, 1, 3>} : tensor<2x4x2x4xf32> -> tensor<2x2x4x4xf32>
    %26 = graph.transpose %23 {perm = array<i64: 0, 2, 3, 1>} : tensor<2x4x2x4xf32> -> tensor<2x2x4x4xf32>
    %27 = graph.matmul %22, %26 : (tensor<2x2x4x4xf32>, tensor<2x2x4x4xf32>) -> tensor<2x2x4x4xf32>
    %28 = graph.constant dense<2.000000e+00> : tensor<f32>
    %29 = graph.div %27, %28 : (tensor<2x2x4x4xf32>, tensor<f32>) -> tensor<2x2x4x4xf32>
    %30 = graph.softmax %29 : tensor<2x2x4x4xf32>
    %31 = graph.matmul %30, %25 : (tensor<2x2x4x4xf32>, tensor<2x2x4x4xf32>) -> tensor<2x2x4x4xf32>
    %32 = graph.transpose %31 {perm = array<i64: 0, 2, 1, 3>} : tensor<2x2x4x4xf32> -> tensor<2x4x2x4xf32>
    %33 = graph.reshape %32 : tensor<2x4x2x4xf32> -> tensor<2x4x8xf32>
    %34 = graph.transpose %arg9 {perm = array<i64: 1, 0>} : tensor<8x8xf32> -> tensor<8x8xf32>
    %35 = graph.matmul %33, %34 : (tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32>
    %36 = graph.add %arg10, %35 : (tensor<8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
    %37 = graph.add %3, %36 : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
    %38 = graph.reduce "mean" %37 {axes = array<i64: 2>, keepdims = true} : tensor<2x4x8xf32> -> tensor<2x4x1xf32>
    %39 = graph.sub %37, %38 : (tensor<2x4x8xf32>, tensor<2x4x1xf32>) -> tensor<2x4x8xf32>
    %40 = graph.constant dense<2.000000e+00> : tensor<f32>
    %41 = graph.pow %39, %40 : (tensor<2x4x8xf32>, tensor<f32>) -> tensor<2x4x8xf32>
    %42 = graph.reduce "mean" %41 {axes = array<i64: 2>, keepdims = true} : tensor<2x4x8xf32> -> tensor<2x4x1xf32>
    %43 = graph.constant dense<9.99999974E-6> : tensor<f32>
    %44 = graph.add %42, %43 : (tensor<2x4x1xf32>, tensor<f32>) -> tensor<2x4x1xf32>
    %45 = graph.sqrt %44 : tensor<2x4x1xf32>
    %46 = graph.div %39, %45 : (tensor<2x4x8xf32>, tensor<2x4x1xf32>) -> tensor<2x4x8xf32>
    %47 = graph.mul %46, %arg5 : (tensor<2x4x8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
    %48 = graph.add %47, %arg6 : (tensor<2x4x8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
    %49 = graph.transpose %arg11 {perm = array<i64: 1, 0>} : tensor<32x8xf32> -> tensor<8x32xf32>
    %50 = graph.matmul %48, %49 : (tensor<2x4x8xf32>, tensor<8x32xf32>) -> tensor<2x4x32xf32>
    %51 = graph.add %arg12, %50 : (tensor<32xf32>, tensor<2x4x32xf32>) -> tensor<2x4x32xf32>
    %52 = graph.constant dense<1.41421354> : tensor<f32>
    %53 = graph.div %51, %52 : (tensor<2x4x32xf32>, tensor<f32>) -> tensor<2x4x32xf32>
    %54 = graph.erf %53 : tensor<2x4x32xf32>
    %55 = graph.constant dense<1.000000e+00> : tensor<f32>
    %56 = graph.add %54, %55 : (tensor<2x4x32xf32>, tensor<f32>) -> tensor<2x4x32xf32>
    %57 = graph.mul %51, %56 : (tensor<2x4x32xf32>, tensor<2x4x32xf32>) -> tensor<2x4x32xf32>
    %58 = graph.constant dense<5.000000e-01> : tensor<f32>
    %59 = graph.mul %57, %58 : (tensor<2x4x32xf32>, tensor<f32>) -> tensor<2x4x32xf32>
    %60 = graph.transpose %arg13 {perm = array<i64: 1, 0>} : tensor<8x32xf32> -> tensor<32x8xf32>
    %61 = graph.matmul %59, %60 : (tensor<2x4x32xf32>, tensor<32x8xf32>) -> tensor<2x4x8xf32>
    %62 = graph.add %arg14, %61 : (tensor<8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
    %63 = graph.add %37, %62 : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
    %64 = graph.reduce "mean" %63 {axes = array<i64: 2>, keepdims = true} : tensor<2x4x8xf32> -> tensor<2x4x1xf32>
    %65 = graph.sub %63, %64 : (tensor<2x4x8xf32>, tensor<2x4x1xf32>) -> tensor<2x4x8xf32>
    %66 = graph.constant dense<2.000000e+00> : tensor<f32>
    %67 = graph.pow %65, %66 : (tensor<2x4x8xf32>, tensor<f32>) -> tensor<2x4x8xf32>
    %68 = graph.reduce "mean" %67 {axes = array<i64: 2>, keepdims = true} : tensor<2x4x8xf32> -> tensor<2x4x1xf32>
    %69 = graph.constant dense<9.99999974E-6> : tensor<f32>
    %70 = graph.add %68, %69 : (tensor<2x4x1xf32>, tensor<f32>) -> tensor<2x4x1xf32>
    %71 = graph.sqrt %70 : tensor<2x4x1xf32>
    %72 = graph.div %65, %71 : (tensor<2x4x8xf32>, tensor<2x4x1xf32>) -> tensor<2x4x8xf32>
    %73 = graph.mul %72, %arg15 : (tensor<2x4x8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
    %74 = graph.add %73, %arg16 : (tensor<2x4x8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
    %75 = graph.transpose %arg19 {perm = array<i64: 1, 0>} : tensor<24x8xf32> -> tensor<8x24xf32>
    %76 = graph.matmul %74, %75 : (tensor<2x4x8xf32>, tensor<8x24xf32>) -> tensor<2x4x24xf32>
    %77 = graph.add %arg20, %76 : (tensor<24xf32>, tensor<2x4x24xf32>) -> tensor<2x4x24xf32>
    %78 = graph.slice %77 {starts = array<i64: 0, 0, 0>, steps = array<i64: 1, 1, 1>} : tensor<2x4x24xf32> -> tensor<2x4x8xf32>
    %79 = graph.slice %77 {starts = array<i64: 0, 0, 8>, steps = array<i64: 1, 1, 1>} : tensor<2x4x24xf32> -> tensor<2x4x8xf32>
    %80 = graph.slice %77 {starts = array<i64: 0, 0, 16>, steps = array<i64: 1, 1, 1>} : tensor<2x4x24xf32> -> tensor<2x4x8xf32>
    %81 = graph.reshape %78 : tensor<2x4x8xf32> -> tensor<2x4x2x4xf32>
    %82 = graph.transpose %81 {perm = array<i64: 0, 2, 1, 3>} : tensor<2x4x2x4xf32> -> tensor<2x2x4x4xf32>
    %83 = graph.reshape %79 : tensor<2x4x8xf32> -> tensor<2x4x2x4xf32>
    %84 = graph.reshape %80 : tensor<2x4x8xf32> -> tensor<2x4x2x4xf32>
    %85 = graph.transpose %84 {perm = array<i64: 0, 2, 1, 3>} : tensor<2x4x2x4xf32> -> tensor<2x2x4x4xf32>
    %86 = graph.transpose %83 {perm = array<i64: 0, 2, 3, 1>} : tensor<2x4x2x4xf32> -> tensor<2x2x4x4xf32>
    %87 = graph.matmul %82, %86 : (tensor<2x2x4x4xf32>, tensor<2x2x4x4xf32>) -> tensor<2x2x4x4xf32>
    %88 = graph.constant dense<2.000000e+00> : tensor<f32>
    %89 = graph.div %87, %88 : (tensor<2x2x4x4xf32>, tensor<f32>) -> tensor<2x2x4x4xf32>
    %90 = graph.softmax %89 : tensor<2x2x4x4xf32>
    %91 = graph.matmul %90, %85 : (tensor<2x2x4x4xf32>, tensor<2x2x4x4xf32>) -> tensor<2x2x4x4xf32>
    %92 = graph.transpose %91 {perm = array<i64: 0, 2, 1, 3>} : tensor<2x2x4x4xf32> -> tensor<2x4x2x4xf32>
    %93 = graph.reshape %92 : tensor<2x4x2x4xf32> -> tensor<2x4x8xf32>
    %94 = graph.transpose %arg21 {perm = array<i64: 1, 0>} : tensor<8x8xf32> -> tensor<8x8xf32>
    %95 = graph.matmul %93, %94 : (tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32>
    %96 = graph.add %arg22, %95 : (tensor<8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
    %97 = graph.add %63, %96 : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
    %98 = graph.reduce "mean" %97 {axes = array<i64: 2>, keepdims = true} : tensor<2x4x8xf32> -> tensor<2x4x1xf32>
    %99 = graph.sub %97, %98 : (tensor<2x4x8xf32>, tensor<2x4x1xf32>) -> tensor<2x4x8xf32>
    %100 = graph.constant dense<2.000000e+00> : tensor<f32>
    %101 = graph.pow %99, %100 : (tensor<2x4x8xf32>, tensor<f32>) -> tensor<2x4x8xf32>
    %102 = graph.reduce "mean" %101 {axes = array<i64: 2>, keepdims = true} : tensor<2x4x8xf32> -> tensor<2x4x1xf32>
    %103 = graph.constant dense<9.99999974E-6> : tensor<f32>
    %104 = graph.add %102, %103 : (tensor<2x4x1xf32>, tensor<f32>) -> tensor<2x4x1xf32>
    %105 = graph.sqrt %104 : tensor<2x4x1xf32>
    %106 = graph.div %99, %105 : (tensor<2x4x8xf32>, tensor<2x4x1xf32>) -> tensor<2x4x8xf32>
    %107 = graph.mul %106, %arg17 : (tensor<2x4x8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
    %108 = graph.add %107, %arg18 : (tensor<2x4x8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
    %109 = graph.transpose %arg23 {perm = array<i64: 1, 0>} : tensor<32x8xf32> -> tensor<8x32xf32>
    %110 = graph.matmul %108, %109 : (tensor<2x4x8xf32>, tensor<8x32xf32>) -> tensor<2x4x32xf32>
    %111 = graph.add %arg24, %110 : (tensor<32xf32>, tensor<2x4x32xf32>) -> tensor<2x4x32xf32>
    %112 = graph.constant dense<1.41421354> : tensor<f32>
    %113 = graph.div %111, %112 : (tensor<2x4x32xf32>, tensor<f32>) -> tensor<2x4x32xf32>
    %114 = graph.erf %113 : tensor<2x4x32xf32>
    %115 = graph.constant dense<1.000000e+00> : tensor<f32>
    %116 = graph.add %114, %115 : (tensor<2x4x32xf32>, tensor<f32>) -> tensor<2x4x32xf32>
    %117 = graph.mul %111, %116 : (tensor<2x4x32xf32>, tensor<2x4x32xf32>) -> tensor<2x4x32xf32>
    %118 = graph.constant dense<5.000000e-01> : tensor<f32>
    %119 = graph.mul %117, %118 : (tensor<2x4x32xf32>, tensor<f32>) -> tensor<2x4x32xf32>
    %120 = graph.transpose %arg25 {perm = array<i64: 1, 0>} : tensor<8x32xf32> -> tensor<32x8xf32>
    %121 = graph.matmul %119, %120 : (tensor<2x4x32xf32>, tensor<32x8xf32>) -> tensor<2x4x8xf32>
    %122 = graph.add %arg26, %121 : (tensor<8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
    %123 = graph.add %97, %122 : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
    %124 = graph.reduce "mean" %123 {axes = array<i64: 2>, keepdims = true} : tensor<2x4x8xf32> -> tensor<2x4x1xf32>
    %125 = graph.sub %123, %124 : (tensor<2x4x8xf32>, tensor<2x4x1xf32>) -> tensor<2x4x8xf32>
    %126 = graph.constant dense<2.000000e+00> : tensor<f32>
    %127 = graph.pow %125, %126 : (tensor<2x4x8xf32>, tensor<f32>) -> tensor<2x4x8xf32>
    %128 = graph.reduce "mean" %127 {axes = array<i64: 2>, keepdims = true} : tensor<2x4x8xf32> -> tensor<2x4x1xf32>
    %129 = graph.constant dense<9.99999974E-6> : tensor<f32>
    %130 = graph.add %128, %129 : (tensor<2x4x1xf32>, tensor<f32>) -> tensor<2x4x1xf32>
    %131 = graph.sqrt %130 : tensor<2x4x1xf32>
    %132 = graph.div %125, %131 : (tensor<2x4x8xf32>, tensor<2x4x1xf32>) -> tensor<2x4x8xf32>
    %133 = graph.mul %132, %arg27 : (tensor<2x4x8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
    %134 = graph.add %133, %arg28 : (tensor<2x4x8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
    %135 = graph.transpose %arg29 {perm = array<i64: 1, 0>} : tensor<16x8xf32> -> tensor<8x16xf32>
    %136 = graph.matmul %134, %135 : (tensor<2x4x8xf32>, tensor<8x16xf32>) -> tensor<2x4x16xf32>
    %137 = graph.add %arg30, %136 : (tensor<16xf32>, tensor<2x4x16xf32>) -> tensor<2x4x16xf32>
    return %137 : tensor<2x4x16xf32>
  }
}
