func.func @forward_ops(%x: tensor<4x8xf32>, %w: tensor<16x8xf32>, %b: tensor<16xf32>,
                       %m: tensor<8x3xf32>) -> tensor<4x16xf32> {
  %0 = graph.gemm %x, %w, %b {transB = true} : (tensor<4x8xf32>, tensor<16x8xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  %1 = graph.matmul %x, %m : (tensor<4x8xf32>, tensor<8x3xf32>) -> tensor<4x3xf32>
  %2 = graph.add %0, %b : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  %3 = graph.sub %2, %0 : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  %4 = graph.mul %3, %0 : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  %5 = graph.div %4, %b : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  %6 = graph.relu %5 : tensor<4x16xf32>
  %7 = graph.sigmoid %6 : tensor<4x16xf32>
  %8 = graph.tanh %7 : tensor<4x16xf32>
  %9 = graph.softmax %8 {axis = 1 : i64} : tensor<4x16xf32>
  %10 = graph.log_softmax %9 : tensor<4x16xf32>
  %11 = graph.transpose %10 {perm = array<i64: 1, 0>} : tensor<4x16xf32> -> tensor<16x4xf32>
  %12 = graph.reshape %11 : tensor<16x4xf32> -> tensor<4x16xf32>
  %13, %mask = graph.dropout %12 {ratio = 0.1 : f32, stream = 0 : i64} : tensor<4x16xf32>
  return %13 : tensor<4x16xf32>
}

func.func @training_ops(%logits: tensor<4x3xf32>, %labels: tensor<4xi64>, %w: tensor<3xf32>,
                        %g: tensor<3xf32>, %v: tensor<3xf32>) -> tensor<3xf32> {
  %loss, %probs = graph.softmax_cross_entropy %logits, %labels : (tensor<4x3xf32>, tensor<4xi64>) -> (tensor<f32>, tensor<4x3xf32>)
  %d = graph.softmax_cross_entropy_grad %probs, %labels, %loss : (tensor<4x3xf32>, tensor<4xi64>, tensor<f32>) -> tensor<4x3xf32>
  %s = graph.reduce_sum_to %d : tensor<4x3xf32> -> tensor<3xf32>
  %r = graph.unary_grad "relu" %s y %w : tensor<3xf32>
  %w1 = graph.sgd_update %w, %r {lr_scale = 0.5 : f32, wd_scale = 0.0 : f32} : tensor<3xf32>
  %w2, %v2 = graph.momentum_update %w1, %g, %v {nesterov = true} : tensor<3xf32>
  %w3, %m3, %v3 = graph.adamw_update %w2, %g, %v2, %v : tensor<3xf32>
  %w4, %m4, %v4 = graph.lamb_update %w3, %g, %m3, %v3 {wd_scale = 0.0 : f32} : tensor<3xf32>
  %w5, %m5 = graph.lion_update %w4, %g, %m4 : tensor<3xf32>
  %w6, %s6 = graph.adagrad_update %w5, %g, %v4 {lr_scale = 2.0 : f32} : tensor<3xf32>
  %w7, %s7:3 = graph.rmsprop_update %w6, %g, %s6, %m5, %v4 {centered = true, with_momentum = true} : tensor<3xf32>
  %w8, %s8 = graph.rmsprop_update %w7, %g, %s7#0 : tensor<3xf32>
  %e = graph.ema_update %s8, %w8 {decay = 0.999 : f32} : tensor<3xf32>
  %mu = graph.hyperparameter "momentum" : tensor<f32>
  %lrd = graph.hyperparameter "lr_decay" : tensor<f32>
  %l2 = graph.mse %w3, %m3 : (tensor<3xf32>, tensor<3xf32>) -> tensor<f32>
  return %w3 : tensor<3xf32>
}

func.func @math_ops(%x: tensor<3xf32>, %y: tensor<3xf32>, %i: tensor<3xi64>) -> tensor<3xf32> {
  %0 = graph.tan %x : tensor<3xf32>
  %1 = graph.asin %0 : tensor<3xf32>
  %2 = graph.acos %1 : tensor<3xf32>
  %3 = graph.atan %2 : tensor<3xf32>
  %4 = graph.sinh %3 : tensor<3xf32>
  %5 = graph.cosh %4 : tensor<3xf32>
  %6 = graph.asinh %5 : tensor<3xf32>
  %7 = graph.acosh %6 : tensor<3xf32>
  %8 = graph.atanh %7 : tensor<3xf32>
  %9 = graph.thresholded_relu %8 {alpha = 2.0 : f32} : tensor<3xf32>
  %10 = graph.shrink %9 {lambd = 1.5 : f32, bias = 1.0 : f32} : tensor<3xf32>
  %11 = graph.mod %i, %i : (tensor<3xi64>, tensor<3xi64>) -> tensor<3xi64>
  %12 = graph.fmod %10, %y : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  %13 = graph.binary_grad "mod" 1 %12, %x, %y : (tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  return %13 : tensor<3xf32>
}
