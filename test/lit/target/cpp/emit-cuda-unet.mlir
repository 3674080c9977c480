// RUN: otc-opt %s --otc-lower-to-exec=target=cuda --otc-plan-memory --otc-place-waits | otc-translate --emit-cuda-cpp | FileCheck %s
// RUN: otc-opt %s --otc-lower-to-exec=target=cuda --otc-plan-memory --otc-place-waits | otc-translate --emit-cuda-cpp | FileCheck %s --check-prefix=NOCPU

// --target cuda: a UNet's decoder step (a transposed convolution, an
// InstanceNorm, an nn.Upsample and their gradients) calls the CUDA twins
// (kernels/cuda/conv.cu, norm.cu, resize.cu). The transposed convolution
// needs no workspace on CUDA: none is planned.
// CHECK-LABEL: static int otc_eval_step(uint8_t *arena, const otc_step_context_t *ctx) {
// CHECK: { // conv_transpose
// CHECK-NEXT: static const otck_conv_desc d = {2, OTCK_COMPUTE_F32, 1, 2, 4, 1, {6, 6, 1}, {3, 3, 1}, {2, 2, 1}, {2, 2, 1}, {1, 1, 1}, {0, 0, 0}};
// CHECK-NEXT: otckd_conv_transpose_f32(&d, {{v[0-9]+}}, {{v[0-9]+}}, {{v[0-9]+}}, [[T:v[0-9]+]], nullptr);
// CHECK: { // instance_norm
// CHECK-NEXT: otckd_instance_norm_f32(1, 2, 36, [[T]], {{v[0-9]+}}, {{v[0-9]+}}, 9.999999747e-06f, [[Y:v[0-9]+]], [[M:v[0-9]+]], [[R:v[0-9]+]]);
// CHECK: { // resize
// CHECK: otckd_resize_f32(4, {{.*}}, scales, OTCK_RESIZE_NEAREST, OTCK_RESIZE_ASYMMETRIC, OTCK_RESIZE_FLOOR, [[Y]], {{v[0-9]+}});
// CHECK: { // resize_grad
// CHECK: otckd_resize_grad_f32(4, {{.*}}, scales, OTCK_RESIZE_LINEAR, OTCK_RESIZE_HALF_PIXEL, OTCK_RESIZE_ROUND_PREFER_FLOOR, {{v[0-9]+}}, [[DY:v[0-9]+]]);
// CHECK: { // instance_norm_grad
// CHECK-NEXT: otckd_instance_norm_grad_f32(1, 2, 36, [[DY]], [[T]], {{v[0-9]+}}, [[M]], [[R]], {{v[0-9]+}}, {{v[0-9]+}}, {{v[0-9]+}});
// CHECK: return otc_cuda_status(OTC_STEP_OK);

// No call of the CPU library anywhere (the descriptor types are not calls).
// NOCPU: namespace program {
// NOCPU-NOT: otck_{{[a-z0-9_]+}}(
// NOCPU: } // namespace program

module {
  func.func @eval_step(%x: tensor<1x4x3x3xf32> {otc.input = "x", otc.role = "data"},
                       %w: tensor<4x2x2x2xf32> {otc.param = "w"},
                       %b: tensor<2xf32> {otc.param = "b"},
                       %s: tensor<2xf32> {otc.param = "s"},
                       %g: tensor<1x2x12x12xf32> {otc.input = "g", otc.role = "data"})
      -> (tensor<1x2x12x12xf32> {otc.output = "up"}, tensor<1x2x6x6xf32> {otc.output = "dt"},
          tensor<2xf32> {otc.output = "ds"}, tensor<2xf32> {otc.output = "db"}) {
    %t = graph.conv_transpose %x, %w, %b {strides = array<i64: 2, 2>, dilations = array<i64: 1, 1>,
        pads_begin = array<i64: 0, 0>, pads_end = array<i64: 0, 0>, group = 1 : i64}
        : (tensor<1x4x3x3xf32>, tensor<4x2x2x2xf32>, tensor<2xf32>) -> tensor<1x2x6x6xf32>
    %y, %m, %r = graph.instance_norm %t, %s, %b {epsilon = 1.0e-05 : f32}
        : (tensor<1x2x6x6xf32>, tensor<2xf32>, tensor<2xf32>)
        -> (tensor<1x2x6x6xf32>, tensor<1x2xf32>, tensor<1x2xf32>)
    %up = graph.resize %y {mode = "nearest", coordinate_transformation_mode = "asymmetric",
        nearest_mode = "floor", scales = array<f32: 1.0, 1.0, 2.0, 2.0>}
        : tensor<1x2x6x6xf32> -> tensor<1x2x12x12xf32>
    %dy = graph.resize_grad %g {mode = "linear", coordinate_transformation_mode = "half_pixel",
        nearest_mode = "round_prefer_floor", scales = array<f32: 1.0, 1.0, 2.0, 2.0>}
        : tensor<1x2x12x12xf32> -> tensor<1x2x6x6xf32>
    %dt, %ds, %db = graph.instance_norm_grad %dy, %t, %s, %m, %r
        : (tensor<1x2x6x6xf32>, tensor<1x2x6x6xf32>, tensor<2xf32>, tensor<1x2xf32>, tensor<1x2xf32>)
        -> (tensor<1x2x6x6xf32>, tensor<2xf32>, tensor<2xf32>)
    return %up, %dt, %ds, %db : tensor<1x2x12x12xf32>, tensor<1x2x6x6xf32>, tensor<2xf32>, tensor<2xf32>
  }
}
