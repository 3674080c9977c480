module attributes {otc.arena_bytes = 1024 : i64, otc.buffers = [{name = "w", offset = 0 : i64, role = "param", type = memref<16xf32>}]} {
  func.func @eval_step(%arena: memref<?xi8>) {
    %a = exec.view %arena[32] : memref<?xi8> -> memref<16xf32>
    exec.kernel "relu" ins(%a : memref<16xf32>) outs(%a : memref<16xf32>)
    return
  }
}
