func.func @ends_too_far(%arena: memref<?xi8>) {
  %x = exec.view %arena[9223372036854775800] : memref<?xi8> -> memref<4xf32>
  return
}
