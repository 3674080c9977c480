// RUN: otc-opt %s --otc-build-inference | FileCheck %s
// RUN: otc-opt %s --otc-build-inference --otc-lower-to-exec --otc-plan-memory | FileCheck %s --check-prefix=PLAN

// @forward becomes @eval_step (an explicit training-mode dropout stays);
// outputs keep their ONNX names. An output that is an input, and an output
// returned twice, get buffers of their own.
// CHECK-NOT: func.func @forward
// CHECK: func.func @eval_step(%[[X:.*]]: tensor<4x8xf32> {otc.input = "x", otc.role = "data"})
// CHECK: %[[D:.*]], %{{.*}} = graph.dropout %[[X]]
// CHECK: %[[R:.*]] = graph.relu %[[D]]
// CHECK: return %[[R]], %[[X]], %[[R]]
func.func @forward(%x: tensor<4x8xf32> {otc.input = "x", otc.role = "data"})
    -> (tensor<4x8xf32> {otc.output = "y"}, tensor<4x8xf32> {otc.output = "same"},
        tensor<4x8xf32> {otc.output = "again"}) {
  %d, %mask = graph.dropout %x {ratio = 0.5 : f32, stream = 0 : i64} : tensor<4x8xf32>
  %r = graph.relu %d : tensor<4x8xf32>
  return %r, %x, %r : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>
}

// PLAN: otc.buffers = [
// PLAN-SAME: {kind = "data", name = "x", offset = 0 : i64, role = "input", type = memref<4x8xf32>}
// PLAN-SAME: {name = "y", offset = 128 : i64, role = "output", type = memref<4x8xf32>}
// PLAN-SAME: {name = "same", offset = 256 : i64, role = "output", type = memref<4x8xf32>}
// PLAN-SAME: {name = "again", offset = 384 : i64, role = "output", type = memref<4x8xf32>}
// PLAN: %[[X:.*]] = exec.view %{{.*}}[0]
// PLAN: exec.kernel "dropout" ins(%[[X]] : memref<4x8xf32>)
// PLAN: %[[Y:.*]] = exec.view %{{.*}}[128]
// PLAN: exec.kernel "relu" ins(%{{.*}} : memref<4x8xf32>) outs(%[[Y]] : memref<4x8xf32>)
// PLAN: exec.kernel "copy" ins(%[[X]] : memref<4x8xf32>) outs(%{{.*}} : memref<4x8xf32>)
// PLAN: exec.kernel "copy" ins(%[[Y]] : memref<4x8xf32>) outs(%{{.*}} : memref<4x8xf32>)
