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
