// RUN: otc-opt %s --otc-lower-to-exec --otc-plan-memory --otc-place-waits | otc-translate --emit-cpp | FileCheck %s --check-prefix=CPU
// RUN: otc-opt %s --otc-lower-to-exec --otc-plan-memory --otc-place-waits | otc-translate --emit-cuda-cpp | FileCheck %s --check-prefix=CUDA

// The trigonometric and hyperbolic ops, ThresholdedRelu, Shrink and Mod go
// to the unary and binary kernels, on either target; Tan's derivative reads
// the forward's output.
// CPU-LABEL: static int otc_train_step(
// CPU: otck_unary_f32(OTCK_TAN, 6, [[X:v[0-9]+]], [[T:v[0-9]+]], 0.000000000e+00f, 0.000000000e+00f);
// CPU: otck_unary_f32(OTCK_ACOSH, 6,
// CPU: otck_unary_f32(OTCK_THRESHOLDED_RELU, 6, {{v[0-9]+}}, {{v[0-9]+}}, 3.000000119e-01f, 0.000000000e+00f);
// CPU: otck_unary_f32(OTCK_SHRINK, 6, {{v[0-9]+}}, {{v[0-9]+}}, 5.000000000e-01f, 2.000000030e-01f);
// CPU: otck_binary_f32(OTCK_MOD, 2,
// CPU: otck_binary_f32(OTCK_FMOD, 2,
// CPU: otck_unary_grad_f32(OTCK_TAN, 6, {{v[0-9]+}}, nullptr, [[T]],
// CPU: otck_binary_grad_f32(OTCK_FMOD, 2,
// CUDA-LABEL: static int otc_train_step(
// CUDA: otckd_unary_f32(OTCK_TAN, 6,
// CUDA: otckd_unary_f32(OTCK_ACOSH, 6,
// CUDA: otckd_unary_f32(OTCK_THRESHOLDED_RELU, 6,
// CUDA: otckd_unary_f32(OTCK_SHRINK, 6,
// CUDA: otckd_binary_f32(OTCK_MOD, 2,
// CUDA: otckd_binary_f32(OTCK_FMOD, 2,
// CUDA: otckd_unary_grad_f32(OTCK_TAN, 6,
// CUDA: otckd_binary_grad_f32(OTCK_FMOD, 2,

module {
  func.func @train_step(%x: tensor<2x3xf32> {otc.input = "x", otc.role = "data"},
                        %d: tensor<3xf32> {otc.input = "d", otc.role = "data"})
      -> (tensor<2x3xf32> {otc.output = "t"}, tensor<2x3xf32> {otc.output = "a"},
          tensor<2x3xf32> {otc.output = "r"}, tensor<2x3xf32> {otc.output = "s"},
          tensor<2x3xf32> {otc.output = "m"}, tensor<2x3xf32> {otc.output = "f"},
          tensor<2x3xf32> {otc.output = "dt"}, tensor<2x3xf32> {otc.output = "df"}) {
    %t = graph.tan %x : tensor<2x3xf32>
    %a = graph.acosh %x : tensor<2x3xf32>
    %r = graph.thresholded_relu %x {alpha = 0.3 : f32} : tensor<2x3xf32>
    %s = graph.shrink %x {lambd = 0.5 : f32, bias = 0.2 : f32} : tensor<2x3xf32>
    %m = graph.mod %x, %d : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
    %f = graph.fmod %x, %d : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
    %dt = graph.unary_grad "tan" %x y %t : tensor<2x3xf32>
    %df = graph.binary_grad "fmod" 0 %x, %x, %d : (tensor<2x3xf32>, tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
    return %t, %a, %r, %s, %m, %f, %dt, %df : tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>
  }
}
