module attributes {dist.world_size = 2 : i64, otc.model_path = "cnn.onnx", otc.seed = 0 : i64, otc.training = {accumulate = 1 : i64, alpha = 0.98999999999999999 : f64, beta1 = 9.000000e-01 : f64, beta2 = 0.99899999999999999 : f64, centered = false, ema = 0.000000e+00 : f64, eps = 1.000000e-08 : f64, label = "labels", loss = "cross-entropy", lr = 1.000000e-02 : f64, lr_decay = 0.000000e+00 : f64, momentum = 9.000000e-01 : f64, momentum_buffer = true, nesterov = false, optimizer = "momentum", weight_decay = 0.000000e+00 : f64}} {
  func.func @train_step(%arg0: tensor<2x1x6x6xf32> {otc.input = "x", otc.role = "data"}, %arg1: tensor<2x1x3x3xf32> {otc.param = "conv2.weight"}, %arg2: tensor<2xf32> {otc.param = "conv2.bias"}, %arg3: tensor<3x2xf32> {otc.param = "fc.weight"}, %arg4: tensor<3xf32> {otc.param = "fc.bias"}, %arg5: tensor<2x1x3x3xf32> {otc.param = "onnx::Conv_23"}, %arg6: tensor<2xf32> {otc.param = "onnx::Conv_24"}, %arg7: tensor<2xi64> {otc.input = "labels", otc.role = "label"}, %arg8: tensor<2x1x3x3xf32> {otc.state = "conv2.weight.momentum_buffer"}, %arg9: tensor<2xf32> {otc.state = "conv2.bias.momentum_buffer"}, %arg10: tensor<3x2xf32> {otc.state = "fc.weight.momentum_buffer"}, %arg11: tensor<3xf32> {otc.state = "fc.bias.momentum_buffer"}, %arg12: tensor<2x1x3x3xf32> {otc.state = "onnx::Conv_23.momentum_buffer"}, %arg13: tensor<2xf32> {otc.state = "onnx::Conv_24.momentum_buffer"}, %arg14: tensor<49xf32> {otc.role = "residual", otc.state = "bucket0.residual"}) -> (tensor<2x1x3x3xf32> {otc.updates = 1 : i64}, tensor<2x1x3x3xf32> {otc.updates = 8 : i64}, tensor<2xf32> {otc.updates = 2 : i64}, tensor<2xf32> {otc.updates = 9 : i64}, tensor<3x2xf32> {otc.updates = 3 : i64}, tensor<3x2xf32> {otc.updates = 10 : i64}, tensor<3xf32> {otc.updates = 4 : i64}, tensor<3xf32> {otc.updates = 11 : i64}, tensor<2x1x3x3xf32> {otc.updates = 5 : i64}, tensor<2x1x3x3xf32> {otc.updates = 12 : i64}, tensor<2xf32> {otc.updates = 6 : i64}, tensor<2xf32> {otc.updates = 13 : i64}, tensor<f32> {otc.output = "loss"}, tensor<49xf32> {otc.updates = 14 : i64}, tensor<f32> {otc.output = "grad_norm"}) {
    %0 = graph.constant dense<1.000000e+00> : tensor<f32>
    %1 = graph.conv %arg0, %arg5, %arg6 {dilations = array<i64: 1, 1>, group = 1 : i64, pads_begin = array<i64: 1, 1>, pads_end = array<i64: 1, 1>, strides = array<i64: 1, 1>} : (tensor<2x1x6x6xf32>, tensor<2x1x3x3xf32>, tensor<2xf32>) -> tensor<2x2x6x6xf32>
    %2 = graph.relu %1 : tensor<2x2x6x6xf32>
    %result, %indices = graph.max_pool %2 {dilations = array<i64: 1, 1>, kernel_shape = array<i64: 2, 2>, pads_begin = array<i64: 0, 0>, pads_end = array<i64: 0, 0>, strides = array<i64: 2, 2>} : tensor<2x2x6x6xf32> -> (tensor<2x2x3x3xf32>, tensor<2x2x3x3xi64>)
    %3 = graph.conv %result, %arg1, %arg2 {dilations = array<i64: 1, 1>, group = 2 : i64, pads_begin = array<i64: 0, 0>, pads_end = array<i64: 0, 0>, strides = array<i64: 2, 2>} : (tensor<2x2x3x3xf32>, tensor<2x1x3x3xf32>, tensor<2xf32>) -> tensor<2x2x1x1xf32>
    %4 = graph.pad %3 {mode = "constant", pads_begin = array<i64: 0, 0, 0, 0>, pads_end = array<i64: 0, 0, 0, 0>} : tensor<2x2x1x1xf32> -> tensor<2x2x1x1xf32>
    %5 = graph.avg_pool %4 {count_include_pad = false, dilations = array<i64: 1, 1>, kernel_shape = array<i64: 1, 1>, pads_begin = array<i64: 0, 0>, pads_end = array<i64: 0, 0>, strides = array<i64: 1, 1>} : tensor<2x2x1x1xf32> -> tensor<2x2x1x1xf32>
    %6 = graph.reshape %5 : tensor<2x2x1x1xf32> -> tensor<2x2xf32>
    %7 = graph.gemm %6, %arg3, %arg4 {transB = true} : (tensor<2x2xf32>, tensor<3x2xf32>, tensor<3xf32>) -> tensor<2x3xf32>
    %loss, %probs = graph.softmax_cross_entropy %7, %arg7 : (tensor<2x3xf32>, tensor<2xi64>) -> (tensor<f32>, tensor<2x3xf32>)
    %8 = graph.softmax_cross_entropy_grad %probs, %arg7, %0 : (tensor<2x3xf32>, tensor<2xi64>, tensor<f32>) -> tensor<2x3xf32>
    %9 = graph.gemm %8, %6 {transA = true} : (tensor<2x3xf32>, tensor<2x2xf32>) -> tensor<3x2xf32>
    %10 = graph.reduce_sum_to %8 : tensor<2x3xf32> -> tensor<3xf32>
    %11 = graph.gemm %8, %arg3 : (tensor<2x3xf32>, tensor<3x2xf32>) -> tensor<2x2xf32>
    %12 = graph.reshape %11 : tensor<2x2xf32> -> tensor<2x2x1x1xf32>
    %13 = graph.avg_pool_grad %12 {count_include_pad = false, dilations = array<i64: 1, 1>, kernel_shape = array<i64: 1, 1>, pads_begin = array<i64: 0, 0>, pads_end = array<i64: 0, 0>, strides = array<i64: 1, 1>} : tensor<2x2x1x1xf32> -> tensor<2x2x1x1xf32>
    %14 = graph.pad_grad %13 {mode = "constant", pads_begin = array<i64: 0, 0, 0, 0>, pads_end = array<i64: 0, 0, 0, 0>} : tensor<2x2x1x1xf32> -> tensor<2x2x1x1xf32>
    %15 = graph.conv_grad_weight %14, %result {dilations = array<i64: 1, 1>, group = 2 : i64, pads_begin = array<i64: 0, 0>, pads_end = array<i64: 0, 0>, strides = array<i64: 2, 2>} : (tensor<2x2x1x1xf32>, tensor<2x2x3x3xf32>) -> tensor<2x1x3x3xf32>
    %16 = graph.reduce "sum" %14 {axes = array<i64: 0, 2, 3>, keepdims = false} : tensor<2x2x1x1xf32> -> tensor<2xf32>
    %17 = graph.conv_grad_input %14, %arg1 {dilations = array<i64: 1, 1>, group = 2 : i64, pads_begin = array<i64: 0, 0>, pads_end = array<i64: 0, 0>, strides = array<i64: 2, 2>} : (tensor<2x2x1x1xf32>, tensor<2x1x3x3xf32>) -> tensor<2x2x3x3xf32>
    %18 = graph.max_pool_grad %17, %indices {dilations = array<i64: 1, 1>, kernel_shape = array<i64: 2, 2>, pads_begin = array<i64: 0, 0>, pads_end = array<i64: 0, 0>, strides = array<i64: 2, 2>} : (tensor<2x2x3x3xf32>, tensor<2x2x3x3xi64>) -> tensor<2x2x6x6xf32>
    %19 = graph.unary_grad "relu" %18 y %2 : tensor<2x2x6x6xf32>
    %20 = graph.conv_grad_weight %19, %arg0 {dilations = array<i64: 1, 1>, group = 1 : i64, pads_begin = array<i64: 1, 1>, pads_end = array<i64: 1, 1>, strides = array<i64: 1, 1>} : (tensor<2x2x6x6xf32>, tensor<2x1x6x6xf32>) -> tensor<2x1x3x3xf32>
    %21 = graph.reduce "sum" %19 {axes = array<i64: 0, 2, 3>, keepdims = false} : tensor<2x2x6x6xf32> -> tensor<2xf32>
    %22 = dist.bucket %9, %10, %15, %16, %20, %21 : tensor<3x2xf32>, tensor<3xf32>, tensor<2x1x3x3xf32>, tensor<2xf32>, tensor<2x1x3x3xf32>, tensor<2xf32> -> tensor<49xf32>
    %result_0, %new_residual = dist.compressed_all_reduce %22, %arg14 {method = "topk-int8"} : tensor<49xf32>, tensor<49xf32> -> tensor<49xf32>, tensor<49xf32>
    %23:6 = dist.unbucket %result_0 : tensor<49xf32> -> tensor<3x2xf32>, tensor<3xf32>, tensor<2x1x3x3xf32>, tensor<2xf32>, tensor<2x1x3x3xf32>, tensor<2xf32>
    %clipped:6, %norm = graph.clip_gradients %23#2, %23#3, %23#0, %23#1, %23#4, %23#5 : (tensor<2x1x3x3xf32>, tensor<2xf32>, tensor<3x2xf32>, tensor<3xf32>, tensor<2x1x3x3xf32>, tensor<2xf32>) -> (tensor<2x1x3x3xf32>, tensor<2xf32>, tensor<3x2xf32>, tensor<3xf32>, tensor<2x1x3x3xf32>, tensor<2xf32>, tensor<f32>)
    %new_param, %new_velocity = graph.momentum_update %arg1, %clipped#0, %arg8 : tensor<2x1x3x3xf32>
    %new_param_1, %new_velocity_2 = graph.momentum_update %arg2, %clipped#1, %arg9 : tensor<2xf32>
    %new_param_3, %new_velocity_4 = graph.momentum_update %arg3, %clipped#2, %arg10 : tensor<3x2xf32>
    %new_param_5, %new_velocity_6 = graph.momentum_update %arg4, %clipped#3, %arg11 : tensor<3xf32>
    %new_param_7, %new_velocity_8 = graph.momentum_update %arg5, %clipped#4, %arg12 : tensor<2x1x3x3xf32>
    %new_param_9, %new_velocity_10 = graph.momentum_update %arg6, %clipped#5, %arg13 : tensor<2xf32>
    return %new_param, %new_velocity, %new_param_1, %new_velocity_2, %new_param_3, %new_velocity_4, %new_param_5, %new_velocity_6, %new_param_7, %new_velocity_8, %new_param_9, %new_velocity_10, %loss, %new_residual, %norm : tensor<2x1x3x3xf32>, tensor<2x1x3x3xf32>, tensor<2xf32>, tensor<2xf32>, tensor<3x2xf32>, tensor<3x2xf32>, tensor<3xf32>, tensor<3xf32>, tensor<2x1x3x3xf32>, tensor<2x1x3x3xf32>, tensor<2xf32>, tensor<2xf32>, tensor<f32>, tensor<49xf32>, tensor<f32>
  }
  func.func @eval_step(%arg0: tensor<2x1x6x6xf32> {otc.input = "x", otc.role = "data"}, %arg1: tensor<2x1x3x3xf32> {otc.param = "conv2.weight"}, %arg2: tensor<2xf32> {otc.param = "conv2.bias"}, %arg3: tensor<3x2xf32> {otc.param = "fc.weight"}, %arg4: tensor<3xf32> {otc.param = "fc.bias"}, %arg5: tensor<2x1x3x3xf32> {otc.param = "onnx::Conv_23"}, %arg6: tensor<2xf32> {otc.param = "onnx::Conv_24"}, %arg7: tensor<2xi64> {otc.input = "labels", otc.role = "label"}) -> (tensor<2x3xf32> {otc.output = "eval_output"}, tensor<f32> {otc.output = "eval_loss"}) {
    %0 = graph.conv %arg0, %arg5, %arg6 {dilations = array<i64: 1, 1>, group = 1 : i64, pads_begin = array<i64: 1, 1>, pads_end = array<i64: 1, 1>, strides = array<i64: 1, 1>} : (tensor<2x1x6x6xf32>, tensor<2x1x3x3xf32>, tensor<2xf32>) -> tensor<2x2x6x6xf32>
    %1 = graph.relu %0 : tensor<2x2x6x6xf32>
    %result, %indices = graph.max_pool %1 {dilations = array<i64: 1, 1>, kernel_shape = array<i64: 2, 2>, pads_begin = array<i64: 0, 0>, pads_end = array<i64: 0, 0>, strides = array<i64: 2, 2>} : tensor<2x2x6x6xf32> -> (tensor<2x2x3x3xf32>, tensor<2x2x3x3xi64>)
    %2 = graph.conv %result, %arg1, %arg2 {dilations = array<i64: 1, 1>, group = 2 : i64, pads_begin = array<i64: 0, 0>, pads_end = array<i64: 0, 0>, strides = array<i64: 2, 2>} : (tensor<2x2x3x3xf32>, tensor<2x1x3x3xf32>, tensor<2xf32>) -> tensor<2x2x1x1xf32>
    %3 = graph.pad %2 {mode = "constant", pads_begin = array<i64: 0, 0, 0, 0>, pads_end = array<i64: 0, 0, 0, 0>} : tensor<2x2x1x1xf32> -> tensor<2x2x1x1xf32>
    %4 = graph.avg_pool %3 {count_include_pad = false, dilations = array<i64: 1, 1>, kernel_shape = array<i64: 1, 1>, pads_begin = array<i64: 0, 0>, pads_end = array<i64: 0, 0>, strides = array<i64: 1, 1>} : tensor<2x2x1x1xf32> -> tensor<2x2x1x1xf32>
    %5 = graph.reshape %4 : tensor<2x2x1x1xf32> -> tensor<2x2xf32>
    %6 = graph.gemm %5, %arg3, %arg4 {transB = true} : (tensor<2x2xf32>, tensor<3x2xf32>, tensor<3xf32>) -> tensor<2x3xf32>
    %loss, %probs = graph.softmax_cross_entropy %6, %arg7 : (tensor<2x3xf32>, tensor<2xi64>) -> (tensor<f32>, tensor<2x3xf32>)
    return %6, %loss : tensor<2x3xf32>, tensor<f32>
  }
}
