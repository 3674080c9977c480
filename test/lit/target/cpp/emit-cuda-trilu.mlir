// RUN: otc-opt %s --otc-lower-to-exec=target=cuda --otc-plan-memory --otc-place-waits | otc-translate --emit-cuda-cpp | FileCheck %s

// --target cuda: a causal mask built with Trilu and a one-hot of the labels
// call the CUDA twins.
// CHECK-LABEL: static int otc_eval_step(
// CHECK-DAG: otckd_trilu(2, 3, 3, 1, 1,
// CHECK-DAG: otckd_one_hot_f32(2, 5, 1,
// CHECK-NOT: otck_
// CHECK: return otc_cuda_status(OTC_STEP_OK);
func.func @eval_step(%x: tensor<2x3x3xf32> {otc.input = "x", otc.role = "data"},
                     %y: tensor<2xi64> {otc.input = "y", otc.role = "data"})
    -> (tensor<2x3x3xf32> {otc.output = "masked"}, tensor<2x5xf32> {otc.output = "hot"}) {
  %m = graph.trilu %x {k = 1 : i64, upper = true} : tensor<2x3x3xf32>
  %h = graph.one_hot %y {axis = 1 : i64, depth = 5 : i64, off_value = 0.0 : f32, on_value = 1.0 : f32} : tensor<2xi64> -> tensor<2x5xf32>
  return %m, %h : tensor<2x3x3xf32>, tensor<2x5xf32>
}
