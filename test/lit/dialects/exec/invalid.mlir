// RUN: otc-opt %s --split-input-file --verify-diagnostics

func.func @unknown(%a: memref<4xf32>) {
  // expected-error @+1 {{unknown kernel 'gelu_fast'}}
  exec.kernel "gelu_fast" ins(%a : memref<4xf32>) outs(%a : memref<4xf32>)
  return
}

// -----

func.func @arity(%a: memref<4xf32>) {
  // expected-error @+1 {{kernel 'relu' takes 1 inputs, got 2}}
  exec.kernel "relu" ins(%a, %a : memref<4xf32>, memref<4xf32>) outs(%a : memref<4xf32>)
  return
}

// -----

func.func @gemm_arity(%a: memref<4xf32>) {
  // expected-error @+1 {{kernel 'gemm' takes 2 to 3 inputs, got 1}}
  exec.kernel "gemm" ins(%a : memref<4xf32>) outs(%a : memref<4xf32>)
  return
}

// -----

func.func @misaligned(%arena: memref<?xi8>) {
  // expected-error @+1 {{offset 6 is not a non-negative multiple of 4}}
  %x = exec.view %arena[6] : memref<?xi8> -> memref<4xf32>
  return
}

// -----

func.func @too_large(%arena: memref<?xi8>) {
  // expected-error @+1 {{a view of 'memref<4611686018427387904xf32>' at offset 0 ends beyond the largest byte offset (2^63 - 1)}}
  %x = exec.view %arena[0] : memref<?xi8> -> memref<4611686018427387904xf32>
  return
}

// -----

func.func @ends_too_far(%arena: memref<?xi8>) {
  // expected-error @+1 {{a view of 'memref<4xf32>' at offset 9223372036854775800 ends beyond the largest byte offset (2^63 - 1)}}
  %x = exec.view %arena[9223372036854775800] : memref<?xi8> -> memref<4xf32>
  return
}

// -----

func.func @reduce(%a: memref<4xf32>) {
  // expected-error @+1 {{expected string or keyword containing one of the following enum values for attribute 'kind' [sum, mean]}}
  exec.all_reduce max %a : memref<4xf32>
  return
}

// -----

func.func @const(%a: memref<4xf32>) {
  // expected-error @+1 {{does not match the buffer}}
  %c = exec.constant dense<1.0> : tensor<3xf32> : memref<4xf32>
  return
}

// -----

// The kernel table types every attribute: a missing required one, one of
// the wrong type and a misspelled one are errors, not silent defaults.
func.func @missing_attr(%a: memref<4xf32>) {
  // expected-error @+1 {{kernel 'transpose' requires attribute 'perm' (i64s)}}
  exec.kernel "transpose" ins(%a : memref<4xf32>) outs(%a : memref<4xf32>)
  return
}

// -----

func.func @mistyped_attr(%a: memref<4x4xf32>, %y: memref<4x4xf32>) {
  // expected-error @+1 {{kernel 'gemm' attribute 'alpha' must be f32, got 2 : i64}}
  exec.kernel "gemm" ins(%a, %a : memref<4x4xf32>, memref<4x4xf32>) outs(%y : memref<4x4xf32>) {alpha = 2}
  return
}

// -----

func.func @mistyped_float_width(%a: memref<4xf32>) {
  // expected-error @+1 {{kernel 'leaky_relu' attribute 'alpha' must be f32, got 1.000000e-01 : f64}}
  exec.kernel "leaky_relu" ins(%a : memref<4xf32>) outs(%a : memref<4xf32>) {alpha = 0.1 : f64}
  return
}

// -----

func.func @misspelled_attr(%a: memref<4x4xf32>, %y: memref<4x4xf32>) {
  // expected-error @+1 {{kernel 'gemm' has no attribute 'transb' (it takes: alpha:f32, beta:f32, transA:bool, transB:bool, compute:str)}}
  exec.kernel "gemm" ins(%a, %a : memref<4x4xf32>, memref<4x4xf32>) outs(%y : memref<4x4xf32>) {transb = true}
  return
}

// -----

func.func @attr_on_plain_kernel(%a: memref<4xf32>) {
  // expected-error @+1 {{kernel 'relu' has no attribute 'alpha' (it takes: none)}}
  exec.kernel "relu" ins(%a : memref<4xf32>) outs(%a : memref<4xf32>) {alpha = 1.0 : f32}
  return
}

// -----

// Annotations (dotted names) are not parameters.
func.func @annotation(%a: memref<4xf32>) {
  exec.kernel "relu" ins(%a : memref<4xf32>) outs(%a : memref<4xf32>) {otc.note = "kept"}
  // expected-error @+1 {{kernel 'sgd_update' attribute 'lr_scale' must be f32, got "0.1"}}
  exec.kernel "sgd_update" ins(%a : memref<4xf32>) outs(%a : memref<4xf32>) {lr_scale = "0.1"}
  return
}

// -----

// An update of several parameters writes each parameter, then its state,
// for every gradient, with the gradient's element count.
func.func @grouped_update_outputs(%g: memref<4xf32>, %w: memref<4xf32>, %m: memref<4xf32>) {
  // expected-error @+1 {{kernel 'adamw_update' writes 3 outputs per gradient (the parameter, then its state): 2 gradients, 3 outputs}}
  exec.kernel "adamw_update" ins(%g, %g : memref<4xf32>, memref<4xf32>) outs(%w, %m, %m : memref<4xf32>, memref<4xf32>, memref<4xf32>)
  return
}

// -----

func.func @grouped_update_sizes(%g: memref<4xf32>, %h: memref<5xf32>, %w: memref<4xf32>, %v: memref<4xf32>) {
  // expected-error @+1 {{output 2 of kernel 'momentum_update' does not have as many elements as gradient 1}}
  exec.kernel "momentum_update" ins(%g, %h : memref<4xf32>, memref<5xf32>) outs(%w, %v, %w, %v : memref<4xf32>, memref<4xf32>, memref<4xf32>, memref<4xf32>)
  return
}

// -----

func.func @matmul_perm_not_permutation(%a: memref<2x8x4x16xf32>, %b: memref<2x4x16x8xf32>, %c: memref<2x4x8x8xf32>) {
  // expected-error @+1 {{matmul through permutations: permA does not permute A's dimensions}}
  exec.kernel "matmul" ins(%a, %b : memref<2x8x4x16xf32>, memref<2x4x16x8xf32>) outs(%c : memref<2x4x8x8xf32>) {permA = array<i64: 0, 2, 2, 3>}
  return
}

// -----

func.func @matmul_perm_shapes(%a: memref<2x8x4x16xf32>, %b: memref<2x4x16x8xf32>, %c: memref<2x4x8x8xf32>) {
  // expected-error @+1 {{matmul through permutations: the operands' batch dimensions do not broadcast to the result's}}
  exec.kernel "matmul" ins(%a, %b : memref<2x8x4x16xf32>, memref<2x4x16x8xf32>) outs(%c : memref<2x4x8x8xf32>) {permY = array<i64: 0, 2, 1, 3>}
  return
}

// -----

func.func @matmul_perm_no_contiguous(%a: memref<2x8x4x16xf32>, %b: memref<4x8xf32>, %c: memref<2x16x8x8xf32>) {
  // expected-error @+1 {{matmul through permutations: A's matrices have no contiguous dimension}}
  exec.kernel "matmul" ins(%a, %b : memref<2x8x4x16xf32>, memref<4x8xf32>) outs(%c : memref<2x16x8x8xf32>) {permA = array<i64: 0, 3, 1, 2>}
  return
}

// -----

func.func @matmul_perm_bf16(%a: memref<2x8x4x16xf32>, %b: memref<2x4x16x8xf32>, %c: memref<2x4x8x8xf32>, %ws: memref<64xi8>) {
  // expected-error @+1 {{a matmul in bfloat16 reads no permuted operands}}
  exec.kernel "matmul" ins(%a, %b : memref<2x8x4x16xf32>, memref<2x4x16x8xf32>) outs(%c, %ws : memref<2x4x8x8xf32>, memref<64xi8>) {compute = "bf16", permA = array<i64: 0, 2, 1, 3>}
  return
}
