func.func @eval_step(%ids: tensor<2x4xi64> {otc.input = "ids", otc.role = "data"},
                     %keep: tensor<2x4xi1> {otc.input = "keep", otc.role = "data"})
    -> (tensor<2xi64> {otc.output = "last"}) {
  %zero = graph.constant dense<0> : tensor<i64>
  %nz = graph.compare "gt" %ids, %zero : (tensor<2x4xi64>, tensor<i64>) -> tensor<2x4xi1>
  %both = graph.logical "and" %nz, %keep : (tensor<2x4xi1>, tensor<2x4xi1>) -> tensor<2x4xi1>
  %pad = graph.not %both : tensor<2x4xi1>
  %i = graph.cast %pad : tensor<2x4xi1> -> tensor<2x4xi64>
  %last = graph.arg_reduce "max" %i {axis = 1 : i64, keepdims = false, select_last_index = false} : tensor<2x4xi64> -> tensor<2xi64>
  return %last : tensor<2xi64>
}
