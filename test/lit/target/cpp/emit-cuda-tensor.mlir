// RUN: otc-opt %s --otc-lower-to-exec=target=cuda --otc-plan-memory --otc-place-waits | otc-translate --emit-cuda-cpp | FileCheck %s

// --target cuda: a causal mask built with Trilu, a one-hot of the labels and
// a reflect pad call the CUDA twins, no CPU kernel.
// CHECK-LABEL: static int otc_eval_step(
// CHECK-DAG: otckd_trilu(2, 3, 3, 1, 1,
// CHECK-DAG: otckd_one_hot_f32(2, 5, 1,
// CHECK-DAG: otckd_pad(3, {{.*}}, OTCK_PAD_REFLECT, nullptr,
// CHECK-NOT: otck_
// CHECK: return otc_cuda_status(OTC_STEP_OK);
func.func @eval_step(%x: tensor<2x3x3xf32> {otc.input = "x", otc.role = "data"},
                     %y: tensor<2xi64> {otc.input = "y", otc.role = "data"})
    -> (tensor<2x3x3xf32> {otc.output = "masked"}, tensor<2x5xf32> {otc.output = "hot"},
        tensor<2x3x7xf32> {otc.output = "padded"}) {
  %m = graph.trilu %x {k = 1 : i64, upper = true} : tensor<2x3x3xf32>
  %h = graph.one_hot %y {axis = 1 : i64, depth = 5 : i64, off_value = 0.0 : f32, on_value = 1.0 : f32} : tensor<2xi64> -> tensor<2x5xf32>
  %p = graph.pad %x {mode = "reflect", pads_begin = array<i64: 0, 0, 2>, pads_end = array<i64: 0, 0, 2>} : tensor<2x3x3xf32> -> tensor<2x3x7xf32>
  return %m, %h, %p : tensor<2x3x3xf32>, tensor<2x5xf32>, tensor<2x3x7xf32>
}
