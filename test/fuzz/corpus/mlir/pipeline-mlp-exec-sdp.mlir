module attributes {dist.sdp = {active = 5.000000e-01 : f64, assignment = "cyclic", components = [{name = "fc1[0]", owners = array<i64: 0>}, {name = "fc1[1]", owners = array<i64: 1>}], groups = [], masking = "forward", mode = "neuron", rank_variant = array<i64: 0, 1>, rescale = true, seed = 0 : i64}, dist.world_size = 2 : i64, otc.model_path = "mlp.onnx", otc.seed = 0 : i64, otc.training = {accumulate = 1 : i64, alpha = 0.98999999999999999 : f64, beta1 = 9.000000e-01 : f64, beta2 = 0.99899999999999999 : f64, centered = false, ema = 0.000000e+00 : f64, eps = 1.000000e-08 : f64, label = "labels", loss = "cross-entropy", lr = 1.000000e-02 : f64, lr_decay = 0.000000e+00 : f64, momentum = 9.000000e-01 : f64, momentum_buffer = false, nesterov = false, optimizer = "sgd", weight_decay = 0.000000e+00 : f64}} {
  module @variant0 attributes {dist.sdp = {active = 5.000000e-01 : f64, assignment = "cyclic", components = [{name = "fc1[0]", owners = array<i64: 0>}, {name = "fc1[1]", owners = array<i64: 1>}], groups = [], masking = "forward", mode = "neuron", rank_variant = array<i64: 0, 1>, rescale = true, seed = 0 : i64}, dist.world_size = 2 : i64, otc.arena_bytes = 1152 : i64, otc.buffers = [{kind = "data", name = "x", offset = 640 : i64, role = "input", type = memref<2x6xf32>}, {dist.sdp_owners = array<i64: 0>, dist.sdp_slices = [{axis = 0 : i64, ranges = array<i64: 0, 4>}], name = "fc1.weight", offset = 0 : i64, role = "param", type = memref<4x6xf32>}, {dist.sdp_owners = array<i64: 0>, dist.sdp_slices = [{axis = 0 : i64, ranges = array<i64: 0, 4>}], name = "fc1.bias", offset = 128 : i64, role = "param", type = memref<4xf32>}, {dist.sdp_owners = array<i64: 0>, dist.sdp_slices = [{axis = 1 : i64, ranges = array<i64: 0, 4>}], name = "fc2.weight", offset = 192 : i64, role = "param", type = memref<3x4xf32>}, {name = "fc2.bias", offset = 256 : i64, role = "param", type = memref<3xf32>}, {kind = "label", name = "labels", offset = 704 : i64, role = "input", type = memref<2xi64>}, {name = "fc1.weight", offset = 320 : i64, role = "grad", type = memref<4x6xf32>}, {name = "fc1.bias", offset = 448 : i64, role = "grad", type = memref<4xf32>}, {name = "fc2.weight", offset = 512 : i64, role = "grad", type = memref<3x4xf32>}, {name = "fc2.bias", offset = 576 : i64, role = "grad", type = memref<3xf32>}, {name = "loss", offset = 768 : i64, role = "output", type = memref<f32>}, {name = "grad_norm", offset = 832 : i64, role = "output", type = memref<f32>}], otc.memory = {activations = 256 : i64, comm_buffers = 0 : i64, frozen = 0 : i64, grads = 172 : i64, inputs = 64 : i64, optimizer = 0 : i64, outputs = 8 : i64, params = 172 : i64, peak = 1152 : i64}, otc.model_path = "mlp.onnx", otc.seed = 0 : i64, otc.training = {accumulate = 1 : i64, alpha = 0.98999999999999999 : f64, beta1 = 9.000000e-01 : f64, beta2 = 0.99899999999999999 : f64, centered = false, ema = 0.000000e+00 : f64, eps = 1.000000e-08 : f64, label = "labels", loss = "cross-entropy", lr = 1.000000e-02 : f64, lr_decay = 0.000000e+00 : f64, momentum = 9.000000e-01 : f64, momentum_buffer = false, nesterov = false, optimizer = "sgd", weight_decay = 0.000000e+00 : f64}} {
    func.func @train_step(%arg0: memref<?xi8>) {
      %0 = exec.view %arg0[640] : memref<?xi8> -> memref<2x6xf32>
      %1 = exec.view %arg0[0] : memref<?xi8> -> memref<4x6xf32>
      %2 = exec.view %arg0[128] : memref<?xi8> -> memref<4xf32>
      %3 = exec.view %arg0[192] : memref<?xi8> -> memref<3x4xf32>
      %4 = exec.view %arg0[256] : memref<?xi8> -> memref<3xf32>
      %5 = exec.view %arg0[704] : memref<?xi8> -> memref<2xi64>
      %6 = exec.constant dense<1.000000e+00> : tensor<f32> : memref<f32>
      %7 = exec.constant dense<2.000000e+00> : tensor<f32> : memref<f32>
      %8 = exec.view %arg0[896] : memref<?xi8> -> memref<2x4xf32>
      exec.kernel "gemm" ins(%0, %1, %2 : memref<2x6xf32>, memref<4x6xf32>, memref<4xf32>) outs(%8 : memref<2x4xf32>) {alpha = 1.000000e+00 : f32, beta = 1.000000e+00 : f32, transA = false, transB = true}
      %9 = exec.view %arg0[960] : memref<?xi8> -> memref<2x4xf32>
      exec.kernel "relu" ins(%8 : memref<2x4xf32>) outs(%9 : memref<2x4xf32>)
      %10 = exec.view %arg0[896] : memref<?xi8> -> memref<2x4xf32>
      exec.kernel "mul" ins(%9, %7 : memref<2x4xf32>, memref<f32>) outs(%10 : memref<2x4xf32>)
      %11 = exec.view %arg0[1024] : memref<?xi8> -> memref<2x3xf32>
      exec.kernel "gemm" ins(%10, %3, %4 : memref<2x4xf32>, memref<3x4xf32>, memref<3xf32>) outs(%11 : memref<2x3xf32>) {alpha = 1.000000e+00 : f32, beta = 1.000000e+00 : f32, transA = false, transB = true}
      %12 = exec.view %arg0[768] : memref<?xi8> -> memref<f32>
      %13 = exec.view %arg0[1088] : memref<?xi8> -> memref<2x3xf32>
      exec.kernel "softmax_cross_entropy" ins(%11, %5 : memref<2x3xf32>, memref<2xi64>) outs(%12, %13 : memref<f32>, memref<2x3xf32>)
      %14 = exec.view %arg0[1024] : memref<?xi8> -> memref<2x3xf32>
      exec.kernel "softmax_cross_entropy_grad" ins(%13, %5, %6 : memref<2x3xf32>, memref<2xi64>, memref<f32>) outs(%14 : memref<2x3xf32>)
      %15 = exec.view %arg0[512] : memref<?xi8> -> memref<3x4xf32>
      exec.kernel "gemm" ins(%14, %10 : memref<2x3xf32>, memref<2x4xf32>) outs(%15 : memref<3x4xf32>) {alpha = 1.000000e+00 : f32, beta = 1.000000e+00 : f32, transA = true, transB = false}
      %16 = exec.view %arg0[576] : memref<?xi8> -> memref<3xf32>
      exec.kernel "reduce_sum_to" ins(%14 : memref<2x3xf32>) outs(%16 : memref<3xf32>)
      exec.all_reduce mean %16 : memref<3xf32>
      %17 = exec.view %arg0[896] : memref<?xi8> -> memref<2x4xf32>
      exec.kernel "gemm" ins(%14, %3 : memref<2x3xf32>, memref<3x4xf32>) outs(%17 : memref<2x4xf32>) {alpha = 1.000000e+00 : f32, beta = 1.000000e+00 : f32, transA = false, transB = false}
      %18 = exec.view %arg0[1024] : memref<?xi8> -> memref<2x4xf32>
      exec.kernel "mul" ins(%17, %7 : memref<2x4xf32>, memref<f32>) outs(%18 : memref<2x4xf32>)
      %19 = exec.view %arg0[896] : memref<?xi8> -> memref<2x4xf32>
      exec.kernel "unary_grad" ins(%18, %9 : memref<2x4xf32>, memref<2x4xf32>) outs(%19 : memref<2x4xf32>) {alpha = 0.000000e+00 : f32, beta = 0.000000e+00 : f32, kind = "relu"}
      %20 = exec.view %arg0[320] : memref<?xi8> -> memref<4x6xf32>
      exec.kernel "gemm" ins(%19, %0 : memref<2x4xf32>, memref<2x6xf32>) outs(%20 : memref<4x6xf32>) {alpha = 1.000000e+00 : f32, beta = 1.000000e+00 : f32, transA = true, transB = false}
      %21 = exec.view %arg0[448] : memref<?xi8> -> memref<4xf32>
      exec.kernel "reduce_sum_to" ins(%19 : memref<2x4xf32>) outs(%21 : memref<4xf32>)
      %22 = exec.constant dense<0.000000e+00> : tensor<f32> : memref<f32>
      %23 = exec.constant dense<1.000000e+00> : tensor<f32> : memref<f32>
      %24 = exec.view %arg0[896] : memref<?xi8> -> memref<4x6xf32>
      exec.kernel "mul" ins(%20, %20 : memref<4x6xf32>, memref<4x6xf32>) outs(%24 : memref<4x6xf32>)
      %25 = exec.view %arg0[1024] : memref<?xi8> -> memref<f32>
      exec.kernel "reduce" ins(%24 : memref<4x6xf32>) outs(%25 : memref<f32>) {axes = array<i64: 0, 1>, keepdims = false, kind = "sum"}
      %26 = exec.view %arg0[896] : memref<?xi8> -> memref<f32>
      exec.kernel "mul" ins(%25, %23 : memref<f32>, memref<f32>) outs(%26 : memref<f32>)
      %27 = exec.view %arg0[960] : memref<?xi8> -> memref<f32>
      exec.kernel "add" ins(%22, %26 : memref<f32>, memref<f32>) outs(%27 : memref<f32>)
      %28 = exec.constant dense<1.000000e+00> : tensor<f32> : memref<f32>
      %29 = exec.view %arg0[896] : memref<?xi8> -> memref<4xf32>
      exec.kernel "mul" ins(%21, %21 : memref<4xf32>, memref<4xf32>) outs(%29 : memref<4xf32>)
      %30 = exec.view %arg0[1024] : memref<?xi8> -> memref<f32>
      exec.kernel "reduce" ins(%29 : memref<4xf32>) outs(%30 : memref<f32>) {axes = array<i64: 0>, keepdims = false, kind = "sum"}
      %31 = exec.view %arg0[896] : memref<?xi8> -> memref<f32>
      exec.kernel "mul" ins(%30, %28 : memref<f32>, memref<f32>) outs(%31 : memref<f32>)
      %32 = exec.view %arg0[1024] : memref<?xi8> -> memref<f32>
      exec.kernel "add" ins(%27, %31 : memref<f32>, memref<f32>) outs(%32 : memref<f32>)
      %33 = exec.constant dense<1.000000e+00> : tensor<f32> : memref<f32>
      %34 = exec.view %arg0[896] : memref<?xi8> -> memref<3x4xf32>
      exec.kernel "mul" ins(%15, %15 : memref<3x4xf32>, memref<3x4xf32>) outs(%34 : memref<3x4xf32>)
      %35 = exec.view %arg0[960] : memref<?xi8> -> memref<f32>
      exec.kernel "reduce" ins(%34 : memref<3x4xf32>) outs(%35 : memref<f32>) {axes = array<i64: 0, 1>, keepdims = false, kind = "sum"}
      %36 = exec.view %arg0[896] : memref<?xi8> -> memref<f32>
      exec.kernel "mul" ins(%35, %33 : memref<f32>, memref<f32>) outs(%36 : memref<f32>)
      %37 = exec.view %arg0[960] : memref<?xi8> -> memref<f32>
      exec.kernel "add" ins(%32, %36 : memref<f32>, memref<f32>) outs(%37 : memref<f32>)
      %38 = exec.constant dense<5.000000e-01> : tensor<f32> : memref<f32>
      %39 = exec.view %arg0[896] : memref<?xi8> -> memref<3xf32>
      exec.wait_collectives
      exec.kernel "mul" ins(%16, %16 : memref<3xf32>, memref<3xf32>) outs(%39 : memref<3xf32>)
      %40 = exec.view %arg0[1024] : memref<?xi8> -> memref<f32>
      exec.kernel "reduce" ins(%39 : memref<3xf32>) outs(%40 : memref<f32>) {axes = array<i64: 0>, keepdims = false, kind = "sum"}
      %41 = exec.view %arg0[896] : memref<?xi8> -> memref<f32>
      exec.kernel "mul" ins(%40, %38 : memref<f32>, memref<f32>) outs(%41 : memref<f32>)
      %42 = exec.view %arg0[1024] : memref<?xi8> -> memref<f32>
      exec.kernel "add" ins(%37, %41 : memref<f32>, memref<f32>) outs(%42 : memref<f32>)
      exec.all_reduce mean %42 : memref<f32>
      %43 = exec.constant dense<2.000000e+00> : tensor<f32> : memref<f32>
      %44 = exec.view %arg0[896] : memref<?xi8> -> memref<f32>
      exec.wait_collectives
      exec.kernel "mul" ins(%42, %43 : memref<f32>, memref<f32>) outs(%44 : memref<f32>)
      %45 = exec.view %arg0[960] : memref<?xi8> -> memref<f32>
      exec.kernel "sqrt" ins(%44 : memref<f32>) outs(%45 : memref<f32>)
      %46 = exec.view %arg0[832] : memref<?xi8> -> memref<f32>
      exec.kernel "clip_gradients" ins(%45 : memref<f32>) outs(%20, %21, %15, %16, %46 : memref<4x6xf32>, memref<4xf32>, memref<3x4xf32>, memref<3xf32>, memref<f32>) {max_norm = 0.000000e+00 : f32, max_value = 0.000000e+00 : f32}
      exec.check_errors
      exec.agree_finite
      exec.kernel "sgd_update" ins(%20 : memref<4x6xf32>) outs(%1 : memref<4x6xf32>) {lr_scale = 1.000000e+00 : f32, wd_scale = 1.000000e+00 : f32}
      exec.kernel "sgd_update" ins(%21 : memref<4xf32>) outs(%2 : memref<4xf32>) {lr_scale = 1.000000e+00 : f32, wd_scale = 1.000000e+00 : f32}
      exec.kernel "sgd_update" ins(%15 : memref<3x4xf32>) outs(%3 : memref<3x4xf32>) {lr_scale = 1.000000e+00 : f32, wd_scale = 1.000000e+00 : f32}
      exec.kernel "sgd_update" ins(%16 : memref<3xf32>) outs(%4 : memref<3xf32>) {lr_scale = 1.000000e+00 : f32, wd_scale = 1.000000e+00 : f32}
      return
    }
  }
  module @variant1 attributes {dist.sdp = {active = 5.000000e-01 : f64, assignment = "cyclic", components = [{name = "fc1[0]", owners = array<i64: 0>}, {name = "fc1[1]", owners = array<i64: 1>}], groups = [], masking = "forward", mode = "neuron", rank_variant = array<i64: 0, 1>, rescale = true, seed = 0 : i64}, dist.world_size = 2 : i64, otc.arena_bytes = 1152 : i64, otc.buffers = [{kind = "data", name = "x", offset = 640 : i64, role = "input", type = memref<2x6xf32>}, {dist.sdp_owners = array<i64: 1>, dist.sdp_slices = [{axis = 0 : i64, ranges = array<i64: 4, 8>}], name = "fc1.weight", offset = 0 : i64, role = "param", type = memref<4x6xf32>}, {dist.sdp_owners = array<i64: 1>, dist.sdp_slices = [{axis = 0 : i64, ranges = array<i64: 4, 8>}], name = "fc1.bias", offset = 128 : i64, role = "param", type = memref<4xf32>}, {dist.sdp_owners = array<i64: 1>, dist.sdp_slices = [{axis = 1 : i64, ranges = array<i64: 4, 8>}], name = "fc2.weight", offset = 192 : i64, role = "param", type = memref<3x4xf32>}, {name = "fc2.bias", offset = 256 : i64, role = "param", type = memref<3xf32>}, {kind = "label", name = "labels", offset = 704 : i64, role = "input", type = memref<2xi64>}, {name = "fc1.weight", offset = 320 : i64, role = "grad", type = memref<4x6xf32>}, {name = "fc1.bias", offset = 448 : i64, role = "grad", type = memref<4xf32>}, {name = "fc2.weight", offset = 512 : i64, role = "grad", type = memref<3x4xf32>}, {name = "fc2.bias", offset = 576 : i64, role = "grad", type = memref<3xf32>}, {name = "loss", offset = 768 : i64, role = "output", type = memref<f32>}, {name = "grad_norm", offset = 832 : i64, role = "output", type = memref<f32>}], otc.memory = {activations = 256 : i64, comm_buffers = 0 : i64, frozen = 0 : i64, grads = 172 : i64, inputs = 64 : i64, optimizer = 0 : i64, outputs = 8 : i64, params = 172 : i64, peak = 1152 : i64}, otc.model_path = "mlp.onnx", otc.seed = 0 : i64, otc.training = {accumulate = 1 : i64, alpha = 0.98999999999999999 : f64, beta1 = 9.000000e-01 : f64, beta2 = 0.99899999999999999 : f64, centered = false, ema = 0.000000e+00 : f64, eps = 1.000000e-08 : f64, label = "labels", loss = "cross-entropy", lr = 1.000000e-02 : f64, lr_decay = 0.000000e+00 : f64, momentum = 9.000000e-01 : f64, momentum_buffer = false, nesterov = false, optimizer = "sgd", weight_decay = 0.000000e+00 : f64}} {
    func.func @train_step(%arg0: memref<?xi8>) {
      %0 = exec.view %arg0[640] : memref<?xi8> -> memref<2x6xf32>
      %1 = exec.view %arg0[0] : memref<?xi8> -> memref<4x6xf32>
      %2 = exec.view %arg0[128] : memref<?xi8> -> memref<4xf32>
      %3 = exec.view %arg0[192] : memref<?xi8> -> memref<3x4xf32>
      %4 = exec.view %arg0[256] : memref<?xi8> -> memref<3xf32>
      %5 = exec.view %arg0[704] : memref<?xi8> -> memref<2xi64>
      %6 = exec.constant dense<1.000000e+00> : tensor<f32> : memref<f32>
      %7 = exec.constant dense<2.000000e+00> : tensor<f32> : memref<f32>
      %8 = exec.view %arg0[896] : memref<?xi8> -> memref<2x4xf32>
      exec.kernel "gemm" ins(%0, %1, %2 : memref<2x6xf32>, memref<4x6xf32>, memref<4xf32>) outs(%8 : memref<2x4xf32>) {alpha = 1.000000e+00 : f32, beta = 1.000000e+00 : f32, transA = false, transB = true}
      %9 = exec.view %arg0[960] : memref<?xi8> -> memref<2x4xf32>
      exec.kernel "relu" ins(%8 : memref<2x4xf32>) outs(%9 : memref<2x4xf32>)
      %10 = exec.view %arg0[896] : memref<?xi8> -> memref<2x4xf32>
      exec.kernel "mul" ins(%9, %7 : memref<2x4xf32>, memref<f32>) outs(%10 : memref<2x4xf32>)
      %11 = exec.view %arg0[1024] : memref<?xi8> -> memref<2x3xf32>
      exec.kernel "gemm" ins(%10, %3, %4 : memref<2x4xf32>, memref<3x4xf32>, memref<3xf32>) outs(%11 : memref<2x3xf32>) {alpha = 1.000000e+00 : f32, beta = 1.000000e+00 : f32, transA = false, transB = true}
      %12 = exec.view %arg0[768] : memref<?xi8> -> memref<f32>
      %13 = exec.view %arg0[1088] : memref<?xi8> -> memref<2x3xf32>
      exec.kernel "softmax_cross_entropy" ins(%11, %5 : memref<2x3xf32>, memref<2xi64>) outs(%12, %13 : memref<f32>, memref<2x3xf32>)
      %14 = exec.view %arg0[1024] : memref<?xi8> -> memref<2x3xf32>
      exec.kernel "softmax_cross_entropy_grad" ins(%13, %5, %6 : memref<2x3xf32>, memref<2xi64>, memref<f32>) outs(%14 : memref<2x3xf32>)
      %15 = exec.view %arg0[512] : memref<?xi8> -> memref<3x4xf32>
      exec.kernel "gemm" ins(%14, %10 : memref<2x3xf32>, memref<2x4xf32>) outs(%15 : memref<3x4xf32>) {alpha = 1.000000e+00 : f32, beta = 1.000000e+00 : f32, transA = true, transB = false}
      %16 = exec.view %arg0[576] : memref<?xi8> -> memref<3xf32>
      exec.kernel "reduce_sum_to" ins(%14 : memref<2x3xf32>) outs(%16 : memref<3xf32>)
      exec.all_reduce mean %16 : memref<3xf32>
      %17 = exec.view %arg0[896] : memref<?xi8> -> memref<2x4xf32>
      exec.kernel "gemm" ins(%14, %3 : memref<2x3xf32>, memref<3x4xf32>) outs(%17 : memref<2x4xf32>) {alpha = 1.000000e+00 : f32, beta = 1.000000e+00 : f32, transA = false, transB = false}
      %18 = exec.view %arg0[1024] : memref<?xi8> -> memref<2x4xf32>
      exec.kernel "mul" ins(%17, %7 : memref<2x4xf32>, memref<f32>) outs(%18 : memref<2x4xf32>)
      %19 = exec.view %arg0[896] : memref<?xi8> -> memref<2x4xf32>
      exec.kernel "unary_grad" ins(%18, %9 : memref<2x4xf32>, memref<2x4xf32>) outs(%19 : memref<2x4xf32>) {alpha = 0.000000e+00 : f32, beta = 0.000000e+00 : f32, kind = "relu"}
      %20 = exec.view %arg0[320] : memref<?xi8> -> memref<4x6xf32>
      exec.kernel "gemm" ins(%19, %0 : memref<2x4xf32>, memref<2x6xf32>) outs(%20 : memref<4x6xf32>) {alpha = 1.000000e+00 : f32, beta = 1.000000e+00 : f32, transA = true, transB = false}
      %21 = exec.view %arg0[448] : memref<?xi8> -> memref<4xf32>
      exec.kernel "reduce_sum_to" ins(%19 : memref<2x4xf32>) outs(%21 : memref<4xf32>)
      %22 = exec.constant dense<0.000000e+00> : tensor<f32> : memref<f32>
      %23 = exec.constant dense<1.000000e+00> : tensor<f32> : memref<f32>
      %24 = exec.view %arg0[896] : memref<?xi8> -> memref<4x6xf32>
      exec.kernel "mul" ins(%20, %20 : memref<4x6xf32>, memref<4x6xf32>) outs(%24 : memref<4x6xf32>)
      %25 = exec.view %arg0[1024] : memref<?xi8> -> memref<f32>
      exec.kernel "reduce" ins(%24 : memref<4x6xf32>) outs(%25 : memref<f32>) {axes = array<i64: 0, 1>, keepdims = false, kind = "sum"}
      %26 = exec.view %arg0[896] : memref<?xi8> -> memref<f32>
      exec.kernel "mul" ins(%25, %23 : memref<f32>, memref<f32>) outs(%26 : memref<f32>)
      %27 = exec.view %arg0[960] : memref<?xi8> -> memref<f32>
      exec.kernel "add" ins(%22, %26 : memref<f32>, memref<f32>) outs(%27 : memref<f32>)
      %28 = exec.constant dense<1.000000e+00> : tensor<f32> : memref<f32>
      %29 = exec.view %arg0[896] : memref<?xi8> -> memref<4xf32>
      exec.kernel "mul" ins(%21, %21 : memref<4xf32>, memref<4xf32>) outs(%29 : memref<4xf32>)
      %30 = exec.view %arg0[1024] : memref<?xi8> -> memref<f32>
      exec.kernel "reduce" ins(%29 : memref<4xf32>) outs(%30 : memref<f32>) {axes = array<i64: 0>, keepdims = false, kind = "sum"}
      %31 = exec.view %arg0[896] : memref<?xi8> -> memref<f32>
      exec.kernel "mul" ins(%30, %28 : memref<f32>, memref<f32>) outs(%31 : memref<f32>)
      %32 = exec.view %arg0[1024] : memref<?xi8> -> memref<f32>
      exec.kernel "add" ins(%27, %31 : memref<f32>, memref<f32>) outs(%32 : memref<f32>)
      %33 = exec.constant dense<1.000000e+00> : tensor<f32> : memref<f32>
      %34 = exec.view %arg0[896] : memref<?xi8> -> memref<3x4xf32>
      exec.kernel "mul" ins(%15, %15 : memref<3x4xf32>, memref<3x4xf32>) outs(%34 : memref<3x4xf32>)
      %35 = exec.view %arg0[960] : memref<?xi8> -> memref<f32>
      exec.kernel "reduce" ins(%34 : memref<3x4xf32>) outs(%35 : memref<f32>) {axes = array<i64: 0, 1>, keepdims = false, kind = "sum"}
      %36 = exec.view %arg0[896] : memref<?xi8> -> memref<f32>
      exec.kernel "mul" ins(%35, %33 : memref<f32>, memref<f32>) outs(%36 : memref<f32>)
      %37 = exec.view %arg0[960] : memref<?xi8> -> memref<f32>
      exec.kernel "add" ins(%32, %36 : memref<f32>, memref<f32>) outs(%37 : memref<f32>)
      %38 = exec.constant dense<5.000000e-01> : tensor<f32> : memref<f32>
      %39 = exec.view %arg0[896] : memref<?xi8> -> memref<3xf32>
      exec.wait_collectives
      exec.kernel "mul" ins(%16, %16 : memref<3xf32>, memref<3xf32>) outs(%39 : memref<3xf32>)
      %40 = exec.view %arg0[1024] : memref<?xi8> -> memref<f32>
      exec.kernel "reduce" ins(%39 : memref<3xf32>) outs(%40 : memref<f32>) {axes = array<i64: 0>, keepdims = false, kind = "sum"}
      %41 = exec.view %arg0[896] : memref<?xi8> -> memref<f32>
      exec.kernel "mul" ins(%40, %38 : memref<f32>, memref<f32>) outs(%41 : memref<f32>)
      %42 = exec.view %arg0[1024] : memref<?xi8> -> memref<f32>
      exec.kernel "add" ins(%37, %41 : memref<f32>, memref<f32>) outs(%42 : memref<f32>)
      exec.all_reduce mean %42 : memref<f32>
      %43 = exec.constant dense<2.000000e+00> : tensor<f32> : memref<f32>
      %44 = exec.view %arg0[896] : memref<?xi8> -> memref<f32>
      exec.wait_collectives
      exec.kernel "mul" ins(%42, %43 : memref<f32>, memref<f32>) outs(%44 : memref<f32>)
      %45 = exec.view %arg0[960] : memref<?xi8> -> memref<f32>
      exec.kernel "sqrt" ins(%44 : memref<f32>) outs(%45 : memref<f32>)
      %46 = exec.view %arg0[832] : memref<?xi8> -> memref<f32>
      exec.kernel "clip_gradients" ins(%45 : memref<f32>) outs(%20, %21, %15, %16, %46 : memref<4x6xf32>, memref<4xf32>, memref<3x4xf32>, memref<3xf32>, memref<f32>) {max_norm = 0.000000e+00 : f32, max_value = 0.000000e+00 : f32}
      exec.check_errors
      exec.agree_finite
      exec.kernel "sgd_update" ins(%20 : memref<4x6xf32>) outs(%1 : memref<4x6xf32>) {lr_scale = 1.000000e+00 : f32, wd_scale = 1.000000e+00 : f32}
      exec.kernel "sgd_update" ins(%21 : memref<4xf32>) outs(%2 : memref<4xf32>) {lr_scale = 1.000000e+00 : f32, wd_scale = 1.000000e+00 : f32}
      exec.kernel "sgd_update" ins(%15 : memref<3x4xf32>) outs(%3 : memref<3x4xf32>) {lr_scale = 1.000000e+00 : f32, wd_scale = 1.000000e+00 : f32}
      exec.kernel "sgd_update" ins(%16 : memref<3xf32>) outs(%4 : memref<3xf32>) {lr_scale = 1.000000e+00 : f32, wd_scale = 1.000000e+00 : f32}
      return
    }
  }
  module @whole_model attributes {dist.sdp = {active = 5.000000e-01 : f64, assignment = "cyclic", components = [{name = "fc1[0]", owners = array<i64: 0>}, {name = "fc1[1]", owners = array<i64: 1>}], groups = [], masking = "forward", mode = "neuron", rank_variant = array<i64: 0, 1>, rescale = true, seed = 0 : i64}, dist.world_size = 2 : i64, otc.arena_bytes = 832 : i64, otc.buffers = [{kind = "data", name = "x", offset = 448 : i64, role = "input", type = memref<2x6xf32>}, {name = "fc1.weight", offset = 0 : i64, role = "param", type = memref<8x6xf32>}, {name = "fc1.bias", offset = 192 : i64, role = "param", type = memref<8xf32>}, {name = "fc2.weight", offset = 256 : i64, role = "param", type = memref<3x8xf32>}, {name = "fc2.bias", offset = 384 : i64, role = "param", type = memref<3xf32>}, {kind = "label", name = "labels", offset = 512 : i64, role = "input", type = memref<2xi64>}, {name = "eval_output", offset = 576 : i64, role = "output", type = memref<2x3xf32>}, {name = "eval_loss", offset = 640 : i64, role = "output", type = memref<f32>}], otc.memory = {activations = 128 : i64, comm_buffers = 0 : i64, frozen = 0 : i64, grads = 0 : i64, inputs = 64 : i64, optimizer = 0 : i64, outputs = 28 : i64, params = 332 : i64, peak = 832 : i64}, otc.model_path = "mlp.onnx", otc.seed = 0 : i64, otc.training = {accumulate = 1 : i64, alpha = 0.98999999999999999 : f64, beta1 = 9.000000e-01 : f64, beta2 = 0.99899999999999999 : f64, centered = false, ema = 0.000000e+00 : f64, eps = 1.000000e-08 : f64, label = "labels", loss = "cross-entropy", lr = 1.000000e-02 : f64, lr_decay = 0.000000e+00 : f64, momentum = 9.000000e-01 : f64, momentum_buffer = false, nesterov = false, optimizer = "sgd", weight_decay = 0.000000e+00 : f64}} {
    func.func @eval_step(%arg0: memref<?xi8>) {
      %0 = exec.view %arg0[448] : memref<?xi8> -> memref<2x6xf32>
      %1 = exec.view %arg0[0] : memref<?xi8> -> memref<8x6xf32>
      %2 = exec.view %arg0[192] : memref<?xi8> -> memref<8xf32>
      %3 = exec.view %arg0[256] : memref<?xi8> -> memref<3x8xf32>
      %4 = exec.view %arg0[384] : memref<?xi8> -> memref<3xf32>
      %5 = exec.view %arg0[512] : memref<?xi8> -> memref<2xi64>
      %6 = exec.view %arg0[704] : memref<?xi8> -> memref<2x8xf32>
      exec.kernel "gemm" ins(%0, %1, %2 : memref<2x6xf32>, memref<8x6xf32>, memref<8xf32>) outs(%6 : memref<2x8xf32>) {alpha = 1.000000e+00 : f32, beta = 1.000000e+00 : f32, transA = false, transB = true}
      %7 = exec.view %arg0[768] : memref<?xi8> -> memref<2x8xf32>
      exec.kernel "relu" ins(%6 : memref<2x8xf32>) outs(%7 : memref<2x8xf32>)
      %8 = exec.view %arg0[576] : memref<?xi8> -> memref<2x3xf32>
      exec.kernel "gemm" ins(%7, %3, %4 : memref<2x8xf32>, memref<3x8xf32>, memref<3xf32>) outs(%8 : memref<2x3xf32>) {alpha = 1.000000e+00 : f32, beta = 1.000000e+00 : f32, transA = false, transB = true}
      %9 = exec.view %arg0[640] : memref<?xi8> -> memref<f32>
      %10 = exec.view %arg0[704] : memref<?xi8> -> memref<2x3xf32>
      exec.kernel "softmax_cross_entropy" ins(%8, %5 : memref<2x3xf32>, memref<2xi64>) outs(%9, %10 : memref<f32>, memref<2x3xf32>)
      return
    }
  }
}
