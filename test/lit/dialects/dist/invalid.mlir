// RUN: otc-opt %s --verify-diagnostics

func.func @kind(%g: tensor<4xf32>) {
  // expected-error @+1 {{expected string or keyword containing one of the following enum values for attribute 'kind' [sum, mean]}}
  %0 = dist.all_reduce %g : tensor<4xf32>
  return
}
