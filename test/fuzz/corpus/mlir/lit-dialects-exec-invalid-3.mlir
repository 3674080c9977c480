func.func @misaligned(%arena: memref<?xi8>) {
  %x = exec.view %arena[6] : memref<?xi8> -> memref<4xf32>
  return
}
