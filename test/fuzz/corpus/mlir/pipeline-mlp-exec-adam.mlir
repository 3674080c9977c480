module attributes {dist.world_size = 1 : i64, otc.arena_bytes = 2368 : i64, otc.buffers = [{kind = "data", name = "x", offset = 1792 : i64, role = "input", type = memref<2x6xf32>}, {name = "fc1.weight", offset = 0 : i64, role = "param", type = memref<8x6xf32>}, {name = "fc1.bias", offset = 192 : i64, role = "param", type = memref<8xf32>}, {name = "fc2.weight", offset = 256 : i64, role = "param", type = memref<3x8xf32>}, {name = "fc2.bias", offset = 384 : i64, role = "param", type = memref<3xf32>}, {kind = "label", name = "labels", offset = 1856 : i64, role = "input", type = memref<2xi64>}, {kind = "optimizer", name = "fc1.weight.exp_avg", offset = 896 : i64, role = "state", type = memref<8x6xf32>}, {kind = "optimizer", name = "fc1.weight.exp_avg_sq", offset = 1088 : i64, role = "state", type = memref<8x6xf32>}, {kind = "optimizer", name = "fc1.bias.exp_avg", offset = 1280 : i64, role = "state", type = memref<8xf32>}, {kind = "optimizer", name = "fc1.bias.exp_avg_sq", offset = 1344 : i64, role = "state", type = memref<8xf32>}, {kind = "optimizer", name = "fc2.weight.exp_avg", offset = 1408 : i64, role = "state", type = memref<3x8xf32>}, {kind = "optimizer", name = "fc2.weight.exp_avg_sq", offset = 1536 : i64, role = "state", type = memref<3x8xf32>}, {kind = "optimizer", name = "fc2.bias.exp_avg", offset = 1664 : i64, role = "state", type = memref<3xf32>}, {kind = "optimizer", name = "fc2.bias.exp_avg_sq", offset = 1728 : i64, role = "state", type = memref<3xf32>}, {name = "fc1.weight", offset = 448 : i64, role = "grad", type = memref<8x6xf32>}, {name = "fc1.bias", offset = 640 : i64, role = "grad", type = memref<8xf32>}, {name = "fc2.weight", offset = 704 : i64, role = "grad", type = memref<3x8xf32>}, {name = "fc2.bias", offset = 832 : i64, role = "grad", type = memref<3xf32>}, {name = "loss", offset = 1920 : i64, role = "output", type = memref<f32>}, {name = "grad_norm", offset = 1984 : i64, role = "output", type = memref<f32>}, {name = "eval_output", offset = 2048 : i64, role = "output", type = memref<2x3xf32>}, {name = "eval_loss", offset = 2112 : i64, role = "output", type = memref<f32>}], otc.memory = {activations = 192 : i64, comm_buffers = 0 : i64, frozen = 0 : i64, grads = 332 : i64, inputs = 64 : i64, optimizer = 664 : i64, outputs = 36 : i64, params = 332 : i64, peak = 2368 : i64}, otc.model_path = "mlp.onnx", otc.seed = 0 : i64, otc.training = {accumulate = 1 : i64, alpha = 0.98999999999999999 : f64, beta1 = 9.000000e-01 : f64, beta2 = 0.99899999999999999 : f64, centered = false, ema = 0.000000e+00 : f64, eps = 1.000000e-08 : f64, label = "labels", loss = "cross-entropy", lr = 1.000000e-02 : f64, lr_decay = 0.000000e+00 : f64, momentum = 9.000000e-01 : f64, momentum_buffer = false, nesterov = false, optimizer = "adam", weight_decay = 0.000000e+00 : f64}} {
  func.func @train_step(%arg0: memref<?xi8>) {
    %0 = exec.view %arg0[1792] : memref<?xi8> -> memref<2x6xf32>
    %1 = exec.view %arg0[0] : memref<?xi8> -> memref<8x6xf32>
    %2 = exec.view %arg0[192] : memref<?xi8> -> memref<8xf32>
    %3 = exec.view %arg0[256] : memref<?xi8> -> memref<3x8xf32>
    %4 = exec.view %arg0[384] : memref<?xi8> -> memref<3xf32>
    %5 = exec.view %arg0[1856] : memref<?xi8> -> memref<2xi64>
    %6 = exec.view %arg0[896] : memref<?xi8> -> memref<8x6xf32>
    %7 = exec.view %arg0[1088] : memref<?xi8> -> memref<8x6xf32>
    %8 = exec.view %arg0[1280] : memref<?xi8> -> memref<8xf32>
    %9 = exec.view %arg0[1344] : memref<?xi8> -> memref<8xf32>
    %10 = exec.view %arg0[1408] : memref<?xi8> -> memref<3x8xf32>
    %11 = exec.view %arg0[1536] : memref<?xi8> -> memref<3x8xf32>
    %12 = exec.view %arg0[1664] : memref<?xi8> -> memref<3xf32>
    %13 = exec.view %arg0[1728] : memref<?xi8> -> memref<3xf32>
    %14 = exec.constant dense<1.000000e+00> : tensor<f32> : memref<f32>
    %15 = exec.view %arg0[2176] : memref<?xi8> -> memref<2x8xf32>
    exec.kernel "gemm" ins(%0, %1, %2 : memref<2x6xf32>, memref<8x6xf32>, memref<8xf32>) outs(%15 : memref<2x8xf32>) {alpha = 1.000000e+00 : f32, beta = 1.000000e+00 : f32, transA = false, transB = true}
    %16 = exec.view %arg0[2240] : memref<?xi8> -> memref<2x8xf32>
    exec.kernel "relu" ins(%15 : memref<2x8xf32>) outs(%16 : memref<2x8xf32>)
    %17 = exec.view %arg0[2176] : memref<?xi8> -> memref<2x3xf32>
    exec.kernel "gemm" ins(%16, %3, %4 : memref<2x8xf32>, memref<3x8xf32>, memref<3xf32>) outs(%17 : memref<2x3xf32>) {alpha = 1.000000e+00 : f32, beta = 1.000000e+00 : f32, transA = false, transB = true}
    %18 = exec.view %arg0[1920] : memref<?xi8> -> memref<f32>
    %19 = exec.view %arg0[2304] : memref<?xi8> -> memref<2x3xf32>
    exec.kernel "softmax_cross_entropy" ins(%17, %5 : memref<2x3xf32>, memref<2xi64>) outs(%18, %19 : memref<f32>, memref<2x3xf32>)
    %20 = exec.view %arg0[2176] : memref<?xi8> -> memref<2x3xf32>
    exec.kernel "softmax_cross_entropy_grad" ins(%19, %5, %14 : memref<2x3xf32>, memref<2xi64>, memref<f32>) outs(%20 : memref<2x3xf32>)
    %21 = exec.view %arg0[704] : memref<?xi8> -> memref<3x8xf32>
    exec.kernel "gemm" ins(%20, %16 : memref<2x3xf32>, memref<2x8xf32>) outs(%21 : memref<3x8xf32>) {alpha = 1.000000e+00 : f32, beta = 1.000000e+00 : f32, transA = true, transB = false}
    %22 = exec.view %arg0[832] : memref<?xi8> -> memref<3xf32>
    exec.kernel "reduce_sum_to" ins(%20 : memref<2x3xf32>) outs(%22 : memref<3xf32>)
    %23 = exec.view %arg0[2304] : memref<?xi8> -> memref<2x8xf32>
    exec.kernel "gemm" ins(%20, %3 : memref<2x3xf32>, memref<3x8xf32>) outs(%23 : memref<2x8xf32>) {alpha = 1.000000e+00 : f32, beta = 1.000000e+00 : f32, transA = false, transB = false}
    %24 = exec.view %arg0[2176] : memref<?xi8> -> memref<2x8xf32>
    exec.kernel "unary_grad" ins(%23, %16 : memref<2x8xf32>, memref<2x8xf32>) outs(%24 : memref<2x8xf32>) {alpha = 0.000000e+00 : f32, beta = 0.000000e+00 : f32, kind = "relu"}
    %25 = exec.view %arg0[448] : memref<?xi8> -> memref<8x6xf32>
    exec.kernel "gemm" ins(%24, %0 : memref<2x8xf32>, memref<2x6xf32>) outs(%25 : memref<8x6xf32>) {alpha = 1.000000e+00 : f32, beta = 1.000000e+00 : f32, transA = true, transB = false}
    %26 = exec.view %arg0[640] : memref<?xi8> -> memref<8xf32>
    exec.kernel "reduce_sum_to" ins(%24 : memref<2x8xf32>) outs(%26 : memref<8xf32>)
    %27 = exec.view %arg0[1984] : memref<?xi8> -> memref<f32>
    exec.kernel "clip_gradients" outs(%25, %26, %21, %22, %27 : memref<8x6xf32>, memref<8xf32>, memref<3x8xf32>, memref<3xf32>, memref<f32>) {max_norm = 0.000000e+00 : f32, max_value = 0.000000e+00 : f32}
    exec.check_errors
    exec.kernel "adam_update" ins(%25 : memref<8x6xf32>) outs(%1, %6, %7 : memref<8x6xf32>, memref<8x6xf32>, memref<8x6xf32>) {lr_scale = 1.000000e+00 : f32, wd_scale = 1.000000e+00 : f32}
    exec.kernel "adam_update" ins(%26 : memref<8xf32>) outs(%2, %8, %9 : memref<8xf32>, memref<8xf32>, memref<8xf32>) {lr_scale = 1.000000e+00 : f32, wd_scale = 1.000000e+00 : f32}
    exec.kernel "adam_update" ins(%21 : memref<3x8xf32>) outs(%3, %10, %11 : memref<3x8xf32>, memref<3x8xf32>, memref<3x8xf32>) {lr_scale = 1.000000e+00 : f32, wd_scale = 1.000000e+00 : f32}
    exec.kernel "adam_update" ins(%22 : memref<3xf32>) outs(%4, %12, %13 : memref<3xf32>, memref<3xf32>, memref<3xf32>) {lr_scale = 1.000000e+00 : f32, wd_scale = 1.000000e+00 : f32}
    return
  }
  func.func @eval_step(%arg0: memref<?xi8>) {
    %0 = exec.view %arg0[1792] : memref<?xi8> -> memref<2x6xf32>
    %1 = exec.view %arg0[0] : memref<?xi8> -> memref<8x6xf32>
    %2 = exec.view %arg0[192] : memref<?xi8> -> memref<8xf32>
    %3 = exec.view %arg0[256] : memref<?xi8> -> memref<3x8xf32>
    %4 = exec.view %arg0[384] : memref<?xi8> -> memref<3xf32>
    %5 = exec.view %arg0[1856] : memref<?xi8> -> memref<2xi64>
    %6 = exec.view %arg0[2176] : memref<?xi8> -> memref<2x8xf32>
    exec.kernel "gemm" ins(%0, %1, %2 : memref<2x6xf32>, memref<8x6xf32>, memref<8xf32>) outs(%6 : memref<2x8xf32>) {alpha = 1.000000e+00 : f32, beta = 1.000000e+00 : f32, transA = false, transB = true}
    %7 = exec.view %arg0[2240] : memref<?xi8> -> memref<2x8xf32>
    exec.kernel "relu" ins(%6 : memref<2x8xf32>) outs(%7 : memref<2x8xf32>)
    %8 = exec.view %arg0[2048] : memref<?xi8> -> memref<2x3xf32>
    exec.kernel "gemm" ins(%7, %3, %4 : memref<2x8xf32>, memref<3x8xf32>, memref<3xf32>) outs(%8 : memref<2x3xf32>) {alpha = 1.000000e+00 : f32, beta = 1.000000e+00 : f32, transA = false, transB = true}
    %9 = exec.view %arg0[2112] : memref<?xi8> -> memref<f32>
    %10 = exec.view %arg0[2176] : memref<?xi8> -> memref<2x3xf32>
    exec.kernel "softmax_cross_entropy" ins(%8, %5 : memref<2x3xf32>, memref<2xi64>) outs(%9, %10 : memref<f32>, memref<2x3xf32>)
    return
  }
}
