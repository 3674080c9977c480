func.func @annotation(%a: memref<4xf32>) {
  exec.kernel "relu" ins(%a : memref<4xf32>) outs(%a : memref<4xf32>) {otc.note = "kept"}
  exec.kernel "sgd_update" ins(%a : memref<4xf32>) outs(%a : memref<4xf32>) {lr_scale = "0.1"}
  return
}
