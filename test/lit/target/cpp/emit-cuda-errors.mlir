// RUN: otc-opt %s --split-input-file --otc-lower-to-exec --otc-plan-memory --otc-place-waits | not otc-translate --split-input-file --emit-cuda-cpp 2>&1 | FileCheck %s

// A kernel without a CUDA twin is an error on its op, naming the kernel and
// what --target cuda supports, rather than C++ the host compiler rejects.
// (Convolutions, transposed ones included, have twins; TopK has none yet.)
// CHECK: error: 'topk' has no CUDA kernel yet (--target cuda supports: abs, acos, acosh, adagrad_update, adam_update, {{.*}}, conv, conv_grad_input, conv_grad_weight, conv_transpose, {{.*}}, gather, gather_grad, {{.*}}, gemm, {{.*}}, layer_norm, layer_norm_grad, {{.*}}, unpack, where)
module {
  func.func @eval_step(%x: tensor<4x8xf32> {otc.input = "x", otc.role = "data"})
      -> (tensor<4x3xf32> {otc.output = "v"}, tensor<4x3xi64> {otc.output = "i"}) {
    %v, %i = graph.topk %x {axis = 1 : i64, k = 3 : i64, largest = true}
        : tensor<4x8xf32> -> (tensor<4x3xf32>, tensor<4x3xi64>)
    return %v, %i : tensor<4x3xf32>, tensor<4x3xi64>
  }
}
