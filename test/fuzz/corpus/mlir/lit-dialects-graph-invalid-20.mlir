func.func @pad_beyond_int64(%x: tensor<4xf32>) {
  %0 = graph.pad %x {mode = "constant", pads_begin = array<i64: 9223372036854775807>, pads_end = array<i64: 9223372036854775807>} : tensor<4xf32> -> tensor<8xf32>
  return
}
