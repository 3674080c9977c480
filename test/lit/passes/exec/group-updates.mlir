// RUN: otc-opt %s --otc-group-updates --split-input-file | FileCheck %s

// Consecutive AdamW updates of one parameter group become one call over all
// their parameters (gradients in order; each parameter, then its moments),
// placed where the last one was: views between them do not end the run.
// CHECK-LABEL: func.func @adamw
// CHECK-NEXT: %[[V:.*]] = exec.view
// CHECK-NEXT: exec.kernel "adamw_update" ins(%arg3, %arg7, %[[V]] : memref<8x4xf32>, memref<16xf32>, memref<3xf32>) outs(%arg0, %arg1, %arg2, %arg4, %arg5, %arg6, %arg8, %arg9, %arg10 : memref<8x4xf32>, memref<8x4xf32>, memref<8x4xf32>, memref<16xf32>, memref<16xf32>, memref<16xf32>, memref<3xf32>, memref<3xf32>, memref<3xf32>) {wd_scale = 0.000000e+00 : f32}
// CHECK-NOT: adamw_update
// CHECK: return
func.func @adamw(%w0: memref<8x4xf32>, %m0: memref<8x4xf32>, %v0: memref<8x4xf32>, %g0: memref<8x4xf32>,
                 %w1: memref<16xf32>, %m1: memref<16xf32>, %v1: memref<16xf32>, %g1: memref<16xf32>,
                 %w2: memref<3xf32>, %m2: memref<3xf32>, %v2: memref<3xf32>, %arena: memref<?xi8>) {
  exec.kernel "adamw_update" ins(%g0 : memref<8x4xf32>) outs(%w0, %m0, %v0 : memref<8x4xf32>, memref<8x4xf32>, memref<8x4xf32>) {wd_scale = 0.0 : f32}
  exec.kernel "adamw_update" ins(%g1 : memref<16xf32>) outs(%w1, %m1, %v1 : memref<16xf32>, memref<16xf32>, memref<16xf32>) {wd_scale = 0.0 : f32}
  %g2 = exec.view %arena[0] : memref<?xi8> -> memref<3xf32>
  exec.kernel "adamw_update" ins(%g2 : memref<3xf32>) outs(%w2, %m2, %v2 : memref<3xf32>, memref<3xf32>, memref<3xf32>) {wd_scale = 0.0 : f32}
  return
}

// -----

// Runs end at another kind of update, at other attributes (another
// parameter group), at an update that shares a buffer with the run, and at
// any op that is not a view (a wait, a check, a collective, another
// kernel); a run of one stays as it is.
// CHECK-LABEL: func.func @runs
// CHECK-NEXT: exec.kernel "sgd_update" ins(%arg1, %arg3 : memref<4xf32>, memref<4xf32>) outs(%arg0, %arg2 : memref<4xf32>, memref<4xf32>)
// CHECK-NEXT: exec.kernel "sgd_update" ins(%arg5 : memref<4xf32>) outs(%arg4 : memref<4xf32>) {lr_scale = 5.000000e-01 : f32}
// CHECK-NEXT: exec.kernel "momentum_update" ins(%arg7 : memref<4xf32>) outs(%arg6, %arg8 : memref<4xf32>, memref<4xf32>)
// CHECK-NEXT: exec.wait_collectives
// CHECK-NEXT: exec.kernel "momentum_update" ins(%arg1, %arg3 : memref<4xf32>, memref<4xf32>) outs(%arg0, %arg8, %arg2, %arg9 : memref<4xf32>, memref<4xf32>, memref<4xf32>, memref<4xf32>) {nesterov = true}
// CHECK-NEXT: exec.kernel "momentum_update" ins(%arg5 : memref<4xf32>) outs(%arg4, %arg9 : memref<4xf32>, memref<4xf32>) {nesterov = true}
// CHECK-NEXT: exec.kernel "add"
// CHECK-NEXT: exec.kernel "adam_update" ins(%arg1 : memref<4xf32>)
// CHECK-NEXT: exec.kernel "adamw_update" ins(%arg3 : memref<4xf32>)
// CHECK-NEXT: return
func.func @runs(%w0: memref<4xf32>, %g0: memref<4xf32>, %w1: memref<4xf32>, %g1: memref<4xf32>,
                %w2: memref<4xf32>, %g2: memref<4xf32>, %w3: memref<4xf32>, %g3: memref<4xf32>,
                %s: memref<4xf32>, %t: memref<4xf32>) {
  exec.kernel "sgd_update" ins(%g0 : memref<4xf32>) outs(%w0 : memref<4xf32>)
  exec.kernel "sgd_update" ins(%g1 : memref<4xf32>) outs(%w1 : memref<4xf32>)
  exec.kernel "sgd_update" ins(%g2 : memref<4xf32>) outs(%w2 : memref<4xf32>) {lr_scale = 0.5 : f32}
  exec.kernel "momentum_update" ins(%g3 : memref<4xf32>) outs(%w3, %s : memref<4xf32>, memref<4xf32>)
  exec.wait_collectives
  exec.kernel "momentum_update" ins(%g0 : memref<4xf32>) outs(%w0, %s : memref<4xf32>, memref<4xf32>) {nesterov = true}
  exec.kernel "momentum_update" ins(%g1 : memref<4xf32>) outs(%w1, %t : memref<4xf32>, memref<4xf32>) {nesterov = true}
  exec.kernel "momentum_update" ins(%g2 : memref<4xf32>) outs(%w2, %t : memref<4xf32>, memref<4xf32>) {nesterov = true}
  exec.kernel "add" ins(%g0, %g1 : memref<4xf32>, memref<4xf32>) outs(%g2 : memref<4xf32>)
  exec.kernel "adam_update" ins(%g0 : memref<4xf32>) outs(%w0, %s, %w1 : memref<4xf32>, memref<4xf32>, memref<4xf32>)
  exec.kernel "adamw_update" ins(%g1 : memref<4xf32>) outs(%w2, %s, %w3 : memref<4xf32>, memref<4xf32>, memref<4xf32>)
  return
}

// -----

// Other optimizers keep one call per parameter.
// CHECK-LABEL: func.func @others
// CHECK-COUNT-2: exec.kernel "lion_update"
func.func @others(%w0: memref<4xf32>, %g0: memref<4xf32>, %w1: memref<4xf32>, %g1: memref<4xf32>, %m: memref<4xf32>) {
  exec.kernel "lion_update" ins(%g0 : memref<4xf32>) outs(%w0, %m : memref<4xf32>, memref<4xf32>)
  exec.kernel "lion_update" ins(%g1 : memref<4xf32>) outs(%w1, %m : memref<4xf32>, memref<4xf32>)
  return
}
