// RUN: otc-opt %s --otc-lower-to-exec=target=cuda --otc-plan-memory --otc-place-waits | otc-translate --emit-cuda-cpp | FileCheck %s

// --target cuda: TopK, GatherElements, its gradient (also TopK's) and
// ScatterElements call the CUDA twins, no CPU kernel; the index kernels are
// plain calls whose errors otc_cuda_status reports.
// CHECK-LABEL: static int otc_eval_step(
// CHECK-DAG: otckd_topk_f32(2, 5, 1, 3, 0, 1,
// CHECK-DAG: otckd_gather_elements(2, {{.*}}, 1, {{.*}}, 4);
// CHECK-DAG: otckd_gather_elements_grad_f32(2, {{.*}}, 1,
// CHECK-DAG: otckd_scatter_elements_f32(2, {{.*}}, 0, OTCK_SCATTER_MAX,
// CHECK-NOT: otck_
// CHECK-NOT: OTC_STEP_ERR_INDEX_RANGE
// CHECK: return otc_cuda_status(OTC_STEP_OK);
func.func @eval_step(%x: tensor<2x5xf32> {otc.input = "x", otc.role = "data"},
                     %i: tensor<2x3xi64> {otc.input = "i", otc.role = "data"},
                     %u: tensor<2x3xf32> {otc.input = "u", otc.role = "data"})
    -> (tensor<2x3xf32> {otc.output = "top"}, tensor<2x3xi64> {otc.output = "top_idx"},
        tensor<2x3xf32> {otc.output = "picked"}, tensor<2x5xf32> {otc.output = "spread"},
        tensor<2x5xf32> {otc.output = "scattered"}) {
  %v, %t = graph.topk %x {axis = 1 : i64, k = 3 : i64, largest = false}
      : tensor<2x5xf32> -> (tensor<2x3xf32>, tensor<2x3xi64>)
  %g = graph.gather_elements %x, %i {axis = -1 : i64}
      : (tensor<2x5xf32>, tensor<2x3xi64>) -> tensor<2x3xf32>
  %d = graph.gather_elements_grad %u, %t {axis = 1 : i64}
      : (tensor<2x3xf32>, tensor<2x3xi64>) -> tensor<2x5xf32>
  %s = graph.scatter_elements %x, %i, %u {axis = 0 : i64, reduction = "max"}
      : (tensor<2x5xf32>, tensor<2x3xi64>, tensor<2x3xf32>) -> tensor<2x5xf32>
  return %v, %t, %g, %d, %s : tensor<2x3xf32>, tensor<2x3xi64>, tensor<2x3xf32>, tensor<2x5xf32>, tensor<2x5xf32>
}
