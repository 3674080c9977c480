// RUN: otc-opt %s --otc-verify-plan | FileCheck %s

// What a valid plan may do: reuse bytes once their previous value is dead,
// view a persistent buffer more than once, update a buffer in place, keep
// gradients inside their bucket, give each function its own temporaries
// in the same bytes, and read a temporary's bytes under another shape. The
// module passes through unchanged.
// CHECK-LABEL: func.func @train_step
// CHECK-COUNT-2: exec.kernel "relu"
// CHECK: exec.compressed_all_reduce
// CHECK: exec.kernel "sgd_update"
// CHECK-LABEL: func.func @eval_step
module attributes {otc.arena_bytes = 2048 : i64, otc.buffers = [
    {name = "w", offset = 0 : i64, role = "param", type = memref<16xf32>},
    {name = "bucket0", offset = 64 : i64, role = "grad", type = memref<32xf32>},
    {kind = "residual", name = "bucket0.residual", offset = 192 : i64, role = "state", type = memref<32xf32>}]} {
  func.func @train_step(%arena: memref<?xi8>) {
    %w = exec.view %arena[0] : memref<?xi8> -> memref<16xf32>
    %t0 = exec.view %arena[512] : memref<?xi8> -> memref<64xf32>
    exec.kernel "relu" ins(%w : memref<16xf32>) outs(%t0 : memref<64xf32>)
    // Two gradients side by side in the bucket.
    %g0 = exec.view %arena[64] : memref<?xi8> -> memref<16xf32>
    %g1 = exec.view %arena[128] : memref<?xi8> -> memref<16xf32>
    exec.kernel "neg" ins(%t0 : memref<64xf32>) outs(%g0 : memref<16xf32>)
    // %t0 is dead: its bytes hold the next temporary.
    %t1 = exec.view %arena[512] : memref<?xi8> -> memref<64xf32>
    exec.kernel "relu" ins(%g0 : memref<16xf32>) outs(%t1 : memref<64xf32>)
    exec.kernel "neg" ins(%t1 : memref<64xf32>) outs(%g1 : memref<16xf32>)
    %b = exec.view %arena[64] : memref<?xi8> -> memref<32xf32>
    %r = exec.view %arena[192] : memref<?xi8> -> memref<32xf32>
    exec.compressed_all_reduce %b, %r {method = "topk-int8", ratio = 1.000000e-01 : f32, ratio_min = 1.000000e-02 : f32, block_size = 256 : i64, adaptive = false, warmup_steps = 0 : i64, bucket = 0 : i64} : memref<32xf32>, memref<32xf32>
    %g0r = exec.view %arena[64] : memref<?xi8> -> memref<16xf32>
    %w2 = exec.view %arena[0] : memref<?xi8> -> memref<16xf32>
    exec.kernel "sgd_update" ins(%g0r : memref<16xf32>) outs(%w2 : memref<16xf32>) 
    return
  }
  func.func @eval_step(%arena: memref<?xi8>) {
    %w = exec.view %arena[0] : memref<?xi8> -> memref<16xf32>
    %t = exec.view %arena[512] : memref<?xi8> -> memref<16xf32>
    exec.kernel "relu" ins(%w : memref<16xf32>) outs(%t : memref<16xf32>)
    // A reshape: %u views %t's bytes, nothing writes them while both live.
    %u = exec.view %arena[512] : memref<?xi8> -> memref<4x4xf32>
    %v = exec.view %arena[768] : memref<?xi8> -> memref<4x4xf32>
    exec.kernel "neg" ins(%u : memref<4x4xf32>) outs(%v : memref<4x4xf32>)
    %x = exec.view %arena[1024] : memref<?xi8> -> memref<16xf32>
    exec.kernel "relu" ins(%t : memref<16xf32>) outs(%x : memref<16xf32>)
    return
  }
}
