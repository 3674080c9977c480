func.func @slice_step_beyond_int64(%x: tensor<4xf32>) {
  %0 = graph.slice %x {starts = array<i64: 1>, steps = array<i64: 9223372036854775807>} : tensor<4xf32> -> tensor<2xf32>
  return
}
