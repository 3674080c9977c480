// RUN: otc-opt %s --otc-fold-transposes | FileCheck %s

// Attention's head transposes: the products read Q, K and V where the
// projection left them ([batch, tokens, heads, d]) and write their result
// in that layout; no transpose is left.
// CHECK-LABEL: func.func @attention
// CHECK-NOT: "transpose"
// CHECK: exec.kernel "matmul" ins(%arg0, %arg1 : memref<2x8x4x16xf32>, memref<2x8x4x16xf32>) outs(%[[S:.*]] : memref<2x4x8x8xf32>) {permA = array<i64: 0, 2, 1, 3>, permB = array<i64: 0, 2, 3, 1>, transA = false, transB = false}
// CHECK: exec.kernel "matmul" ins(%[[S]], %arg2 : memref<2x4x8x8xf32>, memref<2x8x4x16xf32>) outs(%[[Y:.*]] : memref<2x8x4x16xf32>) {permB = array<i64: 0, 2, 1, 3>, permY = array<i64: 0, 2, 1, 3>, transA = false, transB = false}
// CHECK: return %[[Y]]
func.func @attention(%q: memref<2x8x4x16xf32>, %k: memref<2x8x4x16xf32>, %v: memref<2x8x4x16xf32>) -> memref<2x8x4x16xf32> {
  %qt = exec.alloc : memref<2x4x8x16xf32>
  exec.kernel "transpose" ins(%q : memref<2x8x4x16xf32>) outs(%qt : memref<2x4x8x16xf32>) {perm = array<i64: 0, 2, 1, 3>}
  %kt = exec.alloc : memref<2x4x16x8xf32>
  exec.kernel "transpose" ins(%k : memref<2x8x4x16xf32>) outs(%kt : memref<2x4x16x8xf32>) {perm = array<i64: 0, 2, 3, 1>}
  %vt = exec.alloc : memref<2x4x8x16xf32>
  exec.kernel "transpose" ins(%v : memref<2x8x4x16xf32>) outs(%vt : memref<2x4x8x16xf32>) {perm = array<i64: 0, 2, 1, 3>}
  %s = exec.alloc : memref<2x4x8x8xf32>
  exec.kernel "matmul" ins(%qt, %kt : memref<2x4x8x16xf32>, memref<2x4x16x8xf32>) outs(%s : memref<2x4x8x8xf32>) {transA = false, transB = false}
  %o = exec.alloc : memref<2x4x8x16xf32>
  exec.kernel "matmul" ins(%s, %vt : memref<2x4x8x8xf32>, memref<2x4x8x16xf32>) outs(%o : memref<2x4x8x16xf32>) {transA = false, transB = false}
  %y = exec.alloc : memref<2x8x4x16xf32>
  exec.kernel "transpose" ins(%o : memref<2x4x8x16xf32>) outs(%y : memref<2x8x4x16xf32>) {perm = array<i64: 0, 2, 1, 3>}
  return %y : memref<2x8x4x16xf32>
}

// A result whose columns end up contiguous (K's gradient back to
// [batch, tokens, heads, d]) is computed transposed by the kernel; it folds.
// CHECK-LABEL: func.func @columns
// CHECK-NOT: "transpose"
// CHECK: permY = array<i64: 0, 3, 1, 2>
func.func @columns(%a: memref<2x4x16x8xf32>, %b: memref<2x4x8x8xf32>) -> memref<2x8x4x16xf32> {
  %c = exec.alloc : memref<2x4x16x8xf32>
  exec.kernel "matmul" ins(%a, %b : memref<2x4x16x8xf32>, memref<2x4x8x8xf32>) outs(%c : memref<2x4x16x8xf32>) {transA = false, transB = false}
  %y = exec.alloc : memref<2x8x4x16xf32>
  exec.kernel "transpose" ins(%c : memref<2x4x16x8xf32>) outs(%y : memref<2x8x4x16xf32>) {perm = array<i64: 0, 3, 1, 2>}
  return %y : memref<2x8x4x16xf32>
}

// What stays: a transpose whose input is written after it (the product
// would read the new values), one read by another kernel too (it stays for
// that reader, the product still folds), one whose matrices have no
// contiguous dimension, and a product in bfloat16.
// CHECK-LABEL: func.func @kept
func.func @kept(%x: memref<2x8x4x16xf32>, %w: memref<16x8xf32>, %z: memref<4x2x8x16xf32>) -> (memref<2x4x8x8xf32>, memref<2x4x8x16xf32>, memref<2x4x8x8xf32>, memref<2x4x8x8xf32>) {
  // CHECK: "transpose"
  // CHECK: "matmul" ins(%{{.*}}, %arg1 : memref<2x4x8x16xf32>, memref<16x8xf32>)
  %t = exec.alloc : memref<2x4x8x16xf32>
  exec.kernel "transpose" ins(%x : memref<2x8x4x16xf32>) outs(%t : memref<2x4x8x16xf32>) {perm = array<i64: 0, 2, 1, 3>}
  exec.kernel "relu" ins(%x : memref<2x8x4x16xf32>) outs(%x : memref<2x8x4x16xf32>)
  %p = exec.alloc : memref<2x4x8x8xf32>
  exec.kernel "matmul" ins(%t, %w : memref<2x4x8x16xf32>, memref<16x8xf32>) outs(%p : memref<2x4x8x8xf32>) {transA = false, transB = false}
  // CHECK: "transpose"
  // CHECK: "neg"
  // CHECK: "matmul" ins(%arg2, %arg1 : memref<4x2x8x16xf32>, memref<16x8xf32>) {{.*}}permA = array<i64: 1, 0, 2, 3>
  %u = exec.alloc : memref<2x4x8x16xf32>
  exec.kernel "transpose" ins(%z : memref<4x2x8x16xf32>) outs(%u : memref<2x4x8x16xf32>) {perm = array<i64: 1, 0, 2, 3>}
  %n = exec.alloc : memref<2x4x8x16xf32>
  exec.kernel "neg" ins(%u : memref<2x4x8x16xf32>) outs(%n : memref<2x4x8x16xf32>)
  %r = exec.alloc : memref<2x4x8x8xf32>
  exec.kernel "matmul" ins(%u, %w : memref<2x4x8x16xf32>, memref<16x8xf32>) outs(%r : memref<2x4x8x8xf32>) {transA = false, transB = false}
  // [2, 8, 4, 16] read as [2, 16, 8, 4]: neither of the matrices'
  // dimensions (tokens, heads) is the contiguous one.
  // CHECK: "transpose"
  // CHECK: "matmul" ins(%{{.*}}, %{{.*}} : memref<2x16x8x4xf32>
  %v = exec.alloc : memref<2x16x8x4xf32>
  exec.kernel "transpose" ins(%x : memref<2x8x4x16xf32>) outs(%v : memref<2x16x8x4xf32>) {perm = array<i64: 0, 3, 1, 2>}
  %w4 = exec.alloc : memref<4x8xf32>
  %s = exec.alloc : memref<2x16x8x8xf32>
  exec.kernel "matmul" ins(%v, %w4 : memref<2x16x8x4xf32>, memref<4x8xf32>) outs(%s : memref<2x16x8x8xf32>) {transA = false, transB = false}
  // CHECK: "transpose"
  // CHECK: "matmul" {{.*}}compute = "bf16"
  %b = exec.alloc : memref<2x4x8x16xf32>
  exec.kernel "transpose" ins(%z : memref<4x2x8x16xf32>) outs(%b : memref<2x4x8x16xf32>) {perm = array<i64: 1, 0, 2, 3>}
  %q = exec.alloc : memref<2x4x8x8xf32>
  %ws = exec.alloc : memref<4096xi8>
  exec.kernel "matmul" ins(%b, %w : memref<2x4x8x16xf32>, memref<16x8xf32>) outs(%q, %ws : memref<2x4x8x8xf32>, memref<4096xi8>) {compute = "bf16", transA = false, transB = false}
  return %p, %n, %r, %q : memref<2x4x8x8xf32>, memref<2x4x8x16xf32>, memref<2x4x8x8xf32>, memref<2x4x8x8xf32>
}
