module {
  func.func @eval_step(%ids: tensor<2x4xi64> {otc.input = "ids", otc.role = "data"},
                       %mask: tensor<4x8xi1> {otc.input = "mask", otc.role = "data"},
                       %table: tensor<16x8xf32> {otc.param = "table"},
                       %s: tensor<8xf32> {otc.param = "s"},
                       %b: tensor<8xf32> {otc.param = "b"})
      -> (tensor<2x4xf32> {otc.output = "max"}, tensor<16x8xf32> {otc.output = "dtable"},
          tensor<8xf32> {otc.output = "ds"}, tensor<8xf32> {otc.output = "db"}) {
    %e = graph.gather %table, %ids {axis = 0 : i64} : (tensor<16x8xf32>, tensor<2x4xi64>) -> tensor<2x4x8xf32>
    %y, %m, %r = graph.layer_norm %e, %s, %b {axis = -1 : i64, epsilon = 1.0e-05 : f32}
        : (tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<2x4x8xf32>, tensor<2x4x1xf32>, tensor<2x4x1xf32>)
    %ninf = graph.constant dense<0xFF800000> : tensor<f32>
    %w = graph.where %mask, %y, %ninf : (tensor<4x8xi1>, tensor<2x4x8xf32>, tensor<f32>) -> tensor<2x4x8xf32>
    %mx = graph.reduce "max" %w {axes = array<i64: 2>, keepdims = false} : tensor<2x4x8xf32> -> tensor<2x4xf32>
    %dw = graph.reduce_grad "max" %mx, %w, %mx {axes = array<i64: 2>}
        : (tensor<2x4xf32>, tensor<2x4x8xf32>, tensor<2x4xf32>) -> tensor<2x4x8xf32>
    %dx, %ds, %db = graph.layer_norm_grad %dw, %e, %s, %m, %r {axis = 2 : i64}
        : (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<8xf32>, tensor<2x4x1xf32>, tensor<2x4x1xf32>)
        -> (tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>)
    %dt = graph.gather_grad %dx, %ids {axis = 0 : i64} : (tensor<2x4x8xf32>, tensor<2x4xi64>) -> tensor<16x8xf32>
    return %mx, %dt, %ds, %db : tensor<2x4xf32>, tensor<16x8xf32>, tensor<8xf32>, tensor<8xf32>
  }
}
