func.func @tile_beyond_int64(%x: tensor<4xf32>) {
  %0 = graph.tile %x {repeats = array<i64: 4611686018427387904>} : tensor<4xf32> -> tensor<8xf32>
  return
}
