// RUN: otc-opt %s --otc-lower-to-exec --otc-plan-memory --otc-place-waits | otc-translate --emit-cuda-cpp | FileCheck %s
// RUN: otc-opt %s --otc-lower-to-exec --otc-plan-memory --otc-place-waits | otc-translate --emit-cuda-cpp | FileCheck %s --check-prefix=NOCPU

// --target cuda: what a GPT-style decoder needs besides GEMMs and softmax
// (embedding gather, LayerNorm, causal masking by where, reductions) calls
// the CUDA twins. The index-checking twins record an out-of-range index for
// otc_cuda_status and return 0: plain calls, no step status of their own.
// CHECK-LABEL: static int otc_eval_step(
// CHECK: otckd_set_stream(ctx->stream);
// CHECK: { // gather
// CHECK-NEXT: otckd_gather(1, 16, 8, {{v[0-9]+}}, 8, [[IDS:v[0-9]+]], [[E:v[0-9]+]], 4);
// CHECK-NEXT: }
// CHECK: { // layer_norm
// CHECK-NEXT: otckd_layer_norm_f32(8, 8, [[E]], {{v[0-9]+}}, {{v[0-9]+}}, 9.999999747e-06f, [[Y:v[0-9]+]], [[M:v[0-9]+]], [[R:v[0-9]+]]);
// CHECK: { // where
// CHECK: otckd_where(3, shape, {{v[0-9]+}}, cs, [[Y]], as, {{v[0-9]+}}, bs, [[W:v[0-9]+]], 4);
// CHECK: { // reduce
// CHECK: static const uint8_t reduced[] = {0, 0, 1};
// CHECK-NEXT: otckd_reduce_f32(OTCK_REDUCE_MAX, 3, shape, reduced, [[W]], [[MX:v[0-9]+]]);
// CHECK: { // reduce_grad
// CHECK: otckd_reduce_grad_f32(OTCK_REDUCE_MAX, 3, shape, reduced, [[W]], [[MX]], [[MX]], [[DW:v[0-9]+]]);
// CHECK: { // layer_norm_grad
// CHECK-NEXT: otckd_layer_norm_grad_f32(8, 8, [[DW]], [[E]], {{v[0-9]+}}, [[M]], [[R]], [[DX:v[0-9]+]], {{v[0-9]+}}, {{v[0-9]+}});
// CHECK: { // gather_grad
// CHECK-NEXT: otckd_gather_grad_f32(1, 16, 8, 8, [[IDS]], [[DX]], {{v[0-9]+}});
// CHECK-NEXT: }
// CHECK: return otc_cuda_status(OTC_STEP_OK);

// No call of the CPU library, and no index check of a return code in the
// program (only otc_cuda_status, before it, maps the recorded error).
// NOCPU-NOT: otck_{{[a-z]}}
// NOCPU: namespace program {
// NOCPU-NOT: otck_{{[a-z]}}
// NOCPU-NOT: != OTCK_OK
// NOCPU-NOT: OTC_STEP_ERR_INDEX_RANGE
// NOCPU: } // namespace program

module {
  func.func @eval_step(%ids: tensor<2x4xi64> {otc.input = "ids", otc.role = "data"},
                       %mask: tensor<4x8xi1> {otc.input = "mask", otc.role = "data"},
                       %table: tensor<16x8xf32> {otc.param = "table"},
                       %s: tensor<8xf32> {otc.param = "s"},
                       %b: tensor<8xf32> {otc.param = "b"})
      -> (tensor<2x4xf32> {otc.output = "max"}, tensor<16x8xf32> {otc.output = "dtable"},
          tensor<8xf32> {otc.output = "ds"}, tensor<8xf32> {otc.output = "db"}) {
    %e = graph.gather %table, %ids {axis = 0 : i64} : (tensor<16x8xf32>, tensor<2x4xi64>) -> tensor<2x4x8xf32>
    %y, %m, %r = graph.layer_norm %e, %s, %b {axis = -1 : i64, epsilon = 1.0e-05 : f32}
        : (tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<2x4x8xf32>, tensor<2x4x1xf32>, tensor<2x4x1xf32>)
    %ninf = graph.constant dense<0xFF800000> : tensor<f32>
    %w = graph.where %mask, %y, %ninf : (tensor<4x8xi1>, tensor<2x4x8xf32>, tensor<f32>) -> tensor<2x4x8xf32>
    %mx = graph.reduce "max" %w {axes = array<i64: 2>, keepdims = false} : tensor<2x4x8xf32> -> tensor<2x4xf32>
    %dw = graph.reduce_grad "max" %mx, %w, %mx {axes = array<i64: 2>}
        : (tensor<2x4xf32>, tensor<2x4x8xf32>, tensor<2x4xf32>) -> tensor<2x4x8xf32>
    %dx, %ds, %db = graph.layer_norm_grad %dw, %e, %s, %m, %r {axis = 2 : i64}
        : (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<8xf32>, tensor<2x4x1xf32>, tensor<2x4x1xf32>)
        -> (tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>)
    %dt = graph.gather_grad %dx, %ids {axis = 0 : i64} : (tensor<2x4x8xf32>, tensor<2x4xi64>) -> tensor<16x8xf32>
    return %mx, %dt, %ds, %db : tensor<2x4xf32>, tensor<16x8xf32>, tensor<8xf32>, tensor<8xf32>
  }
}
