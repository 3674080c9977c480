// RUN: otc-opt %s --otc-lower-to-exec --otc-plan-memory --otc-place-waits | otc-translate --emit-cuda-cpp | FileCheck %s
// RUN: otc-opt %s --otc-lower-to-exec --otc-plan-memory --otc-place-waits | otc-translate --emit-cuda-cpp | FileCheck %s --check-prefix=NOCPU

// --target cuda: the same program calling the CUDA twins (otc/kernels_cuda.h)
// on the step's stream; constants and host scalars read as tensors are
// uploaded, and every return reports the errors the kernels recorded.
// CHECK: #include "otc/kernels_cuda.h"
// CHECK-NOT: #include "otc/kernels.h"
// CHECK: static int otc_cuda_status(int rc) {
// CHECK-NEXT: switch (otckd_take_status()) {
// CHECK-NEXT: case OTCK_OK:
// CHECK-NEXT: return rc;
// CHECK-NEXT: case OTCK_ERR_LABEL_OUT_OF_RANGE:
// CHECK-NEXT: return OTC_STEP_ERR_LABEL_RANGE;
// CHECK-NEXT: case OTCK_ERR_INDEX_OUT_OF_RANGE:
// CHECK-NEXT: return OTC_STEP_ERR_INDEX_RANGE;
// CHECK-NEXT: case OTCK_ERR_DIVISION_BY_ZERO:
// CHECK-NEXT: return OTC_STEP_ERR_DIVISION_BY_ZERO;
// CHECK-NEXT: default:
// CHECK-NEXT: return OTC_STEP_ERR_DEVICE;
// CHECK: alignas(64) static const float kConst0[] = {1.000000000e+00f};
// CHECK: static const char kManifest[] = "{
// CHECK-SAME: \"device\":\"cuda\"

// CHECK-LABEL: static int otc_train_step(uint8_t *arena, const otc_step_context_t *ctx) {
// CHECK-NEXT: (void)ctx;
// CHECK-NEXT: otckd_set_stream(ctx->stream);
// CHECK-DAG: float *[[W:v[0-9]+]] = reinterpret_cast<float *>(arena + 0);
// CHECK-DAG: float *[[ONE:v[0-9]+]] = const_cast<float *>(static_cast<const float *>(otckd_constant(kConst0, sizeof kConst0)));
// Gemm with a bias: beta (a host scalar read as a broadcast tensor) goes
// to the device first.
// CHECK: static const float beta = 1.000000000e+00f;
// CHECK-NEXT: const float *beta_d = static_cast<const float *>(otckd_constant(&beta, sizeof beta));
// CHECK-NEXT: if (!beta_d)
// CHECK-NEXT: return otc_cuda_status(OTC_STEP_ERR_DEVICE);
// CHECK-NEXT: otckd_binary_f32(OTCK_MUL, 2, shape, {{v[0-9]+}}, cs, beta_d, zs, [[Y:v[0-9]+]]);
// CHECK-NEXT: otckd_gemm_f32(0, 0, 4, 3, 8, 1.000000000e+00f, {{v[0-9]+}}, [[W]], 1.000000000e+00f, [[Y]]);
// The CUDA twin records a bad label: a plain call.
// CHECK: otckd_softmax_ce_f32(4, 3, [[Y]], {{v[0-9]+}}, [[P:v[0-9]+]], {{v[0-9]+}});
// CHECK-NEXT: }
// CHECK: otckd_softmax_ce_grad_f32(4, 3, [[P]], {{v[0-9]+}}, [[ONE]], {{v[0-9]+}});
// CHECK: otckd_gemm_f32(1, 0, 8, 3, 4,
// Collectives as on the CPU; their errors go through the status helper.
// CHECK: if (ctx->all_reduce_mean_f32(ctx->comm, [[DW:v[0-9]+]], 24) != 0)
// CHECK-NEXT: return otc_cuda_status(OTC_STEP_ERR_COMM);
// CHECK: if (int rc = ctx->wait_collectives(ctx->comm))
// CHECK-NEXT: return otc_cuda_status(rc == OTC_STEP_SKIPPED_NONFINITE ? rc : OTC_STEP_ERR_COMM);
// A kernel's recorded error (a bad label) stops the step before any update.
// CHECK: if (int rc = otc_cuda_status(OTC_STEP_OK))
// CHECK-NEXT: return otc_cuda_status(rc);
// CHECK-NEXT: if (ctx->profile)
// CHECK-NEXT: ctx->profile(ctx->profiler, {{[0-9]+}}, 1);
// CHECK-NEXT: { // adam_update
// CHECK: otckd_adam_f32(24, [[W]], [[DW]], {{v[0-9]+}}, {{v[0-9]+}}, (float)(ctx->hyper->lr), (float)(ctx->hyper->beta1), (float)(ctx->hyper->beta2), (float)(ctx->hyper->eps), (float)(ctx->hyper->weight_decay), ctx->step, 0);
// CHECK: return otc_cuda_status(OTC_STEP_OK);
// CHECK-NEXT: }
// CHECK: static const otc_program_entry_t entry = {
// CHECK-NEXT: OTC_PROGRAM_ABI_VERSION, kManifest, {{[0-9]+}}ull, &otc_train_step, nullptr, 0, nullptr, nullptr, nullptr, OTC_DEVICE_CUDA, nullptr, 1, {{[0-9]+}}, kSites};
// No call of the CPU library anywhere, and no return in a step that skips
// the status.
// NOCPU-NOT: otck_gemm_f32(
// NOCPU-NOT: otck_{{[a-z]}}
// NOCPU: namespace program {
// NOCPU-NOT: otck_{{[a-z]}}
// NOCPU-NOT: return OTC_
// NOCPU-NOT: return rc
// NOCPU: } // namespace program

module attributes {dist.world_size = 2 : i64} {
  func.func @train_step(%x: tensor<4x8xf32> {otc.input = "x", otc.role = "data"},
                        %w: tensor<8x3xf32> {otc.param = "w"},
                        %b: tensor<3xf32> {otc.param = "b"},
                        %l: tensor<4xi64> {otc.input = "labels", otc.role = "label"},
                        %m: tensor<8x3xf32> {otc.state = "w.exp_avg"},
                        %v: tensor<8x3xf32> {otc.state = "w.exp_avg_sq"})
      -> (tensor<8x3xf32> {otc.updates = 1 : i64}, tensor<8x3xf32> {otc.updates = 4 : i64},
          tensor<8x3xf32> {otc.updates = 5 : i64}, tensor<f32> {otc.output = "loss"}) {
    %one = graph.constant dense<1.0> : tensor<f32>
    %y = graph.gemm %x, %w, %b : (tensor<4x8xf32>, tensor<8x3xf32>, tensor<3xf32>) -> tensor<4x3xf32>
    %loss, %p = graph.softmax_cross_entropy %y, %l : (tensor<4x3xf32>, tensor<4xi64>) -> (tensor<f32>, tensor<4x3xf32>)
    %dy = graph.softmax_cross_entropy_grad %p, %l, %one : (tensor<4x3xf32>, tensor<4xi64>, tensor<f32>) -> tensor<4x3xf32>
    %dw = graph.gemm %x, %dy {transA = true} : (tensor<4x8xf32>, tensor<4x3xf32>) -> tensor<8x3xf32>
    %avg = dist.all_reduce mean %dw : tensor<8x3xf32>
    %w2, %m2, %v2 = graph.adam_update %w, %avg, %m, %v : tensor<8x3xf32>
    return %w2, %m2, %v2, %loss : tensor<8x3xf32>, tensor<8x3xf32>, tensor<8x3xf32>, tensor<f32>
  }
}
