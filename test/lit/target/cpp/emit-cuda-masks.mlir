// RUN: otc-opt %s --otc-lower-to-exec=target=cuda --otc-plan-memory --otc-place-waits | otc-translate --emit-cuda-cpp | FileCheck %s

// --target cuda: what a language model's masks and pooling index need (the
// last non-padding token: compare, logical, not, cast, arg_reduce of int64)
// calls the CUDA twins.
// CHECK-LABEL: static int otc_eval_step(
// CHECK: otckd_compare(OTCK_CMP_GREATER, 7,
// CHECK: otckd_logic(OTCK_LOGIC_AND,
// CHECK: otckd_not(8,
// CHECK: otckd_cast(8, 9, {{v[0-9]+}}, 7,
// CHECK: otckd_arg_reduce_i64(1, 2, 4, 1, 0,
// CHECK-NOT: otck_
// CHECK: return otc_cuda_status(OTC_STEP_OK);
func.func @eval_step(%ids: tensor<2x4xi64> {otc.input = "ids", otc.role = "data"},
                     %keep: tensor<2x4xi1> {otc.input = "keep", otc.role = "data"})
    -> (tensor<2xi64> {otc.output = "last"}) {
  %zero = graph.constant dense<0> : tensor<i64>
  %nz = graph.compare "gt" %ids, %zero : (tensor<2x4xi64>, tensor<i64>) -> tensor<2x4xi1>
  %both = graph.logical "and" %nz, %keep : (tensor<2x4xi1>, tensor<2x4xi1>) -> tensor<2x4xi1>
  %pad = graph.not %both : tensor<2x4xi1>
  %i = graph.cast %pad : tensor<2x4xi1> -> tensor<2x4xi64>
  %last = graph.arg_reduce "max" %i {axis = 1 : i64, keepdims = false, select_last_index = false} : tensor<2x4xi64> -> tensor<2xi64>
  return %last : tensor<2xi64>
}
