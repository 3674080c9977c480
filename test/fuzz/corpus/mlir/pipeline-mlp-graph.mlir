module attributes {otc.model_path = "mlp.onnx"} {
  func.func @forward(%arg0: tensor<2x6xf32> {otc.input = "x", otc.role = "data"}, %arg1: tensor<8x6xf32> {otc.param = "fc1.weight"}, %arg2: tensor<8xf32> {otc.param = "fc1.bias"}, %arg3: tensor<3x8xf32> {otc.param = "fc2.weight"}, %arg4: tensor<3xf32> {otc.param = "fc2.bias"}) -> (tensor<2x3xf32> {otc.output = "y"}) {
    %0 = graph.gemm %arg0, %arg1, %arg2 {transB = true} : (tensor<2x6xf32>, tensor<8x6xf32>, tensor<8xf32>) -> tensor<2x8xf32>
    %1 = graph.relu %0 : tensor<2x8xf32>
    %2 = graph.gemm %1, %arg3, %arg4 {transB = true} : (tensor<2x8xf32>, tensor<3x8xf32>, tensor<3xf32>) -> tensor<2x3xf32>
    return %2 : tensor<2x3xf32>
  }
}
