// RUN: otc-opt %s --otc-plan-memory | FileCheck %s
// The planner's layout passes its verifier.
// RUN: otc-opt %s --otc-plan-memory --otc-verify-plan -o /dev/null

// A reshape (a copy that changes only the shape) between temporaries views
// its input's bytes: no copy, one buffer, live until the reshape's last use.
// CHECK-LABEL: func.func @train_step
func.func @train_step(%x: memref<4x16xf32> {otc.input = "x", otc.role = "data"})
    -> (memref<f32> {otc.output = "loss"}) {
  // CHECK: %[[A:.*]] = exec.view %{{.*}}[320] : memref<?xi8> -> memref<4x16xf32>
  // CHECK-NEXT: exec.kernel "relu" ins(%{{.*}}) outs(%[[A]] :
  %a = exec.alloc : memref<4x16xf32>
  exec.kernel "relu" ins(%x : memref<4x16xf32>) outs(%a : memref<4x16xf32>)
  // CHECK-NEXT: %[[B:.*]] = exec.view %{{.*}}[320] : memref<?xi8> -> memref<64xf32>
  %b = exec.alloc : memref<64xf32>
  exec.kernel "copy" ins(%a : memref<4x16xf32>) outs(%b : memref<64xf32>)
  // A reshape of a reshape views the same bytes.
  // CHECK-NEXT: %[[C:.*]] = exec.view %{{.*}}[320] : memref<?xi8> -> memref<2x32xf32>
  %c = exec.alloc : memref<2x32xf32>
  exec.kernel "copy" ins(%b : memref<64xf32>) outs(%c : memref<2x32xf32>)
  // %a, %b and %c hold one value: the buffers written here lie elsewhere.
  // CHECK-NEXT: %[[D:.*]] = exec.view %{{.*}}[576] : memref<?xi8> -> memref<64xf32>
  // CHECK-NEXT: exec.kernel "neg" ins(%[[B]] : memref<64xf32>) outs(%[[D]] :
  %d = exec.alloc : memref<64xf32>
  exec.kernel "neg" ins(%b : memref<64xf32>) outs(%d : memref<64xf32>)
  // CHECK: exec.kernel "add" ins(%[[C]], %[[A]] :
  %e = exec.alloc : memref<2x32xf32>
  exec.kernel "add" ins(%c, %a : memref<2x32xf32>, memref<4x16xf32>) outs(%e : memref<2x32xf32>)
  %loss = exec.alloc : memref<f32>
  exec.kernel "reduce_sum_to" ins(%e : memref<2x32xf32>) outs(%loss : memref<f32>)
  return %loss : memref<f32>
}

// The copy stays where a view would see a later write: the input is
// updated in place after the copy, or the output is written again.
// CHECK-LABEL: func.func @eval_step
func.func @eval_step(%x: memref<4x16xf32> {otc.input = "x", otc.role = "data"})
    -> (memref<f32> {otc.output = "loss"}) {
  %a = exec.alloc : memref<4x16xf32>
  exec.kernel "relu" ins(%x : memref<4x16xf32>) outs(%a : memref<4x16xf32>)
  // CHECK: exec.kernel "copy"
  %b = exec.alloc : memref<64xf32>
  exec.kernel "copy" ins(%a : memref<4x16xf32>) outs(%b : memref<64xf32>)
  exec.kernel "neg" ins(%x : memref<4x16xf32>) outs(%a : memref<4x16xf32>)
  // CHECK: exec.kernel "copy"
  %c = exec.alloc : memref<64xf32>
  exec.kernel "copy" ins(%b : memref<64xf32>) outs(%c : memref<64xf32>)
  exec.kernel "relu" ins(%b : memref<64xf32>) outs(%c : memref<64xf32>)
  // A persistent input is not viewed by a temporary: copied.
  // CHECK: exec.kernel "copy"
  %d = exec.alloc : memref<64xf32>
  exec.kernel "copy" ins(%x : memref<4x16xf32>) outs(%d : memref<64xf32>)
  %e = exec.alloc : memref<64xf32>
  exec.kernel "add" ins(%c, %d : memref<64xf32>, memref<64xf32>) outs(%e : memref<64xf32>)
  exec.kernel "add" ins(%e, %a : memref<64xf32>, memref<4x16xf32>) outs(%e : memref<64xf32>)
  %loss = exec.alloc : memref<f32>
  exec.kernel "reduce_sum_to" ins(%e : memref<64xf32>) outs(%loss : memref<f32>)
  return %loss : memref<f32>
}
