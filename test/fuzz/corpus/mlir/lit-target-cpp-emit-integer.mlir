module {
  func.func @eval_step(%a: tensor<4xui8> {otc.input = "a", otc.role = "data"},
                       %b: tensor<4xui8> {otc.input = "b", otc.role = "data"},
                       %c: tensor<4xi8> {otc.input = "c", otc.role = "data"},
                       %d: tensor<4xui64> {otc.input = "d", otc.role = "data"},
                       %f: tensor<4xf32> {otc.input = "f", otc.role = "data"})
      -> (tensor<4xui8> {otc.output = "sum"}, tensor<4xui8> {otc.output = "shl"},
          tensor<4xi8> {otc.output = "max"}, tensor<4xui64> {otc.output = "shr"},
          tensor<4xi1> {otc.output = "lt"}, tensor<4xi1> {otc.output = "eq"}) {
    %sum = graph.add %a, %b : (tensor<4xui8>, tensor<4xui8>) -> tensor<4xui8>
    %shl = graph.shift_left %sum, %b : (tensor<4xui8>, tensor<4xui8>) -> tensor<4xui8>
    %lo = graph.constant dense<-128> : tensor<i8>
    %max = graph.max %c, %lo : (tensor<4xi8>, tensor<i8>) -> tensor<4xi8>
    %hi = graph.constant dense<18446744073709551615> : tensor<ui64>
    %shr = graph.shift_right %d, %hi : (tensor<4xui64>, tensor<ui64>) -> tensor<4xui64>
    %lt = graph.compare "lt" %a, %b : (tensor<4xui8>, tensor<4xui8>) -> tensor<4xi1>
    %eq = graph.compare "eq" %f, %f : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>
    return %sum, %shl, %max, %shr, %lt, %eq
        : tensor<4xui8>, tensor<4xui8>, tensor<4xi8>, tensor<4xui64>, tensor<4xi1>, tensor<4xi1>
  }
}
