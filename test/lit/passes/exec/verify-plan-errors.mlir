// RUN: otc-opt %s --split-input-file --verify-diagnostics --otc-verify-plan

// A kernel writes a temporary over bytes that another one still holds.
module attributes {otc.arena_bytes = 1024 : i64, otc.buffers = [{name = "w", offset = 0 : i64, role = "param", type = memref<16xf32>}]} {
  func.func @train_step(%arena: memref<?xi8>) {
    %w = exec.view %arena[0] : memref<?xi8> -> memref<16xf32>
    %a = exec.view %arena[256] : memref<?xi8> -> memref<64xf32>
    %b = exec.view %arena[384] : memref<?xi8> -> memref<64xf32>
    %c = exec.view %arena[640] : memref<?xi8> -> memref<64xf32>
    exec.kernel "relu" ins(%w : memref<16xf32>) outs(%a : memref<64xf32>)
    // expected-error @+1 {{(kernel "neg") uses %2 (bytes [384, 640)) while %1 (bytes [256, 512)), which shares bytes [384, 512), is still live}}
    exec.kernel "neg" ins(%w : memref<16xf32>) outs(%b : memref<64xf32>)
    // expected-note @+1 {{%1 is last used here}}
    exec.kernel "add" ins(%a, %b : memref<64xf32>, memref<64xf32>) outs(%c : memref<64xf32>)
    return
  }
}

// -----

// A kernel's output overlaps its own input (the planner never reuses a
// buffer within the op that reads it last).
module attributes {otc.arena_bytes = 1024 : i64, otc.buffers = []} {
  func.func @train_step(%arena: memref<?xi8>) {
    %a = exec.view %arena[0] : memref<?xi8> -> memref<64xf32>
    %b = exec.view %arena[0] : memref<?xi8> -> memref<64xf32>
    // expected-error @+2 {{(kernel "relu") uses %1 (bytes [0, 256)) while %0 (bytes [0, 256)), which shares bytes [0, 256), is still live}}
    // expected-note @+1 {{%0 is last used here}}
    exec.kernel "relu" ins(%a : memref<64xf32>) outs(%b : memref<64xf32>)
    return
  }
}

// -----

// A temporary over a parameter: the parameter holds state between steps,
// also in a function that never names it.
module attributes {otc.arena_bytes = 1024 : i64, otc.buffers = [{name = "w", offset = 0 : i64, role = "param", type = memref<16xf32>}]} {
  func.func @eval_step(%arena: memref<?xi8>) {
    // expected-error @+1 {{temporary %0 at bytes [32, 96) overlaps the persistent buffer 'w' (param, bytes [0, 64))}}
    %a = exec.view %arena[32] : memref<?xi8> -> memref<16xf32>
    exec.kernel "relu" ins(%a : memref<16xf32>) outs(%a : memref<16xf32>)
    return
  }
}

// -----

// Gradients may live inside their bucket; no other persistent buffer
// contains temporaries.
module attributes {otc.arena_bytes = 1024 : i64, otc.buffers = [{name = "w", offset = 0 : i64, role = "grad", type = memref<16xf32>}]} {
  func.func @train_step(%arena: memref<?xi8>) {
    // expected-error @+1 {{temporary %0 at bytes [0, 32) overlaps the persistent buffer 'w' (grad, bytes [0, 64))}}
    %a = exec.view %arena[0] : memref<?xi8> -> memref<8xf32>
    exec.kernel "relu" ins(%a : memref<8xf32>) outs(%a : memref<8xf32>)
    return
  }
}

// -----

module attributes {otc.arena_bytes = 128 : i64, otc.buffers = []} {
  func.func @train_step(%arena: memref<?xi8>) {
    // expected-error @+1 {{view %0 at bytes [64, 320) lies outside the arena of 128 bytes}}
    %a = exec.view %arena[64] : memref<?xi8> -> memref<64xf32>
    exec.kernel "relu" ins(%a : memref<64xf32>) outs(%a : memref<64xf32>)
    return
  }
}

// -----

// expected-error @+1 {{persistent buffer 'w' (param) of 64 bytes at offset 64 lies outside the arena of 96 bytes}}
module attributes {otc.arena_bytes = 96 : i64, otc.buffers = [{name = "w", offset = 64 : i64, role = "param", type = memref<16xf32>}]} {
}

// -----

// Its end beyond int64 (found by fuzzing: the sum overflowed).
// expected-error @+1 {{persistent buffer 'w' (param) of 64 bytes at offset 9223372036854775800 lies outside the arena of 9223372036854775807 bytes}}
module attributes {otc.arena_bytes = 9223372036854775807 : i64, otc.buffers = [{name = "w", offset = 9223372036854775800 : i64, role = "param", type = memref<16xf32>}]} {
}

// -----

// A size beyond int64 is no size.
// expected-error @+1 {{malformed otc.buffers entry}}
module attributes {otc.arena_bytes = 4096 : i64, otc.buffers = [{name = "w", offset = 0 : i64, role = "param", type = memref<4611686018427387904xf32>}]} {
}

// -----

// expected-error @+1 {{persistent buffers 'w' (param, bytes [0, 64)) and 'm' (state, bytes [32, 96)) overlap}}
module attributes {otc.arena_bytes = 256 : i64, otc.buffers = [{name = "w", offset = 0 : i64, role = "param", type = memref<16xf32>}, {name = "m", offset = 32 : i64, role = "state", type = memref<16xf32>}]} {
}

// -----

// expected-error @+1 {{otc-verify-plan expects a planned module (otc.arena_bytes and otc.buffers): run otc-plan-memory first}}
module {
}

// -----

// expected-error @+1 {{malformed otc.buffers entry}}
module attributes {otc.arena_bytes = 256 : i64, otc.buffers = [{name = "w", offset = 0 : i64}]} {
}

// -----

// A convolution's workspace smaller than the kernel library needs.
module attributes {otc.arena_bytes = 4096 : i64, otc.buffers = []} {
  func.func @train_step(%arena: memref<?xi8>) {
    %x = exec.view %arena[0] : memref<?xi8> -> memref<1x2x6x6xf32>
    %w = exec.view %arena[320] : memref<?xi8> -> memref<2x2x3x3xf32>
    %y = exec.view %arena[640] : memref<?xi8> -> memref<1x2x4x4xf32>
    %ws = exec.view %arena[768] : memref<?xi8> -> memref<4xi8>
    // expected-error @+1 {{workspace %3 holds 4 bytes; the kernel uses}}
    exec.kernel "conv" ins(%x, %w : memref<1x2x6x6xf32>, memref<2x2x3x3xf32>) outs(%y, %ws : memref<1x2x4x4xf32>, memref<4xi8>) {dilations = array<i64: 1, 1>, group = 1 : i64, pads_begin = array<i64: 0, 0>, pads_end = array<i64: 0, 0>, strides = array<i64: 1, 1>}
    return
  }
}

// -----

// A view no op writes shares the bytes of another (a reshape), but a kernel
// writes those bytes while it is still read: it would see the new value.
module attributes {otc.arena_bytes = 1024 : i64, otc.buffers = [{name = "w", offset = 0 : i64, role = "param", type = memref<16xf32>}]} {
  func.func @train_step(%arena: memref<?xi8>) {
    %w = exec.view %arena[0] : memref<?xi8> -> memref<16xf32>
    %a = exec.view %arena[256] : memref<?xi8> -> memref<4x4xf32>
    %b = exec.view %arena[256] : memref<?xi8> -> memref<16xf32>
    %c = exec.view %arena[512] : memref<?xi8> -> memref<16xf32>
    exec.kernel "relu" ins(%w : memref<16xf32>) outs(%a : memref<4x4xf32>)
    // expected-error @+1 {{(kernel "neg") uses %2 (bytes [256, 320)) while %1 (bytes [256, 320)), which shares bytes [256, 320), is still live}}
    exec.kernel "neg" ins(%b : memref<16xf32>) outs(%c : memref<16xf32>)
    // expected-note @+1 {{%1 is last used here}}
    exec.kernel "relu" ins(%c : memref<16xf32>) outs(%a : memref<4x4xf32>)
    exec.kernel "add" ins(%b, %c : memref<16xf32>, memref<16xf32>) outs(%c : memref<16xf32>)
    return
  }
}
