module attributes {otc.arena_bytes = 4096 : i64, otc.buffers = []} {
  func.func @train_step(%arena: memref<?xi8>) {
    %x = exec.view %arena[0] : memref<?xi8> -> memref<1x2x6x6xf32>
    %w = exec.view %arena[320] : memref<?xi8> -> memref<2x2x3x3xf32>
    %y = exec.view %arena[640] : memref<?xi8> -> memref<1x2x4x4xf32>
    %ws = exec.view %arena[768] : memref<?xi8> -> memref<4xi8>
    exec.kernel "conv" ins(%x, %w : memref<1x2x6x6xf32>, memref<2x2x3x3xf32>) outs(%y, %ws : memref<1x2x4x4xf32>, memref<4xi8>) {dilations = array<i64: 1, 1>, group = 1 : i64, pads_begin = array<i64: 0, 0>, pads_end = array<i64: 0, 0>, strides = array<i64: 1, 1>}
    return
  }
}
