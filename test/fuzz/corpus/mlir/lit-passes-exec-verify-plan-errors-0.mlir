module attributes {otc.arena_bytes = 1024 : i64, otc.buffers = [{name = "w", offset = 0 : i64, role = "param", type = memref<16xf32>}]} {
  func.func @train_step(%arena: memref<?xi8>) {
    %w = exec.view %arena[0] : memref<?xi8> -> memref<16xf32>
    %a = exec.view %arena[256] : memref<?xi8> -> memref<64xf32>
    %b = exec.view %arena[384] : memref<?xi8> -> memref<64xf32>
    %c = exec.view %arena[640] : memref<?xi8> -> memref<64xf32>
    exec.kernel "relu" ins(%w : memref<16xf32>) outs(%a : memref<64xf32>)
    exec.kernel "neg" ins(%w : memref<16xf32>) outs(%b : memref<64xf32>)
    exec.kernel "add" ins(%a, %b : memref<64xf32>, memref<64xf32>) outs(%c : memref<64xf32>)
    return
  }
}
