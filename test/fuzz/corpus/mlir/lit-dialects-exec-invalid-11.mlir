func.func @misspelled_attr(%a: memref<4x4xf32>, %y: memref<4x4xf32>) {
  exec.kernel "gemm" ins(%a, %a : memref<4x4xf32>, memref<4x4xf32>) outs(%y : memref<4x4xf32>) {transb = true}
  return
}
