func.func @too_large(%arena: memref<?xi8>) {
  %x = exec.view %arena[0] : memref<?xi8> -> memref<4611686018427387904xf32>
  return
}
