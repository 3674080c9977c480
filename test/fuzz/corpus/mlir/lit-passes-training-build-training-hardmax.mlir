func.func @forward(%x: tensor<4x8xf32> {otc.input = "input", otc.role = "data"},
                   %w: tensor<8x3xf32> {otc.param = "w"}) -> (tensor<4x3xf32> {otc.output = "y"}) {
  %y = graph.matmul %x, %w : (tensor<4x8xf32>, tensor<8x3xf32>) -> tensor<4x3xf32>
  %i = graph.arg_reduce "max" %y {axis = 1 : i64, keepdims = false, select_last_index = false} : tensor<4x3xf32> -> tensor<4xi64>
  %h = graph.one_hot %i {axis = 1 : i64, depth = 3 : i64, off_value = 0.0 : f32, on_value = 1.0 : f32} : tensor<4xi64> -> tensor<4x3xf32>
  %z = graph.mul %h, %y : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
  return %z : tensor<4x3xf32>
}
