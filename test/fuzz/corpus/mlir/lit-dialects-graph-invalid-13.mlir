func.func @unary_grad_tan_reads_y(%dy: tensor<4xf32>, %x: tensor<4xf32>) {
  %0 = graph.unary_grad "tan" %dy x %x : tensor<4xf32>
  return
}
