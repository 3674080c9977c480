module attributes {otc.arena_bytes = 1024 : i64, otc.buffers = []} {
  func.func @train_step(%arena: memref<?xi8>) {
    %a = exec.view %arena[0] : memref<?xi8> -> memref<64xf32>
    %b = exec.view %arena[0] : memref<?xi8> -> memref<64xf32>
    exec.kernel "relu" ins(%a : memref<64xf32>) outs(%b : memref<64xf32>)
    return
  }
}
