func.func @forward(%x: tensor<4x8xf32> {otc.input = "x", otc.role = "data"})
    -> (tensor<4x8xf32> {otc.output = "y"}, tensor<4x8xf32> {otc.output = "same"},
        tensor<4x8xf32> {otc.output = "again"}) {
  %d, %mask = graph.dropout %x {ratio = 0.5 : f32, stream = 0 : i64} : tensor<4x8xf32>
  %r = graph.relu %d : tensor<4x8xf32>
  return %r, %x, %r : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>
}
