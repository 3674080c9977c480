module attributes {otc.arena_bytes = 4096 : i64, otc.buffers = [
    {name = "w", offset = 0 : i64, role = "param", type = memref<16xf32>},
    {name = "bucket0", offset = 64 : i64, role = "grad", type = memref<32xf32>},
    {kind = "residual", name = "bucket0.residual", offset = 192 : i64, role = "state", type = memref<32xf32>},
    {kind = "data", name = "x", offset = 320 : i64, role = "input", type = memref<2x8xf32>},
    {name = "loss", offset = 384 : i64, role = "output", type = memref<f32>}]} {
  func.func @train_step(%arena: memref<?xi8>) {
    %x = exec.view %arena[320] : memref<?xi8> -> memref<2x8xf32>
    %w = exec.view %arena[0] : memref<?xi8> -> memref<16xf32>
    %t0 = exec.view %arena[512] : memref<?xi8> -> memref<2x8xf32>
    exec.kernel "relu" ins(%x : memref<2x8xf32>) outs(%t0 : memref<2x8xf32>)
    %g0 = exec.view %arena[64] : memref<?xi8> -> memref<16xf32>
    %g1 = exec.view %arena[128] : memref<?xi8> -> memref<16xf32>
    exec.kernel "neg" ins(%w : memref<16xf32>) outs(%g0 : memref<16xf32>)
    exec.kernel "neg" ins(%g0 : memref<16xf32>) outs(%g1 : memref<16xf32>)
    %b = exec.view %arena[64] : memref<?xi8> -> memref<32xf32>
    %r = exec.view %arena[192] : memref<?xi8> -> memref<32xf32>
    exec.compressed_all_reduce %b, %r {method = "topk-int8", ratio = 1.000000e-01 : f32, ratio_min = 1.000000e-02 : f32, block_size = 256 : i64, adaptive = false, warmup_steps = 0 : i64, bucket = 0 : i64} : memref<32xf32>, memref<32xf32>
    %w2 = exec.view %arena[0] : memref<?xi8> -> memref<16xf32>
    exec.kernel "sgd_update" ins(%g0 : memref<16xf32>) outs(%w2 : memref<16xf32>)
    %t1 = exec.view %arena[4032] : memref<?xi8> -> memref<16xf32>
    exec.kernel "relu" ins(%w2 : memref<16xf32>) outs(%t1 : memref<16xf32>)
    return
  }
}
