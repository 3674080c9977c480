module attributes {dist.world_size = 2 : i64, otc.arena_bytes = 2880 : i64, otc.buffers = [{kind = "data", name = "x", offset = 1664 : i64, role = "input", type = memref<2x6xf32>}, {name = "fc1.weight", offset = 0 : i64, role = "param", type = memref<8x6xf32>}, {name = "fc1.bias", offset = 192 : i64, role = "param", type = memref<8xf32>}, {name = "fc2.weight", offset = 256 : i64, role = "param", type = memref<3x8xf32>}, {name = "fc2.bias", offset = 384 : i64, role = "param", type = memref<3xf32>}, {kind = "label", name = "labels", offset = 1728 : i64, role = "input", type = memref<2xi64>}, {kind = "per-rank", name = "fc1.weight.momentum_buffer", offset = 832 : i64, role = "state", type = memref<8x6xf32>}, {kind = "per-rank", name = "fc1.bias.momentum_buffer", offset = 1024 : i64, role = "state", type = memref<8xf32>}, {kind = "per-rank", name = "fc2.weight.momentum_buffer", offset = 1088 : i64, role = "state", type = memref<3x8xf32>}, {kind = "per-rank", name = "fc2.bias.momentum_buffer", offset = 1216 : i64, role = "state", type = memref<3xf32>}, {kind = "residual", name = "bucket0.residual", offset = 1280 : i64, role = "state", type = memref<83xf32>}, {name = "bucket0", offset = 448 : i64, role = "grad", type = memref<83xf32>}, {name = "loss", offset = 1792 : i64, role = "output", type = memref<f32>}, {name = "grad_norm", offset = 1856 : i64, role = "output", type = memref<f32>}, {name = "eval_output", offset = 1920 : i64, role = "output", type = memref<2x3xf32>}, {name = "eval_loss", offset = 1984 : i64, role = "output", type = memref<f32>}], otc.memory = {activations = 832 : i64, comm_buffers = 332 : i64, frozen = 0 : i64, grads = 332 : i64, inputs = 64 : i64, optimizer = 332 : i64, outputs = 36 : i64, params = 332 : i64, peak = 2880 : i64}, otc.model_path = "mlp.onnx", otc.seed = 0 : i64, otc.training = {accumulate = 1 : i64, alpha = 0.98999999999999999 : f64, beta1 = 9.000000e-01 : f64, beta2 = 0.99899999999999999 : f64, centered = false, ema = 0.000000e+00 : f64, eps = 1.000000e-08 : f64, label = "labels", loss = "cross-entropy", lr = 1.000000e-02 : f64, lr_decay = 0.000000e+00 : f64, momentum = 9.000000e-01 : f64, momentum_buffer = true, nesterov = false, optimizer = "momentum", weight_decay = 0.000000e+00 : f64}} {
  func.func @train_step(%arg0: memref<?xi8>) {
    %0 = exec.view %arg0[1664] : memref<?xi8> -> memref<2x6xf32>
    %1 = exec.view %arg0[0] : memref<?xi8> -> memref<8x6xf32>
    %2 = exec.view %arg0[192] : memref<?xi8> -> memref<8xf32>
    %3 = exec.view %arg0[256] : memref<?xi8> -> memref<3x8xf32>
    %4 = exec.view %arg0[384] : memref<?xi8> -> memref<3xf32>
    %5 = exec.view %arg0[1728] : memref<?xi8> -> memref<2xi64>
    %6 = exec.view %arg0[832] : memref<?xi8> -> memref<8x6xf32>
    %7 = exec.view %arg0[1024] : memref<?xi8> -> memref<8xf32>
    %8 = exec.view %arg0[1088] : memref<?xi8> -> memref<3x8xf32>
    %9 = exec.view %arg0[1216] : memref<?xi8> -> memref<3xf32>
    %10 = exec.view %arg0[1280] : memref<?xi8> -> memref<83xf32>
    %11 = exec.constant dense<1.000000e+00> : tensor<f32> : memref<f32>
    %12 = exec.view %arg0[2048] : memref<?xi8> -> memref<2x8xf32>
    exec.kernel "gemm" ins(%0, %1, %2 : memref<2x6xf32>, memref<8x6xf32>, memref<8xf32>) outs(%12 : memref<2x8xf32>) {alpha = 1.000000e+00 : f32, beta = 1.000000e+00 : f32, transA = false, transB = true}
    %13 = exec.view %arg0[2112] : memref<?xi8> -> memref<2x8xf32>
    exec.kernel "relu" ins(%12 : memref<2x8xf32>) outs(%13 : memref<2x8xf32>)
    %14 = exec.view %arg0[2048] : memref<?xi8> -> memref<2x3xf32>
    exec.kernel "gemm" ins(%13, %3, %4 : memref<2x8xf32>, memref<3x8xf32>, memref<3xf32>) outs(%14 : memref<2x3xf32>) {alpha = 1.000000e+00 : f32, beta = 1.000000e+00 : f32, transA = false, transB = true}
    %15 = exec.view %arg0[1792] : memref<?xi8> -> memref<f32>
    %16 = exec.view %arg0[2176] : memref<?xi8> -> memref<2x3xf32>
    exec.kernel "softmax_cross_entropy" ins(%14, %5 : memref<2x3xf32>, memref<2xi64>) outs(%15, %16 : memref<f32>, memref<2x3xf32>)
    %17 = exec.view %arg0[2048] : memref<?xi8> -> memref<2x3xf32>
    exec.kernel "softmax_cross_entropy_grad" ins(%16, %5, %11 : memref<2x3xf32>, memref<2xi64>, memref<f32>) outs(%17 : memref<2x3xf32>)
    %18 = exec.view %arg0[2624] : memref<?xi8> -> memref<3x8xf32>
    exec.kernel "gemm" ins(%17, %13 : memref<2x3xf32>, memref<2x8xf32>) outs(%18 : memref<3x8xf32>) {alpha = 1.000000e+00 : f32, beta = 1.000000e+00 : f32, transA = true, transB = false}
    %19 = exec.view %arg0[2752] : memref<?xi8> -> memref<3xf32>
    exec.kernel "reduce_sum_to" ins(%17 : memref<2x3xf32>) outs(%19 : memref<3xf32>)
    %20 = exec.view %arg0[2176] : memref<?xi8> -> memref<2x8xf32>
    exec.kernel "gemm" ins(%17, %3 : memref<2x3xf32>, memref<3x8xf32>) outs(%20 : memref<2x8xf32>) {alpha = 1.000000e+00 : f32, beta = 1.000000e+00 : f32, transA = false, transB = false}
    %21 = exec.view %arg0[2240] : memref<?xi8> -> memref<2x8xf32>
    exec.kernel "unary_grad" ins(%20, %13 : memref<2x8xf32>, memref<2x8xf32>) outs(%21 : memref<2x8xf32>) {alpha = 0.000000e+00 : f32, beta = 0.000000e+00 : f32, kind = "relu"}
    %22 = exec.view %arg0[2048] : memref<?xi8> -> memref<8x6xf32>
    exec.kernel "gemm" ins(%21, %0 : memref<2x8xf32>, memref<2x6xf32>) outs(%22 : memref<8x6xf32>) {alpha = 1.000000e+00 : f32, beta = 1.000000e+00 : f32, transA = true, transB = false}
    %23 = exec.view %arg0[2816] : memref<?xi8> -> memref<8xf32>
    exec.kernel "reduce_sum_to" ins(%21 : memref<2x8xf32>) outs(%23 : memref<8xf32>)
    %24 = exec.view %arg0[2432] : memref<?xi8> -> memref<f32>
    exec.kernel "hyperparameter" outs(%24 : memref<f32>) {name = "momentum"}
    %25 = exec.view %arg0[2240] : memref<?xi8> -> memref<8x6xf32>
    exec.kernel "mul" ins(%6, %24 : memref<8x6xf32>, memref<f32>) outs(%25 : memref<8x6xf32>)
    %26 = exec.view %arg0[2432] : memref<?xi8> -> memref<8x6xf32>
    exec.kernel "add" ins(%25, %22 : memref<8x6xf32>, memref<8x6xf32>) outs(%26 : memref<8x6xf32>)
    %27 = exec.view %arg0[2240] : memref<?xi8> -> memref<f32>
    exec.kernel "hyperparameter" outs(%27 : memref<f32>) {name = "weight_decay"}
    %28 = exec.view %arg0[2048] : memref<?xi8> -> memref<8x6xf32>
    exec.kernel "mul" ins(%1, %27 : memref<8x6xf32>, memref<f32>) outs(%28 : memref<8x6xf32>)
    %29 = exec.view %arg0[2240] : memref<?xi8> -> memref<8x6xf32>
    exec.kernel "add" ins(%26, %28 : memref<8x6xf32>, memref<8x6xf32>) outs(%29 : memref<8x6xf32>)
    %30 = exec.view %arg0[2048] : memref<?xi8> -> memref<f32>
    exec.kernel "hyperparameter" outs(%30 : memref<f32>) {name = "momentum"}
    %31 = exec.view %arg0[2112] : memref<?xi8> -> memref<8xf32>
    exec.kernel "mul" ins(%7, %30 : memref<8xf32>, memref<f32>) outs(%31 : memref<8xf32>)
    %32 = exec.view %arg0[2048] : memref<?xi8> -> memref<8xf32>
    exec.kernel "add" ins(%31, %23 : memref<8xf32>, memref<8xf32>) outs(%32 : memref<8xf32>)
    %33 = exec.view %arg0[2112] : memref<?xi8> -> memref<f32>
    exec.kernel "hyperparameter" outs(%33 : memref<f32>) {name = "weight_decay"}
    %34 = exec.view %arg0[2176] : memref<?xi8> -> memref<8xf32>
    exec.kernel "mul" ins(%2, %33 : memref<8xf32>, memref<f32>) outs(%34 : memref<8xf32>)
    %35 = exec.view %arg0[2816] : memref<?xi8> -> memref<8xf32>
    exec.kernel "add" ins(%32, %34 : memref<8xf32>, memref<8xf32>) outs(%35 : memref<8xf32>)
    %36 = exec.view %arg0[2176] : memref<?xi8> -> memref<f32>
    exec.kernel "hyperparameter" outs(%36 : memref<f32>) {name = "momentum"}
    %37 = exec.view %arg0[2048] : memref<?xi8> -> memref<3x8xf32>
    exec.kernel "mul" ins(%8, %36 : memref<3x8xf32>, memref<f32>) outs(%37 : memref<3x8xf32>)
    %38 = exec.view %arg0[2432] : memref<?xi8> -> memref<3x8xf32>
    exec.kernel "add" ins(%37, %18 : memref<3x8xf32>, memref<3x8xf32>) outs(%38 : memref<3x8xf32>)
    %39 = exec.view %arg0[2176] : memref<?xi8> -> memref<f32>
    exec.kernel "hyperparameter" outs(%39 : memref<f32>) {name = "weight_decay"}
    %40 = exec.view %arg0[2048] : memref<?xi8> -> memref<3x8xf32>
    exec.kernel "mul" ins(%3, %39 : memref<3x8xf32>, memref<f32>) outs(%40 : memref<3x8xf32>)
    %41 = exec.view %arg0[2560] : memref<?xi8> -> memref<3x8xf32>
    exec.kernel "add" ins(%38, %40 : memref<3x8xf32>, memref<3x8xf32>) outs(%41 : memref<3x8xf32>)
    %42 = exec.view %arg0[2688] : memref<?xi8> -> memref<f32>
    exec.kernel "hyperparameter" outs(%42 : memref<f32>) {name = "momentum"}
    %43 = exec.view %arg0[2432] : memref<?xi8> -> memref<3xf32>
    exec.kernel "mul" ins(%9, %42 : memref<3xf32>, memref<f32>) outs(%43 : memref<3xf32>)
    %44 = exec.view %arg0[2496] : memref<?xi8> -> memref<3xf32>
    exec.kernel "add" ins(%43, %19 : memref<3xf32>, memref<3xf32>) outs(%44 : memref<3xf32>)
    %45 = exec.view %arg0[2432] : memref<?xi8> -> memref<f32>
    exec.kernel "hyperparameter" outs(%45 : memref<f32>) {name = "weight_decay"}
    %46 = exec.view %arg0[2688] : memref<?xi8> -> memref<3xf32>
    exec.kernel "mul" ins(%4, %45 : memref<3xf32>, memref<f32>) outs(%46 : memref<3xf32>)
    %47 = exec.view %arg0[2432] : memref<?xi8> -> memref<3xf32>
    exec.kernel "add" ins(%44, %46 : memref<3xf32>, memref<3xf32>) outs(%47 : memref<3xf32>)
    %48 = exec.view %arg0[448] : memref<?xi8> -> memref<83xf32>
    exec.kernel "pack" ins(%29, %35, %41, %47 : memref<8x6xf32>, memref<8xf32>, memref<3x8xf32>, memref<3xf32>) outs(%48 : memref<83xf32>)
    exec.compressed_all_reduce %48, %10 {adaptive = false, block_size = 256 : i64, bucket = 0 : i64, method = "int8", ratio = 1.000000e-01 : f32, ratio_min = 0.00999999977 : f32, warmup_steps = 0 : i64} : memref<83xf32>, memref<83xf32>
    %49 = exec.view %arg0[448] : memref<?xi8> -> memref<8x6xf32>
    %50 = exec.view %arg0[640] : memref<?xi8> -> memref<8xf32>
    %51 = exec.view %arg0[672] : memref<?xi8> -> memref<3x8xf32>
    %52 = exec.view %arg0[768] : memref<?xi8> -> memref<3xf32>
    %53 = exec.view %arg0[1856] : memref<?xi8> -> memref<f32>
    exec.wait_collectives
    exec.kernel "clip_gradients" outs(%49, %50, %51, %52, %53 : memref<8x6xf32>, memref<8xf32>, memref<3x8xf32>, memref<3xf32>, memref<f32>) {max_norm = 0.000000e+00 : f32, max_value = 0.000000e+00 : f32}
    exec.check_errors
    exec.kernel "sgd_update" ins(%49 : memref<8x6xf32>) outs(%1 : memref<8x6xf32>) {lr_scale = 1.000000e+00 : f32, wd_scale = 0.000000e+00 : f32}
    exec.kernel "sgd_update" ins(%50 : memref<8xf32>) outs(%2 : memref<8xf32>) {lr_scale = 1.000000e+00 : f32, wd_scale = 0.000000e+00 : f32}
    exec.kernel "sgd_update" ins(%51 : memref<3x8xf32>) outs(%3 : memref<3x8xf32>) {lr_scale = 1.000000e+00 : f32, wd_scale = 0.000000e+00 : f32}
    exec.kernel "sgd_update" ins(%52 : memref<3xf32>) outs(%4 : memref<3xf32>) {lr_scale = 1.000000e+00 : f32, wd_scale = 0.000000e+00 : f32}
    exec.kernel "copy" ins(%29 : memref<8x6xf32>) outs(%6 : memref<8x6xf32>)
    exec.kernel "copy" ins(%35 : memref<8xf32>) outs(%7 : memref<8xf32>)
    exec.kernel "copy" ins(%41 : memref<3x8xf32>) outs(%8 : memref<3x8xf32>)
    exec.kernel "copy" ins(%47 : memref<3xf32>) outs(%9 : memref<3xf32>)
    return
  }
  func.func @eval_step(%arg0: memref<?xi8>) {
    %0 = exec.view %arg0[1664] : memref<?xi8> -> memref<2x6xf32>
    %1 = exec.view %arg0[0] : memref<?xi8> -> memref<8x6xf32>
    %2 = exec.view %arg0[192] : memref<?xi8> -> memref<8xf32>
    %3 = exec.view %arg0[256] : memref<?xi8> -> memref<3x8xf32>
    %4 = exec.view %arg0[384] : memref<?xi8> -> memref<3xf32>
    %5 = exec.view %arg0[1728] : memref<?xi8> -> memref<2xi64>
    %6 = exec.view %arg0[2048] : memref<?xi8> -> memref<2x8xf32>
    exec.kernel "gemm" ins(%0, %1, %2 : memref<2x6xf32>, memref<8x6xf32>, memref<8xf32>) outs(%6 : memref<2x8xf32>) {alpha = 1.000000e+00 : f32, beta = 1.000000e+00 : f32, transA = false, transB = true}
    %7 = exec.view %arg0[2112] : memref<?xi8> -> memref<2x8xf32>
    exec.kernel "relu" ins(%6 : memref<2x8xf32>) outs(%7 : memref<2x8xf32>)
    %8 = exec.view %arg0[1920] : memref<?xi8> -> memref<2x3xf32>
    exec.kernel "gemm" ins(%7, %3, %4 : memref<2x8xf32>, memref<3x8xf32>, memref<3xf32>) outs(%8 : memref<2x3xf32>) {alpha = 1.000000e+00 : f32, beta = 1.000000e+00 : f32, transA = false, transB = true}
    %9 = exec.view %arg0[1984] : memref<?xi8> -> memref<f32>
    %10 = exec.view %arg0[2048] : memref<?xi8> -> memref<2x3xf32>
    exec.kernel "softmax_cross_entropy" ins(%8, %5 : memref<2x3xf32>, memref<2xi64>) outs(%9, %10 : memref<f32>, memref<2x3xf32>)
    return
  }
}
