func.func @slice_bounds(%x: tensor<4x8xf32>) {
  %0 = graph.slice %x {starts = array<i64: 0, 6>, steps = array<i64: 1, 1>} : tensor<4x8xf32> -> tensor<4x3xf32>
  return
}
