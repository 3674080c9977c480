// RUN: otc-opt %s --canonicalize --split-input-file | FileCheck %s

// The graph ops that fold: a reshape, cast, expand, slice or reduce_sum_to
// to the type it already has is its input; x + 0 without broadcasting is x.
// CHECK-LABEL: func.func @identities(
// CHECK-SAME: %[[X:.*]]: tensor<4x3xf32>
// CHECK-NEXT: return %[[X]], %[[X]], %[[X]], %[[X]], %[[X]], %[[X]]
func.func @identities(%x: tensor<4x3xf32>)
    -> (tensor<4x3xf32>, tensor<4x3xf32>, tensor<4x3xf32>, tensor<4x3xf32>,
        tensor<4x3xf32>, tensor<4x3xf32>) {
  %r = graph.reshape %x : tensor<4x3xf32> -> tensor<4x3xf32>
  %c = graph.cast %x : tensor<4x3xf32> -> tensor<4x3xf32>
  %e = graph.expand %x : tensor<4x3xf32> -> tensor<4x3xf32>
  %s = graph.slice %x {starts = array<i64: 0, 0>, steps = array<i64: 1, 1>} : tensor<4x3xf32> -> tensor<4x3xf32>
  %t = graph.reduce_sum_to %x : tensor<4x3xf32> -> tensor<4x3xf32>
  %zero = graph.constant dense<0.0> : tensor<3xf32>
  %a = graph.add %x, %zero : (tensor<4x3xf32>, tensor<3xf32>) -> tensor<4x3xf32>
  return %r, %c, %e, %s, %t, %a : tensor<4x3xf32>, tensor<4x3xf32>, tensor<4x3xf32>, tensor<4x3xf32>, tensor<4x3xf32>, tensor<4x3xf32>
}

// -----

// What must not fold: a real reshape of a value (a constant's folds to a
// constant of the new shape), x + 0 that broadcasts x, x + 1, a strided
// slice.
// CHECK-LABEL: func.func @kept(
// CHECK-DAG: %[[C:.*]] = graph.constant dense<{{\[}}[1.000000e+00, 2.000000e+00], [3.000000e+00, 4.000000e+00]]> : tensor<2x2xf32>
// CHECK-DAG: graph.reshape %{{.*}} : tensor<4x3xf32> -> tensor<3x4xf32>
// CHECK-DAG: graph.add %{{.*}} : (tensor<3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
// CHECK-DAG: graph.add %{{.*}} : (tensor<4x3xf32>, tensor<3xf32>) -> tensor<4x3xf32>
// CHECK-DAG: graph.slice %{{.*}} {starts = array<i64: 0, 0>, steps = array<i64: 2, 1>} : tensor<4x3xf32> -> tensor<2x3xf32>
// CHECK: return %{{.*}}, %[[C]],
func.func @kept(%x: tensor<4x3xf32>, %v: tensor<3xf32>)
    -> (tensor<3x4xf32>, tensor<2x2xf32>, tensor<4x3xf32>, tensor<4x3xf32>,
        tensor<2x3xf32>) {
  %r = graph.reshape %x : tensor<4x3xf32> -> tensor<3x4xf32>
  %k = graph.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>
  %kr = graph.reshape %k : tensor<4xf32> -> tensor<2x2xf32>
  %zero = graph.constant dense<0.0> : tensor<4x3xf32>
  %b = graph.add %v, %zero : (tensor<3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
  %one = graph.constant dense<1.0> : tensor<3xf32>
  %p = graph.add %x, %one : (tensor<4x3xf32>, tensor<3xf32>) -> tensor<4x3xf32>
  %s = graph.slice %x {starts = array<i64: 0, 0>, steps = array<i64: 2, 1>} : tensor<4x3xf32> -> tensor<2x3xf32>
  return %r, %kr, %b, %p, %s : tensor<3x4xf32>, tensor<2x2xf32>, tensor<4x3xf32>, tensor<4x3xf32>, tensor<2x3xf32>
}
