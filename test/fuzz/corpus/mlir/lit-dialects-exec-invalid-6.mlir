func.func @reduce(%a: memref<4xf32>) {
  exec.all_reduce max %a : memref<4xf32>
  return
}
