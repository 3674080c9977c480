// RUN: otc-opt %s --otc-lower-to-exec --otc-plan-memory --otc-place-waits | otc-translate --emit-cpp | FileCheck %s

// The emitted translation unit: manifest, one C function per step that
// addresses the arena through typed pointers and calls the kernel ABI, and
// the entry table.
// CHECK: #include "otc/kernels.h"
// CHECK: #include "otc/program_abi.h"
// CHECK: alignas(64) static const float kConst0[] = {1.000000000e+00f};
// CHECK: static const char kManifest[] = "{
// CHECK-SAME: \"device\":\"cpu\"
// CHECK-SAME: \"params\":[{\"dtype\":\"f32\",\"name\":\"w\",\"offset\":0,\"shape\":[8,3]}]
// CHECK-SAME: \"world_size\":2

// CHECK-LABEL: static int otc_train_step(uint8_t *arena, const otc_step_context_t *ctx) {
// CHECK-DAG: float *[[W:v[0-9]+]] = reinterpret_cast<float *>(arena + 0);
// CHECK-DAG: float *[[X:v[0-9]+]] = reinterpret_cast<float *>(arena + 512);
// Every call is a profiling site (kSites below): the profiler hears of it
// before and after.
// CHECK: if (ctx->profile)
// CHECK-NEXT: ctx->profile(ctx->profiler, 0, 1);
// CHECK-NEXT: { // gemm
// CHECK-NEXT: otck_gemm_f32(0, 0, 4, 3, 8, 1.000000000e+00f, [[X]], [[W]], 0.000000000e+00f, [[Y:v[0-9]+]]);
// CHECK-NEXT: }
// CHECK-NEXT: if (ctx->profile)
// CHECK-NEXT: ctx->profile(ctx->profiler, 0, 0);
// CHECK: if (otck_softmax_ce_f32(4, 3, [[Y]], {{v[0-9]+}}, [[P:v[0-9]+]], [[L:v[0-9]+]]) != OTCK_OK)
// CHECK-NEXT: return OTC_STEP_ERR_LABEL_RANGE;
// CHECK: otck_softmax_ce_grad_f32(4, 3, [[P]]
// CHECK: otck_gemm_f32(1, 0, 8, 3, 4, 1.000000000e+00f, [[X]], {{v[0-9]+}}, 0.000000000e+00f, [[DW:v[0-9]+]]);
// CHECK: ctx->profile(ctx->profiler, 4, 1);
// CHECK-NEXT: if (ctx->all_reduce_mean_f32(ctx->comm, [[DW]], 24) != 0)
// CHECK-NEXT: return OTC_STEP_ERR_COMM;
// CHECK-NEXT: if (ctx->profile)
// CHECK-NEXT: ctx->profile(ctx->profiler, 4, 0);
// The all-reduce may still run (overlap): waited for before the update.
// CHECK: if (int rc = ctx->wait_collectives(ctx->comm))
// CHECK-NEXT: return rc == OTC_STEP_SKIPPED_NONFINITE ? rc : OTC_STEP_ERR_COMM;
// CHECK: otck_adam_f32(24, [[W]], [[DW]], {{v[0-9]+}}, {{v[0-9]+}}, (float)(ctx->hyper->lr), (float)(ctx->hyper->beta1), (float)(ctx->hyper->beta2), (float)(ctx->hyper->eps), (float)(ctx->hyper->weight_decay), ctx->step, 0);
// CHECK: return OTC_STEP_OK;
// The sites: kernel or collective, ONNX node ("" here: no name location),
// FLOPs (a 4x8 by 8x3 product: 2 * 4 * 3 * 8) and operand bytes of a call.
// CHECK: static const otc_profile_site_t kSites[] = {
// CHECK-NEXT: {"gemm", "", 1.9200000000000000e+02, 2.7200000000000000e+02},
// CHECK-NEXT: {"softmax_cross_entropy", "", 0.0000000000000000e+00, 1.3200000000000000e+02},
// CHECK-NEXT: {"softmax_cross_entropy_grad", "", 0.0000000000000000e+00, 1.3200000000000000e+02},
// CHECK-NEXT: {"gemm", "", 1.9200000000000000e+02, 2.7200000000000000e+02},
// CHECK-NEXT: {"all_reduce", "", 0.0000000000000000e+00, 9.6000000000000000e+01},
// CHECK-NEXT: {"wait_collectives", "", 0.0000000000000000e+00, 0.0000000000000000e+00},
// CHECK-NEXT: {"adam_update", "", 0.0000000000000000e+00, 3.8400000000000000e+02},
// CHECK-NEXT: };
// CHECK: static const otc_program_entry_t entry = {
// CHECK-NEXT: OTC_PROGRAM_ABI_VERSION, kManifest, {{[0-9]+}}ull, &otc_train_step, nullptr, 0, nullptr, nullptr, nullptr, OTC_DEVICE_CPU, nullptr, 1, 7, kSites};
// CHECK: extern "C" const otc_program_entry_t *otc_program_entry(void) {
// CHECK-NEXT: return &program::entry;

module attributes {dist.world_size = 2 : i64} {
  func.func @train_step(%x: tensor<4x8xf32> {otc.input = "x", otc.role = "data"},
                        %w: tensor<8x3xf32> {otc.param = "w"},
                        %l: tensor<4xi64> {otc.input = "labels", otc.role = "label"},
                        %m: tensor<8x3xf32> {otc.state = "w.exp_avg"},
                        %v: tensor<8x3xf32> {otc.state = "w.exp_avg_sq"})
      -> (tensor<8x3xf32> {otc.updates = 1 : i64}, tensor<8x3xf32> {otc.updates = 3 : i64},
          tensor<8x3xf32> {otc.updates = 4 : i64}, tensor<f32> {otc.output = "loss"}) {
    %one = graph.constant dense<1.0> : tensor<f32>
    %y = graph.matmul %x, %w : (tensor<4x8xf32>, tensor<8x3xf32>) -> tensor<4x3xf32>
    %loss, %p = graph.softmax_cross_entropy %y, %l : (tensor<4x3xf32>, tensor<4xi64>) -> (tensor<f32>, tensor<4x3xf32>)
    %dy = graph.softmax_cross_entropy_grad %p, %l, %one : (tensor<4x3xf32>, tensor<4xi64>, tensor<f32>) -> tensor<4x3xf32>
    %dw = graph.gemm %x, %dy {transA = true} : (tensor<4x8xf32>, tensor<4x3xf32>) -> tensor<8x3xf32>
    %avg = dist.all_reduce mean %dw : tensor<8x3xf32>
    %w2, %m2, %v2 = graph.adam_update %w, %avg, %m, %v : tensor<8x3xf32>
    return %w2, %m2, %v2, %loss : tensor<8x3xf32>, tensor<8x3xf32>, tensor<8x3xf32>, tensor<f32>
  }
}
