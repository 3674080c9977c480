func.func @unknown(%a: memref<4xf32>) {
  exec.kernel "gelu_fast" ins(%a : memref<4xf32>) outs(%a : memref<4xf32>)
  return
}
