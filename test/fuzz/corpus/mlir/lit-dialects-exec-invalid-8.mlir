func.func @missing_attr(%a: memref<4xf32>) {
  exec.kernel "transpose" ins(%a : memref<4xf32>) outs(%a : memref<4xf32>)
  return
}
