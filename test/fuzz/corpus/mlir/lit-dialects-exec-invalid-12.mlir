func.func @attr_on_plain_kernel(%a: memref<4xf32>) {
  exec.kernel "relu" ins(%a : memref<4xf32>) outs(%a : memref<4xf32>) {alpha = 1.0 : f32}
  return
}
