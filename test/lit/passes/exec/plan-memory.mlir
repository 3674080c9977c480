// RUN: otc-opt %s --otc-plan-memory | FileCheck %s --implicit-check-not=exec.alloc
// The planner's layout passes its verifier.
// RUN: otc-opt %s --otc-plan-memory --otc-verify-plan -o /dev/null

// Persistent buffers come first (params, grads, state, inputs, outputs), at
// offsets shared by both functions; temporaries reuse memory by liveness.
// CHECK: module attributes {otc.arena_bytes = 1088 : i64, otc.buffers = [
// CHECK-SAME: {name = "w", offset = 0 : i64, role = "param", type = memref<16xf32>}
// CHECK-SAME: {kind = "data", name = "x", offset = 128 : i64, role = "input", type = memref<16xf32>}
// CHECK-SAME: {name = "w", offset = 64 : i64, role = "grad", type = memref<16xf32>}
// CHECK-SAME: {name = "loss", offset = 192 : i64, role = "output", type = memref<f32>}
// CHECK-SAME: {name = "eval_output", offset = 256 : i64, role = "output", type = memref<16xf32>}
// CHECK-SAME: otc.memory = {activations = 768 : i64, comm_buffers = 0 : i64, frozen = 0 : i64, grads = 64 : i64, inputs = 64 : i64, optimizer = 0 : i64, outputs = 68 : i64, params = 64 : i64, peak = 1088 : i64}

// CHECK-LABEL: func.func @train_step(%{{.*}}: memref<?xi8>)
func.func @train_step(%w: memref<16xf32> {otc.param = "w"}, %x: memref<16xf32> {otc.input = "x", otc.role = "data"})
    -> (memref<16xf32> {otc.updates = 0 : i64}, memref<f32> {otc.output = "loss"}) {
  // Three 256-byte temporaries live at once, then a fourth reuses the first.
  // CHECK: %[[A:.*]] = exec.view %{{.*}}[320] : memref<?xi8> -> memref<64xf32>
  %a = exec.alloc : memref<64xf32>
  // CHECK: exec.view %{{.*}}[576] : memref<?xi8> -> memref<64xf32>
  %b = exec.alloc : memref<64xf32>
  // CHECK: exec.view %{{.*}}[832] : memref<?xi8> -> memref<64xf32>
  %c = exec.alloc : memref<64xf32>
  exec.kernel "add" ins(%a, %b : memref<64xf32>, memref<64xf32>) outs(%c : memref<64xf32>)
  // CHECK: exec.view %{{.*}}[320] : memref<?xi8> -> memref<64xf32>
  %d = exec.alloc : memref<64xf32>
  exec.kernel "relu" ins(%c : memref<64xf32>) outs(%d : memref<64xf32>)
  %g = exec.alloc : memref<16xf32>
  %loss = exec.alloc : memref<f32>
  exec.kernel "sgd_update" ins(%g : memref<16xf32>) outs(%w : memref<16xf32>) 
  // CHECK: return{{$}}
  return %w, %loss : memref<16xf32>, memref<f32>
}

// CHECK-LABEL: func.func @eval_step(%{{.*}}: memref<?xi8>)
func.func @eval_step(%w: memref<16xf32> {otc.param = "w"}, %x: memref<16xf32> {otc.input = "x", otc.role = "data"})
    -> (memref<16xf32> {otc.output = "eval_output"}) {
  // CHECK-DAG: exec.view %{{.*}}[0] : memref<?xi8> -> memref<16xf32>
  // CHECK-DAG: exec.view %{{.*}}[128] : memref<?xi8> -> memref<16xf32>
  // CHECK-DAG: exec.view %{{.*}}[256] : memref<?xi8> -> memref<16xf32>
  %y = exec.alloc : memref<16xf32>
  exec.kernel "add" ins(%w, %x : memref<16xf32>, memref<16xf32>) outs(%y : memref<16xf32>)
  return %y : memref<16xf32>
}
