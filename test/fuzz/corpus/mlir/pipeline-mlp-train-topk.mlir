module attributes {dist.world_size = 2 : i64, otc.model_path = "mlp.onnx", otc.seed = 0 : i64, otc.training = {accumulate = 1 : i64, alpha = 0.98999999999999999 : f64, beta1 = 9.000000e-01 : f64, beta2 = 0.99899999999999999 : f64, centered = false, ema = 0.000000e+00 : f64, eps = 1.000000e-08 : f64, label = "labels", loss = "cross-entropy", lr = 1.000000e-02 : f64, lr_decay = 0.000000e+00 : f64, momentum = 9.000000e-01 : f64, momentum_buffer = true, nesterov = false, optimizer = "momentum", weight_decay = 0.000000e+00 : f64}} {
  func.func @train_step(%arg0: tensor<2x6xf32> {otc.input = "x", otc.role = "data"}, %arg1: tensor<8x6xf32> {otc.param = "fc1.weight"}, %arg2: tensor<8xf32> {otc.param = "fc1.bias"}, %arg3: tensor<3x8xf32> {otc.param = "fc2.weight"}, %arg4: tensor<3xf32> {otc.param = "fc2.bias"}, %arg5: tensor<2xi64> {otc.input = "labels", otc.role = "label"}, %arg6: tensor<8x6xf32> {otc.state = "fc1.weight.momentum_buffer"}, %arg7: tensor<8xf32> {otc.state = "fc1.bias.momentum_buffer"}, %arg8: tensor<3x8xf32> {otc.state = "fc2.weight.momentum_buffer"}, %arg9: tensor<3xf32> {otc.state = "fc2.bias.momentum_buffer"}, %arg10: tensor<83xf32> {otc.role = "residual", otc.state = "bucket0.residual"}) -> (tensor<8x6xf32> {otc.updates = 1 : i64}, tensor<8x6xf32> {otc.updates = 6 : i64}, tensor<8xf32> {otc.updates = 2 : i64}, tensor<8xf32> {otc.updates = 7 : i64}, tensor<3x8xf32> {otc.updates = 3 : i64}, tensor<3x8xf32> {otc.updates = 8 : i64}, tensor<3xf32> {otc.updates = 4 : i64}, tensor<3xf32> {otc.updates = 9 : i64}, tensor<f32> {otc.output = "loss"}, tensor<83xf32> {otc.updates = 10 : i64}, tensor<f32> {otc.output = "grad_norm"}) {
    %0 = graph.constant dense<1.000000e+00> : tensor<f32>
    %1 = graph.gemm %arg0, %arg1, %arg2 {transB = true} : (tensor<2x6xf32>, tensor<8x6xf32>, tensor<8xf32>) -> tensor<2x8xf32>
    %2 = graph.relu %1 : tensor<2x8xf32>
    %3 = graph.gemm %2, %arg3, %arg4 {transB = true} : (tensor<2x8xf32>, tensor<3x8xf32>, tensor<3xf32>) -> tensor<2x3xf32>
    %loss, %probs = graph.softmax_cross_entropy %3, %arg5 : (tensor<2x3xf32>, tensor<2xi64>) -> (tensor<f32>, tensor<2x3xf32>)
    %4 = graph.softmax_cross_entropy_grad %probs, %arg5, %0 : (tensor<2x3xf32>, tensor<2xi64>, tensor<f32>) -> tensor<2x3xf32>
    %5 = graph.gemm %4, %2 {transA = true} : (tensor<2x3xf32>, tensor<2x8xf32>) -> tensor<3x8xf32>
    %6 = graph.reduce_sum_to %4 : tensor<2x3xf32> -> tensor<3xf32>
    %7 = graph.gemm %4, %arg3 : (tensor<2x3xf32>, tensor<3x8xf32>) -> tensor<2x8xf32>
    %8 = graph.unary_grad "relu" %7 y %2 : tensor<2x8xf32>
    %9 = graph.gemm %8, %arg0 {transA = true} : (tensor<2x8xf32>, tensor<2x6xf32>) -> tensor<8x6xf32>
    %10 = graph.reduce_sum_to %8 : tensor<2x8xf32> -> tensor<8xf32>
    %11 = dist.bucket %5, %6, %9, %10 : tensor<3x8xf32>, tensor<3xf32>, tensor<8x6xf32>, tensor<8xf32> -> tensor<83xf32>
    %result, %new_residual = dist.compressed_all_reduce %11, %arg10 {method = "topk-int8"} : tensor<83xf32>, tensor<83xf32> -> tensor<83xf32>, tensor<83xf32>
    %12:4 = dist.unbucket %result : tensor<83xf32> -> tensor<3x8xf32>, tensor<3xf32>, tensor<8x6xf32>, tensor<8xf32>
    %clipped:4, %norm = graph.clip_gradients %12#2, %12#3, %12#0, %12#1 : (tensor<8x6xf32>, tensor<8xf32>, tensor<3x8xf32>, tensor<3xf32>) -> (tensor<8x6xf32>, tensor<8xf32>, tensor<3x8xf32>, tensor<3xf32>, tensor<f32>)
    %new_param, %new_velocity = graph.momentum_update %arg1, %clipped#0, %arg6 : tensor<8x6xf32>
    %new_param_0, %new_velocity_1 = graph.momentum_update %arg2, %clipped#1, %arg7 : tensor<8xf32>
    %new_param_2, %new_velocity_3 = graph.momentum_update %arg3, %clipped#2, %arg8 : tensor<3x8xf32>
    %new_param_4, %new_velocity_5 = graph.momentum_update %arg4, %clipped#3, %arg9 : tensor<3xf32>
    return %new_param, %new_velocity, %new_param_0, %new_velocity_1, %new_param_2, %new_velocity_3, %new_param_4, %new_velocity_5, %loss, %new_residual, %norm : tensor<8x6xf32>, tensor<8x6xf32>, tensor<8xf32>, tensor<8xf32>, tensor<3x8xf32>, tensor<3x8xf32>, tensor<3xf32>, tensor<3xf32>, tensor<f32>, tensor<83xf32>, tensor<f32>
  }
  func.func @eval_step(%arg0: tensor<2x6xf32> {otc.input = "x", otc.role = "data"}, %arg1: tensor<8x6xf32> {otc.param = "fc1.weight"}, %arg2: tensor<8xf32> {otc.param = "fc1.bias"}, %arg3: tensor<3x8xf32> {otc.param = "fc2.weight"}, %arg4: tensor<3xf32> {otc.param = "fc2.bias"}, %arg5: tensor<2xi64> {otc.input = "labels", otc.role = "label"}) -> (tensor<2x3xf32> {otc.output = "eval_output"}, tensor<f32> {otc.output = "eval_loss"}) {
    %0 = graph.gemm %arg0, %arg1, %arg2 {transB = true} : (tensor<2x6xf32>, tensor<8x6xf32>, tensor<8xf32>) -> tensor<2x8xf32>
    %1 = graph.relu %0 : tensor<2x8xf32>
    %2 = graph.gemm %1, %arg3, %arg4 {transB = true} : (tensor<2x8xf32>, tensor<3x8xf32>, tensor<3xf32>) -> tensor<2x3xf32>
    %loss, %probs = graph.softmax_cross_entropy %2, %arg5 : (tensor<2x3xf32>, tensor<2xi64>) -> (tensor<f32>, tensor<2x3xf32>)
    return %2, %loss : tensor<2x3xf32>, tensor<f32>
  }
}
