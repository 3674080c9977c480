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

// -----

// Transposes of the last two dimensions fold into the products that read
// them: a Linear layer's MatMul(x, Transpose(W)) reads W with transB, a
// Gemm's transposed operands flip its flags, and a transposed product
// without a C term is the product of its operands swapped.
// CHECK-LABEL: func.func @transposes_into_products(
// CHECK-SAME: %[[X:[^:]*]]: tensor<2x5x4xf32>, %[[W:[^:]*]]: tensor<3x4xf32>, %[[A:[^:]*]]: tensor<4x5xf32>
// CHECK-NOT: graph.transpose
// CHECK-DAG: graph.matmul %[[X]], %[[W]] {transB = true} : (tensor<2x5x4xf32>, tensor<3x4xf32>) -> tensor<2x5x3xf32>
// CHECK-DAG: graph.gemm %[[A]], %[[W]] {transA = true, transB = true} : (tensor<4x5xf32>, tensor<3x4xf32>) -> tensor<5x3xf32>
// CHECK-DAG: graph.gemm %[[W]], %[[A]] {alpha = 2.000000e+00 : f32} : (tensor<3x4xf32>, tensor<4x5xf32>) -> tensor<3x5xf32>
// CHECK-DAG: graph.matmul %[[W]], %[[X]] {transB = true} : (tensor<3x4xf32>, tensor<2x5x4xf32>) -> tensor<2x3x5xf32>
// CHECK-NOT: graph.transpose
func.func @transposes_into_products(%x: tensor<2x5x4xf32>, %w: tensor<3x4xf32>,
                                    %a: tensor<4x5xf32>)
    -> (tensor<2x5x3xf32>, tensor<5x3xf32>, tensor<3x5xf32>, tensor<2x3x5xf32>) {
  %wt = graph.transpose %w {perm = array<i64: 1, 0>} : tensor<3x4xf32> -> tensor<4x3xf32>
  %y = graph.matmul %x, %wt : (tensor<2x5x4xf32>, tensor<4x3xf32>) -> tensor<2x5x3xf32>
  %at = graph.transpose %a {perm = array<i64: 1, 0>} : tensor<4x5xf32> -> tensor<5x4xf32>
  %g = graph.gemm %at, %wt {transB = false} : (tensor<5x4xf32>, tensor<4x3xf32>) -> tensor<5x3xf32>
  %h = graph.gemm %a, %w {alpha = 2.0 : f32, transA = true, transB = true} : (tensor<4x5xf32>, tensor<3x4xf32>) -> tensor<5x3xf32>
  %ht = graph.transpose %h {perm = array<i64: 1, 0>} : tensor<5x3xf32> -> tensor<3x5xf32>
  %m = graph.matmul %x, %w {transB = true} : (tensor<2x5x4xf32>, tensor<3x4xf32>) -> tensor<2x5x3xf32>
  %mt = graph.transpose %m {perm = array<i64: 0, 2, 1>} : tensor<2x5x3xf32> -> tensor<2x3x5xf32>
  return %y, %g, %ht, %mt : tensor<2x5x3xf32>, tensor<5x3xf32>, tensor<3x5xf32>, tensor<2x3x5xf32>
}

// -----

// What stays: a transposed product another op also reads, a product with a
// C term, a transpose that moves a batch dimension; two transposes compose
// into one, or into none when they cancel.
// CHECK-LABEL: func.func @transposes_kept(
// CHECK-SAME: %[[X:[^:]*]]: tensor<2x5x4xf32>, %[[A:[^:]*]]: tensor<4x5xf32>, %[[C:[^:]*]]: tensor<5xf32>
// CHECK-DAG: %[[P:.*]] = graph.gemm %[[A]], %[[A]] {transA = true}
// CHECK-DAG: graph.transpose %[[P]] {perm = array<i64: 1, 0>}
// CHECK-DAG: %[[Q:.*]] = graph.gemm %[[A]], %[[A]], %[[C]] {transA = true}
// CHECK-DAG: graph.transpose %[[Q]] {perm = array<i64: 1, 0>}
// CHECK-DAG: graph.transpose %[[X]] {perm = array<i64: 1, 2, 0>} : tensor<2x5x4xf32> -> tensor<5x4x2xf32>
// CHECK-DAG: graph.matmul %{{.*}}, %[[A]] : (tensor<5x2x4xf32>, tensor<4x5xf32>) -> tensor<5x2x5xf32>
// CHECK: return %{{.*}}, %[[P]], %{{.*}}, %{{.*}}, %{{.*}}, %[[X]]
func.func @transposes_kept(%x: tensor<2x5x4xf32>, %a: tensor<4x5xf32>, %c: tensor<5xf32>)
    -> (tensor<5x5xf32>, tensor<5x5xf32>, tensor<5x5xf32>, tensor<5x2x5xf32>,
        tensor<5x4x2xf32>, tensor<2x5x4xf32>) {
  %p = graph.gemm %a, %a {transA = true} : (tensor<4x5xf32>, tensor<4x5xf32>) -> tensor<5x5xf32>
  %pt = graph.transpose %p {perm = array<i64: 1, 0>} : tensor<5x5xf32> -> tensor<5x5xf32>
  %q = graph.gemm %a, %a, %c {transA = true} : (tensor<4x5xf32>, tensor<4x5xf32>, tensor<5xf32>) -> tensor<5x5xf32>
  %qt = graph.transpose %q {perm = array<i64: 1, 0>} : tensor<5x5xf32> -> tensor<5x5xf32>
  %xb = graph.transpose %x {perm = array<i64: 1, 0, 2>} : tensor<2x5x4xf32> -> tensor<5x2x4xf32>
  %m = graph.matmul %xb, %a : (tensor<5x2x4xf32>, tensor<4x5xf32>) -> tensor<5x2x5xf32>
  %xc = graph.transpose %xb {perm = array<i64: 0, 2, 1>} : tensor<5x2x4xf32> -> tensor<5x4x2xf32>
  %back = graph.transpose %xb {perm = array<i64: 1, 0, 2>} : tensor<5x2x4xf32> -> tensor<2x5x4xf32>
  return %pt, %p, %qt, %m, %xc, %back : tensor<5x5xf32>, tensor<5x5xf32>, tensor<5x5xf32>, tensor<5x2x5xf32>, tensor<5x4x2xf32>, tensor<2x5x4xf32>
}
