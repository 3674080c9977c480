module attributes {dist.world_size = 1 : i64, otc.arena_bytes = 4416 : i64, otc.buffers = [{kind = "data", name = "x", offset = 2048 : i64, role = "input", type = memref<2x1x6x6xf32>}, {name = "conv2.weight", offset = 0 : i64, role = "param", type = memref<2x1x3x3xf32>}, {name = "conv2.bias", offset = 128 : i64, role = "param", type = memref<2xf32>}, {name = "fc.weight", offset = 192 : i64, role = "param", type = memref<3x2xf32>}, {name = "fc.bias", offset = 256 : i64, role = "param", type = memref<3xf32>}, {name = "onnx::Conv_23", offset = 320 : i64, role = "param", type = memref<2x1x3x3xf32>}, {name = "onnx::Conv_24", offset = 448 : i64, role = "param", type = memref<2xf32>}, {kind = "label", name = "labels", offset = 2368 : i64, role = "input", type = memref<2xi64>}, {kind = "optimizer", name = "conv2.weight.exp_avg", offset = 1024 : i64, role = "state", type = memref<2x1x3x3xf32>}, {kind = "optimizer", name = "conv2.weight.exp_avg_sq", offset = 1152 : i64, role = "state", type = memref<2x1x3x3xf32>}, {kind = "optimizer", name = "conv2.bias.exp_avg", offset = 1280 : i64, role = "state", type = memref<2xf32>}, {kind = "optimizer", name = "conv2.bias.exp_avg_sq", offset = 1344 : i64, role = "state", type = memref<2xf32>}, {kind = "optimizer", name = "fc.weight.exp_avg", offset = 1408 : i64, role = "state", type = memref<3x2xf32>}, {kind = "optimizer", name = "fc.weight.exp_avg_sq", offset = 1472 : i64, role = "state", type = memref<3x2xf32>}, {kind = "optimizer", name = "fc.bias.exp_avg", offset = 1536 : i64, role = "state", type = memref<3xf32>}, {kind = "optimizer", name = "fc.bias.exp_avg_sq", offset = 1600 : i64, role = "state", type = memref<3xf32>}, {kind = "optimizer", name = "onnx::Conv_23.exp_avg", offset = 1664 : i64, role = "state", type = memref<2x1x3x3xf32>}, {kind = "optimizer", name = "onnx::Conv_23.exp_avg_sq", offset = 1792 : i64, role = "state", type = memref<2x1x3x3xf32>}, {kind = "optimizer", name = "onnx::Conv_24.exp_avg", offset = 1920 : i64, role = "state", type = memref<2xf32>}, {kind = "optimizer", name = "onnx::Conv_24.exp_avg_sq", offset = 1984 : i64, role = "state", type = memref<2xf32>}, {name = "conv2.weight", offset = 512 : i64, role = "grad", type = memref<2x1x3x3xf32>}, {name = "conv2.bias", offset = 640 : i64, role = "grad", type = memref<2xf32>}, {name = "fc.weight", offset = 704 : i64, role = "grad", type = memref<3x2xf32>}, {name = "fc.bias", offset = 768 : i64, role = "grad", type = memref<3xf32>}, {name = "onnx::Conv_23", offset = 832 : i64, role = "grad", type = memref<2x1x3x3xf32>}, {name = "onnx::Conv_24", offset = 960 : i64, role = "grad", type = memref<2xf32>}, {name = "loss", offset = 2432 : i64, role = "output", type = memref<f32>}, {name = "grad_norm", offset = 2496 : i64, role = "output", type = memref<f32>}, {name = "eval_output", offset = 2560 : i64, role = "output", type = memref<2x3xf32>}, {name = "eval_loss", offset = 2624 : i64, role = "output", type = memref<f32>}], otc.memory = {activations = 1728 : i64, comm_buffers = 0 : i64, frozen = 0 : i64, grads = 196 : i64, inputs = 304 : i64, optimizer = 392 : i64, outputs = 36 : i64, params = 196 : i64, peak = 4416 : i64}, otc.model_path = "cnn.onnx", otc.seed = 0 : i64, otc.training = {accumulate = 1 : i64, alpha = 0.98999999999999999 : f64, beta1 = 9.000000e-01 : f64, beta2 = 0.99899999999999999 : f64, centered = false, ema = 0.000000e+00 : f64, eps = 1.000000e-08 : f64, label = "labels", loss = "cross-entropy", lr = 1.000000e-02 : f64, lr_decay = 0.000000e+00 : f64, momentum = 9.000000e-01 : f64, momentum_buffer = false, nesterov = false, optimizer = "adam", weight_decay = 0.000000e+00 : f64}} {
  func.func @train_step(%arg0: memref<?xi8>) {
    %0 = exec.view %arg0[2048] : memref<?xi8> -> memref<2x1x6x6xf32>
    %1 = exec.view %arg0[0] : memref<?xi8> -> memref<2x1x3x3xf32>
    %2 = exec.view %arg0[128] : memref<?xi8> -> memref<2xf32>
    %3 = exec.view %arg0[192] : memref<?xi8> -> memref<3x2xf32>
    %4 = exec.view %arg0[256] : memref<?xi8> -> memref<3xf32>
    %5 = exec.view %arg0[320] : memref<?xi8> -> memref<2x1x3x3xf32>
    %6 = exec.view %arg0[448] : memref<?xi8> -> memref<2xf32>
    %7 = exec.view %arg0[2368] : memref<?xi8> -> memref<2xi64>
    %8 = exec.view %arg0[1024] : memref<?xi8> -> memref<2x1x3x3xf32>
    %9 = exec.view %arg0[1152] : memref<?xi8> -> memref<2x1x3x3xf32>
    %10 = exec.view %arg0[1280] : memref<?xi8> -> memref<2xf32>
    %11 = exec.view %arg0[1344] : memref<?xi8> -> memref<2xf32>
    %12 = exec.view %arg0[1408] : memref<?xi8> -> memref<3x2xf32>
    %13 = exec.view %arg0[1472] : memref<?xi8> -> memref<3x2xf32>
    %14 = exec.view %arg0[1536] : memref<?xi8> -> memref<3xf32>
    %15 = exec.view %arg0[1600] : memref<?xi8> -> memref<3xf32>
    %16 = exec.view %arg0[1664] : memref<?xi8> -> memref<2x1x3x3xf32>
    %17 = exec.view %arg0[1792] : memref<?xi8> -> memref<2x1x3x3xf32>
    %18 = exec.view %arg0[1920] : memref<?xi8> -> memref<2xf32>
    %19 = exec.view %arg0[1984] : memref<?xi8> -> memref<2xf32>
    %20 = exec.constant dense<1.000000e+00> : tensor<f32> : memref<f32>
    %21 = exec.view %arg0[2688] : memref<?xi8> -> memref<2x2x6x6xf32>
    exec.kernel "conv" ins(%0, %5, %6 : memref<2x1x6x6xf32>, memref<2x1x3x3xf32>, memref<2xf32>) outs(%21 : memref<2x2x6x6xf32>) {dilations = array<i64: 1, 1>, group = 1 : i64, pads_begin = array<i64: 1, 1>, pads_end = array<i64: 1, 1>, strides = array<i64: 1, 1>}
    %22 = exec.view %arg0[3264] : memref<?xi8> -> memref<2x2x6x6xf32>
    exec.kernel "relu" ins(%21 : memref<2x2x6x6xf32>) outs(%22 : memref<2x2x6x6xf32>)
    %23 = exec.view %arg0[2688] : memref<?xi8> -> memref<2x2x3x3xf32>
    %24 = exec.view %arg0[3840] : memref<?xi8> -> memref<2x2x3x3xi64>
    exec.kernel "max_pool" ins(%22 : memref<2x2x6x6xf32>) outs(%23, %24 : memref<2x2x3x3xf32>, memref<2x2x3x3xi64>) {dilations = array<i64: 1, 1>, kernel_shape = array<i64: 2, 2>, pads_begin = array<i64: 0, 0>, pads_end = array<i64: 0, 0>, strides = array<i64: 2, 2>}
    %25 = exec.view %arg0[2880] : memref<?xi8> -> memref<2x2x1x1xf32>
    exec.kernel "conv" ins(%23, %1, %2 : memref<2x2x3x3xf32>, memref<2x1x3x3xf32>, memref<2xf32>) outs(%25 : memref<2x2x1x1xf32>) {dilations = array<i64: 1, 1>, group = 2 : i64, pads_begin = array<i64: 0, 0>, pads_end = array<i64: 0, 0>, strides = array<i64: 2, 2>}
    %26 = exec.view %arg0[2944] : memref<?xi8> -> memref<2x2x1x1xf32>
    exec.kernel "pad" ins(%25 : memref<2x2x1x1xf32>) outs(%26 : memref<2x2x1x1xf32>) {mode = "constant", pads_begin = array<i64: 0, 0, 0, 0>, pads_end = array<i64: 0, 0, 0, 0>, value = 0.000000e+00 : f32}
    %27 = exec.view %arg0[2880] : memref<?xi8> -> memref<2x2x1x1xf32>
    exec.kernel "avg_pool" ins(%26 : memref<2x2x1x1xf32>) outs(%27 : memref<2x2x1x1xf32>) {count_include_pad = false, dilations = array<i64: 1, 1>, kernel_shape = array<i64: 1, 1>, pads_begin = array<i64: 0, 0>, pads_end = array<i64: 0, 0>, strides = array<i64: 1, 1>}
    %28 = exec.view %arg0[2944] : memref<?xi8> -> memref<2x2xf32>
    exec.kernel "copy" ins(%27 : memref<2x2x1x1xf32>) outs(%28 : memref<2x2xf32>)
    %29 = exec.view %arg0[2880] : memref<?xi8> -> memref<2x3xf32>
    exec.kernel "gemm" ins(%28, %3, %4 : memref<2x2xf32>, memref<3x2xf32>, memref<3xf32>) outs(%29 : memref<2x3xf32>) {alpha = 1.000000e+00 : f32, beta = 1.000000e+00 : f32, transA = false, transB = true}
    %30 = exec.view %arg0[2432] : memref<?xi8> -> memref<f32>
    %31 = exec.view %arg0[3008] : memref<?xi8> -> memref<2x3xf32>
    exec.kernel "softmax_cross_entropy" ins(%29, %7 : memref<2x3xf32>, memref<2xi64>) outs(%30, %31 : memref<f32>, memref<2x3xf32>)
    %32 = exec.view %arg0[2880] : memref<?xi8> -> memref<2x3xf32>
    exec.kernel "softmax_cross_entropy_grad" ins(%31, %7, %20 : memref<2x3xf32>, memref<2xi64>, memref<f32>) outs(%32 : memref<2x3xf32>)
    %33 = exec.view %arg0[704] : memref<?xi8> -> memref<3x2xf32>
    exec.kernel "gemm" ins(%32, %28 : memref<2x3xf32>, memref<2x2xf32>) outs(%33 : memref<3x2xf32>) {alpha = 1.000000e+00 : f32, beta = 1.000000e+00 : f32, transA = true, transB = false}
    %34 = exec.view %arg0[768] : memref<?xi8> -> memref<3xf32>
    exec.kernel "reduce_sum_to" ins(%32 : memref<2x3xf32>) outs(%34 : memref<3xf32>)
    %35 = exec.view %arg0[2944] : memref<?xi8> -> memref<2x2xf32>
    exec.kernel "gemm" ins(%32, %3 : memref<2x3xf32>, memref<3x2xf32>) outs(%35 : memref<2x2xf32>) {alpha = 1.000000e+00 : f32, beta = 1.000000e+00 : f32, transA = false, transB = false}
    %36 = exec.view %arg0[2880] : memref<?xi8> -> memref<2x2x1x1xf32>
    exec.kernel "copy" ins(%35 : memref<2x2xf32>) outs(%36 : memref<2x2x1x1xf32>)
    %37 = exec.view %arg0[2944] : memref<?xi8> -> memref<2x2x1x1xf32>
    exec.kernel "avg_pool_grad" ins(%36 : memref<2x2x1x1xf32>) outs(%37 : memref<2x2x1x1xf32>) {count_include_pad = false, dilations = array<i64: 1, 1>, kernel_shape = array<i64: 1, 1>, pads_begin = array<i64: 0, 0>, pads_end = array<i64: 0, 0>, strides = array<i64: 1, 1>}
    %38 = exec.view %arg0[2880] : memref<?xi8> -> memref<2x2x1x1xf32>
    exec.kernel "pad_grad" ins(%37 : memref<2x2x1x1xf32>) outs(%38 : memref<2x2x1x1xf32>) {mode = "constant", pads_begin = array<i64: 0, 0, 0, 0>, pads_end = array<i64: 0, 0, 0, 0>}
    %39 = exec.view %arg0[512] : memref<?xi8> -> memref<2x1x3x3xf32>
    exec.kernel "conv_grad_weight" ins(%38, %23 : memref<2x2x1x1xf32>, memref<2x2x3x3xf32>) outs(%39 : memref<2x1x3x3xf32>) {dilations = array<i64: 1, 1>, group = 2 : i64, pads_begin = array<i64: 0, 0>, pads_end = array<i64: 0, 0>, strides = array<i64: 2, 2>}
    %40 = exec.view %arg0[640] : memref<?xi8> -> memref<2xf32>
    exec.kernel "reduce" ins(%38 : memref<2x2x1x1xf32>) outs(%40 : memref<2xf32>) {axes = array<i64: 0, 2, 3>, keepdims = false, kind = "sum"}
    %41 = exec.view %arg0[4160] : memref<?xi8> -> memref<2x2x3x3xf32>
    exec.kernel "conv_grad_input" ins(%38, %1 : memref<2x2x1x1xf32>, memref<2x1x3x3xf32>) outs(%41 : memref<2x2x3x3xf32>) {dilations = array<i64: 1, 1>, group = 2 : i64, pads_begin = array<i64: 0, 0>, pads_end = array<i64: 0, 0>, strides = array<i64: 2, 2>}
    %42 = exec.view %arg0[2688] : memref<?xi8> -> memref<2x2x6x6xf32>
    exec.kernel "max_pool_grad" ins(%41, %24 : memref<2x2x3x3xf32>, memref<2x2x3x3xi64>) outs(%42 : memref<2x2x6x6xf32>) {dilations = array<i64: 1, 1>, kernel_shape = array<i64: 2, 2>, pads_begin = array<i64: 0, 0>, pads_end = array<i64: 0, 0>, strides = array<i64: 2, 2>}
    %43 = exec.view %arg0[3840] : memref<?xi8> -> memref<2x2x6x6xf32>
    exec.kernel "unary_grad" ins(%42, %22 : memref<2x2x6x6xf32>, memref<2x2x6x6xf32>) outs(%43 : memref<2x2x6x6xf32>) {alpha = 0.000000e+00 : f32, beta = 0.000000e+00 : f32, kind = "relu"}
    %44 = exec.view %arg0[832] : memref<?xi8> -> memref<2x1x3x3xf32>
    exec.kernel "conv_grad_weight" ins(%43, %0 : memref<2x2x6x6xf32>, memref<2x1x6x6xf32>) outs(%44 : memref<2x1x3x3xf32>) {dilations = array<i64: 1, 1>, group = 1 : i64, pads_begin = array<i64: 1, 1>, pads_end = array<i64: 1, 1>, strides = array<i64: 1, 1>}
    %45 = exec.view %arg0[960] : memref<?xi8> -> memref<2xf32>
    exec.kernel "reduce" ins(%43 : memref<2x2x6x6xf32>) outs(%45 : memref<2xf32>) {axes = array<i64: 0, 2, 3>, keepdims = false, kind = "sum"}
    %46 = exec.view %arg0[2496] : memref<?xi8> -> memref<f32>
    exec.kernel "clip_gradients" outs(%39, %40, %33, %34, %44, %45, %46 : memref<2x1x3x3xf32>, memref<2xf32>, memref<3x2xf32>, memref<3xf32>, memref<2x1x3x3xf32>, memref<2xf32>, memref<f32>) {max_norm = 0.000000e+00 : f32, max_value = 0.000000e+00 : f32}
    exec.check_errors
    exec.kernel "adam_update" ins(%39 : memref<2x1x3x3xf32>) outs(%1, %8, %9 : memref<2x1x3x3xf32>, memref<2x1x3x3xf32>, memref<2x1x3x3xf32>) {lr_scale = 1.000000e+00 : f32, wd_scale = 1.000000e+00 : f32}
    exec.kernel "adam_update" ins(%40 : memref<2xf32>) outs(%2, %10, %11 : memref<2xf32>, memref<2xf32>, memref<2xf32>) {lr_scale = 1.000000e+00 : f32, wd_scale = 1.000000e+00 : f32}
    exec.kernel "adam_update" ins(%33 : memref<3x2xf32>) outs(%3, %12, %13 : memref<3x2xf32>, memref<3x2xf32>, memref<3x2xf32>) {lr_scale = 1.000000e+00 : f32, wd_scale = 1.000000e+00 : f32}
    exec.kernel "adam_update" ins(%34 : memref<3xf32>) outs(%4, %14, %15 : memref<3xf32>, memref<3xf32>, memref<3xf32>) {lr_scale = 1.000000e+00 : f32, wd_scale = 1.000000e+00 : f32}
    exec.kernel "adam_update" ins(%44 : memref<2x1x3x3xf32>) outs(%5, %16, %17 : memref<2x1x3x3xf32>, memref<2x1x3x3xf32>, memref<2x1x3x3xf32>) {lr_scale = 1.000000e+00 : f32, wd_scale = 1.000000e+00 : f32}
    exec.kernel "adam_update" ins(%45 : memref<2xf32>) outs(%6, %18, %19 : memref<2xf32>, memref<2xf32>, memref<2xf32>) {lr_scale = 1.000000e+00 : f32, wd_scale = 1.000000e+00 : f32}
    return
  }
  func.func @eval_step(%arg0: memref<?xi8>) {
    %0 = exec.view %arg0[2048] : memref<?xi8> -> memref<2x1x6x6xf32>
    %1 = exec.view %arg0[0] : memref<?xi8> -> memref<2x1x3x3xf32>
    %2 = exec.view %arg0[128] : memref<?xi8> -> memref<2xf32>
    %3 = exec.view %arg0[192] : memref<?xi8> -> memref<3x2xf32>
    %4 = exec.view %arg0[256] : memref<?xi8> -> memref<3xf32>
    %5 = exec.view %arg0[320] : memref<?xi8> -> memref<2x1x3x3xf32>
    %6 = exec.view %arg0[448] : memref<?xi8> -> memref<2xf32>
    %7 = exec.view %arg0[2368] : memref<?xi8> -> memref<2xi64>
    %8 = exec.view %arg0[2688] : memref<?xi8> -> memref<2x2x6x6xf32>
    exec.kernel "conv" ins(%0, %5, %6 : memref<2x1x6x6xf32>, memref<2x1x3x3xf32>, memref<2xf32>) outs(%8 : memref<2x2x6x6xf32>) {dilations = array<i64: 1, 1>, group = 1 : i64, pads_begin = array<i64: 1, 1>, pads_end = array<i64: 1, 1>, strides = array<i64: 1, 1>}
    %9 = exec.view %arg0[3264] : memref<?xi8> -> memref<2x2x6x6xf32>
    exec.kernel "relu" ins(%8 : memref<2x2x6x6xf32>) outs(%9 : memref<2x2x6x6xf32>)
    %10 = exec.view %arg0[3008] : memref<?xi8> -> memref<2x2x3x3xf32>
    %11 = exec.view %arg0[2688] : memref<?xi8> -> memref<2x2x3x3xi64>
    exec.kernel "max_pool" ins(%9 : memref<2x2x6x6xf32>) outs(%10, %11 : memref<2x2x3x3xf32>, memref<2x2x3x3xi64>) {dilations = array<i64: 1, 1>, kernel_shape = array<i64: 2, 2>, pads_begin = array<i64: 0, 0>, pads_end = array<i64: 0, 0>, strides = array<i64: 2, 2>}
    %12 = exec.view %arg0[2688] : memref<?xi8> -> memref<2x2x1x1xf32>
    exec.kernel "conv" ins(%10, %1, %2 : memref<2x2x3x3xf32>, memref<2x1x3x3xf32>, memref<2xf32>) outs(%12 : memref<2x2x1x1xf32>) {dilations = array<i64: 1, 1>, group = 2 : i64, pads_begin = array<i64: 0, 0>, pads_end = array<i64: 0, 0>, strides = array<i64: 2, 2>}
    %13 = exec.view %arg0[2752] : memref<?xi8> -> memref<2x2x1x1xf32>
    exec.kernel "pad" ins(%12 : memref<2x2x1x1xf32>) outs(%13 : memref<2x2x1x1xf32>) {mode = "constant", pads_begin = array<i64: 0, 0, 0, 0>, pads_end = array<i64: 0, 0, 0, 0>, value = 0.000000e+00 : f32}
    %14 = exec.view %arg0[2688] : memref<?xi8> -> memref<2x2x1x1xf32>
    exec.kernel "avg_pool" ins(%13 : memref<2x2x1x1xf32>) outs(%14 : memref<2x2x1x1xf32>) {count_include_pad = false, dilations = array<i64: 1, 1>, kernel_shape = array<i64: 1, 1>, pads_begin = array<i64: 0, 0>, pads_end = array<i64: 0, 0>, strides = array<i64: 1, 1>}
    %15 = exec.view %arg0[2752] : memref<?xi8> -> memref<2x2xf32>
    exec.kernel "copy" ins(%14 : memref<2x2x1x1xf32>) outs(%15 : memref<2x2xf32>)
    %16 = exec.view %arg0[2560] : memref<?xi8> -> memref<2x3xf32>
    exec.kernel "gemm" ins(%15, %3, %4 : memref<2x2xf32>, memref<3x2xf32>, memref<3xf32>) outs(%16 : memref<2x3xf32>) {alpha = 1.000000e+00 : f32, beta = 1.000000e+00 : f32, transA = false, transB = true}
    %17 = exec.view %arg0[2624] : memref<?xi8> -> memref<f32>
    %18 = exec.view %arg0[2688] : memref<?xi8> -> memref<2x3xf32>
    exec.kernel "softmax_cross_entropy" ins(%16, %7 : memref<2x3xf32>, memref<2xi64>) outs(%17, %18 : memref<f32>, memref<2x3xf32>)
    return
  }
}
