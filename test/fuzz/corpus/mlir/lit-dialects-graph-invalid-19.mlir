func.func @dynamic(%x: tensor<?xf32>) {
  %0 = graph.pad %x {mode = "constant", pads_begin = array<i64: -1>, pads_end = array<i64: 0>} : tensor<?xf32> -> tensor<?xf32>
  return
}
