func.func @f(%x: tensor<4xf32>) -> tensor<8xf32> {
  %0 = graph.pad %x {mode = "constant", pads_begin = array<i64: 9223372036854775807>, pads_end = array<i64: 9223372036854775807>, value = 0.0 : f32} : tensor<4xf32> -> tensor<8xf32>
  return %0 : tensor<8xf32>
}
