module {
  func.func @train_step(%x: tensor<2x3xf32> {otc.input = "x", otc.role = "data"},
                        %d: tensor<3xf32> {otc.input = "d", otc.role = "data"})
      -> (tensor<2x3xf32> {otc.output = "t"}, tensor<2x3xf32> {otc.output = "a"},
          tensor<2x3xf32> {otc.output = "r"}, tensor<2x3xf32> {otc.output = "s"},
          tensor<2x3xf32> {otc.output = "m"}, tensor<2x3xf32> {otc.output = "f"},
          tensor<2x3xf32> {otc.output = "dt"}, tensor<2x3xf32> {otc.output = "df"}) {
    %t = graph.tan %x : tensor<2x3xf32>
    %a = graph.acosh %x : tensor<2x3xf32>
    %r = graph.thresholded_relu %x {alpha = 0.3 : f32} : tensor<2x3xf32>
    %s = graph.shrink %x {lambd = 0.5 : f32, bias = 0.2 : f32} : tensor<2x3xf32>
    %m = graph.mod %x, %d : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
    %f = graph.fmod %x, %d : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
    %dt = graph.unary_grad "tan" %x y %t : tensor<2x3xf32>
    %df = graph.binary_grad "fmod" 0 %x, %x, %d : (tensor<2x3xf32>, tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
    return %t, %a, %r, %s, %m, %f, %dt, %df : tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>
  }
}
