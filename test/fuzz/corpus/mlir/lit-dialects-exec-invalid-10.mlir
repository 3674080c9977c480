func.func @mistyped_float_width(%a: memref<4xf32>) {
  exec.kernel "leaky_relu" ins(%a : memref<4xf32>) outs(%a : memref<4xf32>) {alpha = 0.1 : f64}
  return
}
