// RUN: otc-opt %s --split-input-file --otc-lower-to-exec --otc-plan-memory --otc-place-waits | not otc-translate --split-input-file --emit-cuda-cpp 2>&1 | FileCheck %s

// A kernel without a CUDA twin is an error on its op, naming the kernel and
// what --target cuda supports, rather than C++ the host compiler rejects.
// (Convolutions have twins; the transposed convolution has none yet.)
// CHECK: error: 'conv_transpose' has no CUDA kernel yet (--target cuda supports: abs, acos, acosh, adagrad_update, adam_update, {{.*}}, conv, conv_grad_input, conv_grad_weight, {{.*}}, gather, gather_elements, gather_elements_grad, gather_grad, {{.*}}, gemm, {{.*}}, layer_norm, layer_norm_grad, {{.*}}, unpack, where)
module {
  func.func @eval_step(%x: tensor<1x1x3x3xf32> {otc.input = "x", otc.role = "data"},
                       %w: tensor<1x2x3x3xf32> {otc.param = "w"})
      -> (tensor<1x2x7x7xf32> {otc.output = "y"}) {
    %y = graph.conv_transpose %x, %w {strides = array<i64: 2, 2>, dilations = array<i64: 1, 1>,
        pads_begin = array<i64: 0, 0>, pads_end = array<i64: 0, 0>, group = 1 : i64}
        : (tensor<1x1x3x3xf32>, tensor<1x2x3x3xf32>) -> tensor<1x2x7x7xf32>
    return %y : tensor<1x2x7x7xf32>
  }
}
