// RUN: otc-opt %s --otc-build-training="optimizer=momentum accumulate=4" | FileCheck %s
// RUN: otc-opt %s --otc-training-pipeline="optimizer=momentum accumulate=4 world-size=2" --otc-exec-pipeline | otc-translate --emit-cpp | FileCheck %s --check-prefix=CPP

// @accumulate_step adds each gradient to its accumulator and updates
// nothing else; @train_step adds the last micro-batch's, takes the mean,
// updates and zeroes the accumulators.
// CHECK: otc.training = {accumulate = 4 : i64
// CHECK-LABEL: func.func @train_step(
// CHECK-SAME: %[[W:[^:]*]]: tensor<3x8xf32> {otc.param = "fc.weight"}
// CHECK-SAME: %[[ACC:[^:]*]]: tensor<3x8xf32> {otc.role = "accumulator", otc.state = "fc.weight.grad_accum"}
// CHECK: %[[INV:.*]] = graph.constant dense<2.500000e-01>
// CHECK: %[[SUM:.*]] = graph.add %[[ACC]],
// CHECK: %[[MEAN:.*]] = graph.mul %[[SUM]], %[[INV]]
// CHECK: %[[ZERO:.*]] = graph.expand %{{.*}} : tensor<f32> -> tensor<3x8xf32>
// CHECK: graph.momentum_update %[[W]], %[[MEAN]]
// CHECK-LABEL: func.func @accumulate_step(
// CHECK-SAME: %[[AW:[^:]*]]: tensor<3x8xf32> {otc.param = "fc.weight"}
// CHECK-SAME: %[[AACC:[^:]*]]: tensor<3x8xf32> {otc.role = "accumulator", otc.state = "fc.weight.grad_accum"}
// CHECK-SAME: -> (tensor<3x8xf32> {otc.updates = 6 : i64}, tensor<3xf32> {otc.updates = 7 : i64}, tensor<f32> {otc.output = "loss"})
// CHECK-NOT: momentum_update
// CHECK: graph.add %[[AACC]],
// CHECK-NOT: momentum_update
// CHECK: return
// Only the step communicates; the entry table names both.
// CPP-LABEL: static int otc_train_step(
// CPP: ctx->all_reduce_mean_f32
// CPP-LABEL: static int otc_accumulate_step(
// CPP-NOT: all_reduce
// CPP: return OTC_STEP_OK;
// CPP: &otc_train_step, {{.*}}, OTC_DEVICE_CPU, &otc_accumulate_step, 4, {{[0-9]+}}, kSites};
func.func @forward(%x: tensor<4x8xf32> {otc.input = "input", otc.role = "data"},
                   %w: tensor<3x8xf32> {otc.param = "fc.weight"},
                   %b: tensor<3xf32> {otc.param = "fc.bias"}) -> (tensor<4x3xf32> {otc.output = "logits"}) {
  %h = graph.gemm %x, %w, %b {transB = true} : (tensor<4x8xf32>, tensor<3x8xf32>, tensor<3xf32>) -> tensor<4x3xf32>
  return %h : tensor<4x3xf32>
}
