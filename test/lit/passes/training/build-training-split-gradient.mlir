// RUN: otc-opt %s --split-input-file --otc-build-training | FileCheck %s

// The gradients of a Split's pieces meet in its input as one concatenation,
// in the pieces' order whatever order they arrive in: no zero-filled
// slice_grad per piece, no adds.
// CHECK-LABEL: func.func @train_step(
// CHECK: %[[A:.*]] = graph.mul %arg0, %arg1
// CHECK: %[[S0:.*]] = graph.slice %[[A]] {starts = array<i64: 0, 0>
// CHECK: %[[S1:.*]] = graph.slice %[[A]] {starts = array<i64: 0, 2>
// CHECK: %[[S2:.*]] = graph.slice %[[A]] {starts = array<i64: 0, 3>
// CHECK-NOT: graph.slice_grad
// CHECK: %[[G:.*]] = graph.concat %{{.*}}, %{{.*}}, %{{.*}} {axis = 1 : i64} : (tensor<4x2xf32>, tensor<4x1xf32>, tensor<4x3xf32>) -> tensor<4x6xf32>
// CHECK-NOT: graph.slice_grad
// CHECK: %[[DW:.*]] = graph.mul %[[G]], %arg0
// CHECK: graph.sgd_update %arg1, %[[DW]]
func.func @forward(%x: tensor<4x6xf32> {otc.input = "input", otc.role = "data"},
                   %w: tensor<4x6xf32> {otc.param = "w"}) -> (tensor<4x6xf32> {otc.output = "y"}) {
  %a = graph.mul %x, %w : (tensor<4x6xf32>, tensor<4x6xf32>) -> tensor<4x6xf32>
  %s0 = graph.slice %a {starts = array<i64: 0, 0>, steps = array<i64: 1, 1>} : tensor<4x6xf32> -> tensor<4x2xf32>
  %s1 = graph.slice %a {starts = array<i64: 0, 2>, steps = array<i64: 1, 1>} : tensor<4x6xf32> -> tensor<4x1xf32>
  %s2 = graph.slice %a {starts = array<i64: 0, 3>, steps = array<i64: 1, 1>} : tensor<4x6xf32> -> tensor<4x3xf32>
  %m0 = graph.mul %s0, %s0 : (tensor<4x2xf32>, tensor<4x2xf32>) -> tensor<4x2xf32>
  %m2 = graph.mul %s2, %s2 : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
  %y = graph.concat %m2, %m0, %s1 {axis = 1 : i64} : (tensor<4x3xf32>, tensor<4x2xf32>, tensor<4x1xf32>) -> tensor<4x6xf32>
  return %y : tensor<4x6xf32>
}

// -----

// Two pieces side by side that do not cover the axis: one slice_grad of
// their concatenation, at the first one's start.
// CHECK-LABEL: func.func @train_step(
// CHECK: %[[G:.*]] = graph.concat %{{.*}}, %{{.*}} {axis = 1 : i64} : (tensor<4x2xf32>, tensor<4x3xf32>) -> tensor<4x5xf32>
// CHECK-NEXT: %[[D:.*]] = graph.slice_grad %[[G]] {starts = array<i64: 0, 1>, steps = array<i64: 1, 1>} : tensor<4x5xf32> -> tensor<4x6xf32>
// CHECK-NOT: graph.slice_grad
// CHECK: graph.mul %[[D]], %arg0
func.func @forward(%x: tensor<4x6xf32> {otc.input = "input", otc.role = "data"},
                   %w: tensor<4x6xf32> {otc.param = "w"}) -> (tensor<4x5xf32> {otc.output = "y"}) {
  %a = graph.mul %x, %w : (tensor<4x6xf32>, tensor<4x6xf32>) -> tensor<4x6xf32>
  %s1 = graph.slice %a {starts = array<i64: 0, 1>, steps = array<i64: 1, 1>} : tensor<4x6xf32> -> tensor<4x2xf32>
  %s2 = graph.slice %a {starts = array<i64: 0, 3>, steps = array<i64: 1, 1>} : tensor<4x6xf32> -> tensor<4x3xf32>
  %y = graph.concat %s2, %s1 {axis = 1 : i64} : (tensor<4x3xf32>, tensor<4x2xf32>) -> tensor<4x5xf32>
  return %y : tensor<4x5xf32>
}

// -----

// Pieces with a gap between them are added.
// CHECK-LABEL: func.func @train_step(
// CHECK-DAG: %[[G0:.*]] = graph.slice_grad %{{.*}} {starts = array<i64: 0, 4>, steps = array<i64: 1, 1>} : tensor<4x2xf32> -> tensor<4x6xf32>
// CHECK-DAG: %[[G1:.*]] = graph.slice_grad %{{.*}} {starts = array<i64: 0, 0>, steps = array<i64: 1, 1>} : tensor<4x2xf32> -> tensor<4x6xf32>
// CHECK: %[[D:.*]] = graph.add %[[G0]], %[[G1]]
// CHECK: graph.mul %[[D]], %arg0
func.func @forward(%x: tensor<4x6xf32> {otc.input = "input", otc.role = "data"},
                   %w: tensor<4x6xf32> {otc.param = "w"}) -> (tensor<4x4xf32> {otc.output = "y"}) {
  %a = graph.mul %x, %w : (tensor<4x6xf32>, tensor<4x6xf32>) -> tensor<4x6xf32>
  %s0 = graph.slice %a {starts = array<i64: 0, 0>, steps = array<i64: 1, 1>} : tensor<4x6xf32> -> tensor<4x2xf32>
  %s2 = graph.slice %a {starts = array<i64: 0, 4>, steps = array<i64: 1, 1>} : tensor<4x6xf32> -> tensor<4x2xf32>
  %y = graph.concat %s0, %s2 {axis = 1 : i64} : (tensor<4x2xf32>, tensor<4x2xf32>) -> tensor<4x4xf32>
  return %y : tensor<4x4xf32>
}

// -----

// A piece's gradient that is also another operand's (a sum's): w's gradient
// takes it into a concatenation, v's keeps it.
// CHECK-LABEL: func.func @train_step(
// CHECK: %[[G:.*]] = graph.slice_grad %[[P:.*]] {starts = array<i64: 0, 0>, steps = array<i64: 1, 1>} : tensor<4x2xf32> -> tensor<4x6xf32>
// CHECK: %[[C:.*]] = graph.concat %[[P]], %{{.*}} {axis = 1 : i64} : (tensor<4x2xf32>, tensor<4x4xf32>) -> tensor<4x6xf32>
// CHECK: graph.sgd_update %arg1, %[[C]]
// CHECK: graph.sgd_update %arg2, %[[G]]
func.func @forward(%x: tensor<4x6xf32> {otc.input = "input", otc.role = "data"},
                   %w: tensor<4x6xf32> {otc.param = "w"},
                   %v: tensor<4x6xf32> {otc.param = "v"}) -> (tensor<4x6xf32> {otc.output = "y"}) {
  %r = graph.add %w, %v : (tensor<4x6xf32>, tensor<4x6xf32>) -> tensor<4x6xf32>
  %s = graph.slice %r {starts = array<i64: 0, 0>, steps = array<i64: 1, 1>} : tensor<4x6xf32> -> tensor<4x2xf32>
  %t = graph.slice %w {starts = array<i64: 0, 2>, steps = array<i64: 1, 1>} : tensor<4x6xf32> -> tensor<4x4xf32>
  %c = graph.concat %s, %t {axis = 1 : i64} : (tensor<4x2xf32>, tensor<4x4xf32>) -> tensor<4x6xf32>
  %y = graph.mul %c, %x : (tensor<4x6xf32>, tensor<4x6xf32>) -> tensor<4x6xf32>
  return %y : tensor<4x6xf32>
}
