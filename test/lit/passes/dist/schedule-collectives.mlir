// RUN: otc-opt %s --otc-schedule-collectives | FileCheck %s

// Each collective moves up to just after its operands; the compute keeps
// its order (moving it would lengthen activation lifetimes). Collectives
// keep theirs (every rank must run them in the same order).

// CHECK-LABEL: func.func @train_step
// CHECK-NEXT: %[[H:.*]] = graph.neg %arg0
// CHECK-NEXT: %[[X:.*]] = graph.exp %arg0
// CHECK-NEXT: %[[G2:.*]] = graph.relu %arg1
// CHECK-NEXT: %[[A2:.*]] = dist.all_reduce mean %[[G2]]
// CHECK-NEXT: %[[G1:.*]] = graph.tanh %[[H]]
// CHECK-NEXT: %[[A1:.*]] = dist.all_reduce mean %[[G1]]
// CHECK-NEXT: graph.sgd_update %arg1, %[[A2]]
// CHECK-NEXT: graph.sgd_update %arg0, %[[A1]]
// CHECK-NEXT: return
func.func @train_step(%w1: tensor<4xf32>, %w2: tensor<4xf32>)
    -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  // Input-gradient-like work first, as reverse mode emits it.
  %h = graph.neg %w1 : tensor<4xf32>
  %x = graph.exp %w1 : tensor<4xf32>
  %g2 = graph.relu %w2 : tensor<4xf32>
  %g1 = graph.tanh %h : tensor<4xf32>
  %a2 = dist.all_reduce mean %g2 : tensor<4xf32>
  %a1 = dist.all_reduce mean %g1 : tensor<4xf32>
  %u2 = graph.sgd_update %w2, %a2 : tensor<4xf32>
  %u1 = graph.sgd_update %w1, %a1 : tensor<4xf32>
  return %u1, %u2, %x : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}

// Nothing to move: a collective whose operands come last stays.
// CHECK-LABEL: func.func @in_order
// CHECK-NEXT: graph.neg
// CHECK-NEXT: dist.all_reduce
// CHECK-NEXT: return
func.func @in_order(%w: tensor<4xf32>) -> tensor<4xf32> {
  %g = graph.neg %w : tensor<4xf32>
  %a = dist.all_reduce mean %g : tensor<4xf32>
  return %a : tensor<4xf32>
}

// A broadcast stays after the updates even when its operand needs none
// (an SDP non-owner's): every rank agrees on finiteness before its first
// update, and that must come before the broadcasts on all of them.
// CHECK-LABEL: func.func @broadcast_stays
// CHECK-NEXT: graph.neg
// CHECK-NEXT: dist.all_reduce
// CHECK-NEXT: graph.sgd_update
// CHECK-NEXT: dist.broadcast
// CHECK-NEXT: return
func.func @broadcast_stays(%w: tensor<4xf32>, %f: tensor<4xf32>)
    -> (tensor<4xf32>, tensor<4xf32>) {
  %g = graph.neg %w : tensor<4xf32>
  %a = dist.all_reduce mean %g : tensor<4xf32>
  %u = graph.sgd_update %w, %a : tensor<4xf32>
  %b = dist.broadcast %f {root = 0 : i64} : tensor<4xf32>
  return %u, %b : tensor<4xf32>, tensor<4xf32>
}
