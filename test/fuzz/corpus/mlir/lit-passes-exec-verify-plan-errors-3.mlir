module attributes {otc.arena_bytes = 1024 : i64, otc.buffers = [{name = "w", offset = 0 : i64, role = "grad", type = memref<16xf32>}]} {
  func.func @train_step(%arena: memref<?xi8>) {
    %a = exec.view %arena[0] : memref<?xi8> -> memref<8xf32>
    exec.kernel "relu" ins(%a : memref<8xf32>) outs(%a : memref<8xf32>)
    return
  }
}
