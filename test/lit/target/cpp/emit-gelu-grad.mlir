// RUN: otc-opt %s --otc-lower-to-exec --otc-plan-memory --otc-place-waits | otc-translate --emit-cpp | FileCheck %s --check-prefix=CPU
// RUN: otc-opt %s --otc-lower-to-exec --otc-plan-memory --otc-place-waits | otc-translate --emit-cuda-cpp | FileCheck %s --check-prefix=CUDA

// GELU's derivative gets the forward's input and, when the IR gives it, the
// output (the kernel then takes Phi(x) as y / x); without it, y is null.
// CPU-LABEL: static int otc_train_step(
// CPU: otck_unary_f32(OTCK_GELU, 6, [[X:v[0-9]+]], [[Y:v[0-9]+]],
// CPU: otck_unary_f32(OTCK_GELU_TANH, 6, [[X]], [[T:v[0-9]+]],
// CPU: otck_unary_grad_f32(OTCK_GELU, 6, {{v[0-9]+}}, [[X]], [[Y]],
// CPU: otck_unary_grad_f32(OTCK_GELU_TANH, 6, {{v[0-9]+}}, [[X]], [[T]],
// CPU: otck_unary_grad_f32(OTCK_GELU, 6, {{v[0-9]+}}, [[X]], nullptr,
// CUDA-LABEL: static int otc_train_step(
// CUDA: otckd_unary_grad_f32(OTCK_GELU, 6, {{v[0-9]+}}, [[X:v[0-9]+]], [[Y:v[0-9]+]],
// CUDA: otckd_unary_grad_f32(OTCK_GELU_TANH, 6, {{v[0-9]+}}, [[X]], {{v[0-9]+}},
// CUDA: otckd_unary_grad_f32(OTCK_GELU, 6, {{v[0-9]+}}, [[X]], nullptr,

module {
  func.func @train_step(%x: tensor<2x3xf32> {otc.input = "x", otc.role = "data"},
                        %dy: tensor<2x3xf32> {otc.input = "dy", otc.role = "data"})
      -> (tensor<2x3xf32> {otc.output = "y"}, tensor<2x3xf32> {otc.output = "t"},
          tensor<2x3xf32> {otc.output = "dxy"}, tensor<2x3xf32> {otc.output = "dt"},
          tensor<2x3xf32> {otc.output = "dx"}) {
    %y = graph.gelu %x : tensor<2x3xf32>
    %t = graph.gelu %x {approximate = "tanh"} : tensor<2x3xf32>
    %dxy = graph.unary_grad "gelu" %dy x %x y %y : tensor<2x3xf32>
    %dt = graph.unary_grad "gelu" %dy x %x y %t {beta = 1.0 : f32} : tensor<2x3xf32>
    %dx = graph.unary_grad "gelu" %dy x %x : tensor<2x3xf32>
    return %y, %t, %dxy, %dt, %dx : tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>
  }
}
