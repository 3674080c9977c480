// RUN: otc-opt %s --otc-lower-to-exec=target=cuda --otc-plan-memory --otc-place-waits | otc-translate --emit-cuda-cpp | FileCheck %s
// RUN: otc-opt %s --otc-lower-to-exec=target=cuda --otc-plan-memory --otc-place-waits | otc-translate --emit-cuda-cpp | FileCheck %s --check-prefix=NOCPU

// --target cuda: the CNN kernels call their CUDA twins (kernels/cuda/conv.cu,
// pool.cu, norm.cu). Descriptors stay host structs; every tensor, the max
// pool's indices included, lies in the (device) arena. The CUDA
// convolutions need no workspace: none is planned (target=cuda).
// CHECK-LABEL: static int otc_eval_step(uint8_t *arena, const otc_step_context_t *ctx) {
// CHECK: { // conv
// CHECK-NEXT: static const otck_conv_desc d = {2, OTCK_COMPUTE_F32, 2, 3, 4, 1, {9, 9, 1}, {5, 5, 1}, {3, 3, 1}, {2, 2, 1}, {1, 1, 1}, {1, 1, 0}};
// CHECK-NEXT: otckd_conv_f32(&d, {{v[0-9]+}}, {{v[0-9]+}}, {{v[0-9]+}}, [[C:v[0-9]+]], nullptr);
// CHECK: { // batch_norm
// CHECK: otckd_copy(16,
// CHECK: otckd_copy(16,
// CHECK: otckd_batch_norm_train_f32(2, 4, 25, [[C]], {{v[0-9]+}}, {{v[0-9]+}}, 9.999999747e-06f, 8.999999762e-01f, 1, [[Y:v[0-9]+]], [[SM:v[0-9]+]], [[SI:v[0-9]+]], {{v[0-9]+}}, {{v[0-9]+}});
// CHECK: { // max_pool
// CHECK-NEXT: static const otck_pool_desc d = {2, 0, 2, 4, {5, 5, 1}, {3, 3, 1}, {3, 3, 1}, {2, 2, 1}, {1, 1, 1}, {1, 1, 0}, {1, 1, 0}};
// CHECK-NEXT: otckd_max_pool_f32(&d, [[Y]], {{v[0-9]+}}, [[I:v[0-9]+]]);
// CHECK: { // max_pool_grad
// CHECK: otckd_max_pool_grad_f32(&d, {{v[0-9]+}}, [[I]], [[DY:v[0-9]+]]);
// CHECK: { // batch_norm_grad
// CHECK-NEXT: otckd_batch_norm_grad_f32(2, 4, 25, [[DY]], [[C]], {{v[0-9]+}}, [[SM]], [[SI]], [[DC:v[0-9]+]], {{v[0-9]+}}, {{v[0-9]+}});
// CHECK: { // conv_grad_input
// CHECK: otckd_conv_grad_input_f32(&d, [[DC]], {{v[0-9]+}}, {{v[0-9]+}}, nullptr);
// CHECK: { // conv_grad_weight
// CHECK: otckd_conv_grad_weight_f32(&d, [[DC]], {{v[0-9]+}}, {{v[0-9]+}}, nullptr);
// CHECK: { // avg_pool
// CHECK: otckd_avg_pool_f32(&d,
// CHECK: { // avg_pool_grad
// CHECK: otckd_avg_pool_grad_f32(&d,
// CHECK: { // batch_norm_inference
// CHECK-NEXT: otckd_batch_norm_infer_f32(2, 4, 25,
// CHECK: return otc_cuda_status(OTC_STEP_OK);

// No call of the CPU library anywhere (the descriptor types are not calls).
// NOCPU: namespace program {
// NOCPU-NOT: otck_{{[a-z0-9_]+}}(
// NOCPU: } // namespace program

module {
  func.func @eval_step(%x: tensor<2x3x9x9xf32> {otc.input = "x", otc.role = "data"},
                       %w: tensor<4x3x3x3xf32> {otc.param = "w"},
                       %b: tensor<4xf32> {otc.param = "b"},
                       %s: tensor<4xf32> {otc.param = "s"},
                       %m: tensor<4xf32> {otc.param = "m"},
                       %v: tensor<4xf32> {otc.param = "v"},
                       %g: tensor<2x4x3x3xf32> {otc.input = "g", otc.role = "data"})
      -> (tensor<2x3x9x9xf32> {otc.output = "dx"}, tensor<4x3x3x3xf32> {otc.output = "dw"},
          tensor<4xf32> {otc.output = "ds"}, tensor<4xf32> {otc.output = "db"},
          tensor<4xf32> {otc.output = "rm"}, tensor<4xf32> {otc.output = "rv"},
          tensor<2x4x3x3xf32> {otc.output = "a"}, tensor<2x4x5x5xf32> {otc.output = "da"},
          tensor<2x4x5x5xf32> {otc.output = "yi"}) {
    %c = graph.conv %x, %w, %b {strides = array<i64: 2, 2>, dilations = array<i64: 1, 1>,
        pads_begin = array<i64: 1, 1>, pads_end = array<i64: 1, 1>, group = 1 : i64}
        : (tensor<2x3x9x9xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>) -> tensor<2x4x5x5xf32>
    %y, %rm, %rv, %sm, %si = graph.batch_norm %c, %s, %b, %m, %v {epsilon = 1.0e-05 : f32, momentum = 0.9 : f32, unbiased_running_var = true}
        : (tensor<2x4x5x5xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
        -> (tensor<2x4x5x5xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
    %p, %i = graph.max_pool %y {kernel_shape = array<i64: 3, 3>, strides = array<i64: 2, 2>,
        dilations = array<i64: 1, 1>, pads_begin = array<i64: 1, 1>, pads_end = array<i64: 1, 1>}
        : tensor<2x4x5x5xf32> -> (tensor<2x4x3x3xf32>, tensor<2x4x3x3xi64>)
    %dy = graph.max_pool_grad %g, %i {kernel_shape = array<i64: 3, 3>, strides = array<i64: 2, 2>,
        dilations = array<i64: 1, 1>, pads_begin = array<i64: 1, 1>, pads_end = array<i64: 1, 1>}
        : (tensor<2x4x3x3xf32>, tensor<2x4x3x3xi64>) -> tensor<2x4x5x5xf32>
    %dc, %ds, %db = graph.batch_norm_grad %dy, %c, %s, %sm, %si
        : (tensor<2x4x5x5xf32>, tensor<2x4x5x5xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
        -> (tensor<2x4x5x5xf32>, tensor<4xf32>, tensor<4xf32>)
    %dx = graph.conv_grad_input %dc, %w {strides = array<i64: 2, 2>, dilations = array<i64: 1, 1>,
        pads_begin = array<i64: 1, 1>, pads_end = array<i64: 1, 1>, group = 1 : i64}
        : (tensor<2x4x5x5xf32>, tensor<4x3x3x3xf32>) -> tensor<2x3x9x9xf32>
    %dw = graph.conv_grad_weight %dc, %x {strides = array<i64: 2, 2>, dilations = array<i64: 1, 1>,
        pads_begin = array<i64: 1, 1>, pads_end = array<i64: 1, 1>, group = 1 : i64}
        : (tensor<2x4x5x5xf32>, tensor<2x3x9x9xf32>) -> tensor<4x3x3x3xf32>
    %a = graph.avg_pool %c {kernel_shape = array<i64: 3, 3>, strides = array<i64: 2, 2>,
        dilations = array<i64: 1, 1>, pads_begin = array<i64: 1, 1>, pads_end = array<i64: 1, 1>,
        count_include_pad = false} : tensor<2x4x5x5xf32> -> tensor<2x4x3x3xf32>
    %da = graph.avg_pool_grad %g {kernel_shape = array<i64: 3, 3>, strides = array<i64: 2, 2>,
        dilations = array<i64: 1, 1>, pads_begin = array<i64: 1, 1>, pads_end = array<i64: 1, 1>,
        count_include_pad = false} : tensor<2x4x3x3xf32> -> tensor<2x4x5x5xf32>
    %yi = graph.batch_norm_inference %c, %s, %b, %m, %v {epsilon = 1.0e-05 : f32}
        : (tensor<2x4x5x5xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
        -> tensor<2x4x5x5xf32>
    return %dx, %dw, %ds, %db, %rm, %rv, %a, %da, %yi
        : tensor<2x3x9x9xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>,
          tensor<4xf32>, tensor<2x4x3x3xf32>, tensor<2x4x5x5xf32>, tensor<2x4x5x5xf32>
  }
}
