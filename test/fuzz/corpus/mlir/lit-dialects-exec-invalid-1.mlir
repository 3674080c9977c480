func.func @arity(%a: memref<4xf32>) {
  exec.kernel "relu" ins(%a, %a : memref<4xf32>, memref<4xf32>) outs(%a : memref<4xf32>)
  return
}
