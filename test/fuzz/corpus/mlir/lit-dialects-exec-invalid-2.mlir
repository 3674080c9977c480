func.func @gemm_arity(%a: memref<4xf32>) {
  exec.kernel "gemm" ins(%a : memref<4xf32>) outs(%a : memref<4xf32>)
  return
}
