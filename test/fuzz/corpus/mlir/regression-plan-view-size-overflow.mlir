module attributes {otc.arena_bytes = 9223372036854775807 : i64, otc.buffers = []} {
  func.func @train_step(%arena: memref<?xi8>) {
    %a = exec.view %arena[9223372036854775000] : memref<?xi8> -> memref<4611686018427387904xf32>
    %b = exec.view %arena[0] : memref<?xi8> -> memref<64xf32>
    exec.kernel "relu" ins(%a : memref<4611686018427387904xf32>) outs(%b : memref<64xf32>)
    return
  }
}
