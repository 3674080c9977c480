module attributes {otc.model_path = "attention.onnx"} {
  func.func @forward(%arg0: tensor<2x3x8xf32> {otc.input = "x", otc.role = "data"}, %arg1: tensor<24xf32> {otc.param = "attn.in_proj_bias"}, %arg2: tensor<8x8xf32> {otc.param = "attn.out_proj.weight"}, %arg3: tensor<8xf32> {otc.param = "attn.out_proj.bias"}, %arg4: tensor<8xf32> {otc.param = "norm.weight"}, %arg5: tensor<8x24xf32> {otc.param = "onnx::MatMul_106"}) -> (tensor<2x3x8xf32> {otc.output = "y"}) {
    %0 = graph.transpose %arg0 {perm = array<i64: 1, 0, 2>} : tensor<2x3x8xf32> -> tensor<3x2x8xf32>
    %1 = graph.matmul %0, %arg5 : (tensor<3x2x8xf32>, tensor<8x24xf32>) -> tensor<3x2x24xf32>
    %2 = graph.add %arg1, %1 : (tensor<24xf32>, tensor<3x2x24xf32>) -> tensor<3x2x24xf32>
    %3 = graph.slice %2 {starts = array<i64: 0, 0, 0>, steps = array<i64: 1, 1, 1>} : tensor<3x2x24xf32> -> tensor<3x2x8xf32>
    %4 = graph.slice %2 {starts = array<i64: 0, 0, 8>, steps = array<i64: 1, 1, 1>} : tensor<3x2x24xf32> -> tensor<3x2x8xf32>
    %5 = graph.slice %2 {starts = array<i64: 0, 0, 16>, steps = array<i64: 1, 1, 1>} : tensor<3x2x24xf32> -> tensor<3x2x8xf32>
    %6 = graph.reshape %3 : tensor<3x2x8xf32> -> tensor<3x4x4xf32>
    %7 = graph.transpose %6 {perm = array<i64: 1, 0, 2>} : tensor<3x4x4xf32> -> tensor<4x3x4xf32>
    %8 = graph.reshape %4 : tensor<3x2x8xf32> -> tensor<3x4x4xf32>
    %9 = graph.reshape %5 : tensor<3x2x8xf32> -> tensor<3x4x4xf32>
    %10 = graph.transpose %9 {perm = array<i64: 1, 0, 2>} : tensor<3x4x4xf32> -> tensor<4x3x4xf32>
    %11 = graph.constant dense<2.000000e+00> : tensor<f32>
    %12 = graph.div %7, %11 : (tensor<4x3x4xf32>, tensor<f32>) -> tensor<4x3x4xf32>
    %13 = graph.transpose %8 {perm = array<i64: 1, 2, 0>} : tensor<3x4x4xf32> -> tensor<4x4x3xf32>
    %14 = graph.matmul %12, %13 : (tensor<4x3x4xf32>, tensor<4x4x3xf32>) -> tensor<4x3x3xf32>
    %15 = graph.constant dense<1.000000e+00> : tensor<f32>
    %16 = graph.mul %14, %15 : (tensor<4x3x3xf32>, tensor<f32>) -> tensor<4x3x3xf32>
    %17 = graph.constant dense<[[[0.000000e+00, 0xFF800000, 0xFF800000], [0.000000e+00, 0.000000e+00, 0xFF800000], [0.000000e+00, 0.000000e+00, 0.000000e+00]]]> : tensor<1x3x3xf32>
    %18 = graph.add %16, %17 : (tensor<4x3x3xf32>, tensor<1x3x3xf32>) -> tensor<4x3x3xf32>
    %19 = graph.softmax %18 : tensor<4x3x3xf32>
    %20 = graph.matmul %19, %10 : (tensor<4x3x3xf32>, tensor<4x3x4xf32>) -> tensor<4x3x4xf32>
    %21 = graph.transpose %20 {perm = array<i64: 1, 0, 2>} : tensor<4x3x4xf32> -> tensor<3x4x4xf32>
    %22 = graph.reshape %21 : tensor<3x4x4xf32> -> tensor<6x8xf32>
    %23 = graph.gemm %22, %arg2, %arg3 {transB = true} : (tensor<6x8xf32>, tensor<8x8xf32>, tensor<8xf32>) -> tensor<6x8xf32>
    %24 = graph.reshape %23 : tensor<6x8xf32> -> tensor<3x2x8xf32>
    %25 = graph.transpose %24 {perm = array<i64: 1, 0, 2>} : tensor<3x2x8xf32> -> tensor<2x3x8xf32>
    %26 = graph.add %arg0, %25 : (tensor<2x3x8xf32>, tensor<2x3x8xf32>) -> tensor<2x3x8xf32>
    %27 = graph.reduce "mean" %26 {axes = array<i64: 2>, keepdims = true} : tensor<2x3x8xf32> -> tensor<2x3x1xf32>
    %28 = graph.sub %26, %27 : (tensor<2x3x8xf32>, tensor<2x3x1xf32>) -> tensor<2x3x8xf32>
    %29 = graph.constant dense<2.000000e+00> : tensor<f32>
    %30 = graph.pow %28, %29 : (tensor<2x3x8xf32>, tensor<f32>) -> tensor<2x3x8xf32>
    %31 = graph.reduce "mean" %30 {axes = array<i64: 2>, keepdims = true} : tensor<2x3x8xf32> -> tensor<2x3x1xf32>
    %32 = graph.constant dense<9.99999974E-6> : tensor<f32>
    %33 = graph.add %31, %32 : (tensor<2x3x1xf32>, tensor<f32>) -> tensor<2x3x1xf32>
    %34 = graph.sqrt %33 : tensor<2x3x1xf32>
    %35 = graph.div %28, %34 : (tensor<2x3x8xf32>, tensor<2x3x1xf32>) -> tensor<2x3x8xf32>
    %36 = graph.mul %35, %arg4 : (tensor<2x3x8xf32>, tensor<8xf32>) -> tensor<2x3x8xf32>
    %37 = graph.add %36, %arg3 : (tensor<2x3x8xf32>, tensor<8xf32>) -> tensor<2x3x8xf32>
    %38 = graph.softmax %37 : tensor<2x3x8xf32>
    return %38 : tensor<2x3x8xf32>
  }
}
