func.func @f(%x: tensor<?xf32>) -> tensor<?xf32> {
  %0 = graph.pad %x {mode = "constant", pads_begin = array<i64: -1>, pads_end = array<i64: 0>, value = 0.0 : f32} : tensor<?xf32> -> tensor<?xf32>
  return %0 : tensor<?xf32>
}
