module {
  func.func @eval_step(%x: tensor<2x3x9x9xf32> {otc.input = "x", otc.role = "data"},
                       %w: tensor<4x3x3x3xf32> {otc.param = "w"},
                       %b: tensor<4xf32> {otc.param = "b"},
                       %s: tensor<4xf32> {otc.param = "s"},
                       %m: tensor<4xf32> {otc.param = "m"},
                       %v: tensor<4xf32> {otc.param = "v"},
                       %g: tensor<2x4x3x3xf32> {otc.input = "g", otc.role = "data"})
      -> (tensor<2x3x9x9xf32> {otc.output = "dx"}, tensor<4x3x3x3xf32> {otc.output = "dw"},
          tensor<4xf32> {otc.output = "ds"}, tensor<4xf32> {otc.output = "db"},
          tensor<4xf32> {otc.output = "rm"}, tensor<4xf32> {otc.output = "rv"},
          tensor<2x4x3x3xf32> {otc.output = "a"}, tensor<2x4x5x5xf32> {otc.output = "da"},
          tensor<2x4x5x5xf32> {otc.output = "yi"}) {
    %c = graph.conv %x, %w, %b {strides = array<i64: 2, 2>, dilations = array<i64: 1, 1>,
        pads_begin = array<i64: 1, 1>, pads_end = array<i64: 1, 1>, group = 1 : i64}
        : (tensor<2x3x9x9xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>) -> tensor<2x4x5x5xf32>
    %y, %rm, %rv, %sm, %si = graph.batch_norm %c, %s, %b, %m, %v {epsilon = 1.0e-05 : f32, momentum = 0.9 : f32, unbiased_running_var = true}
        : (tensor<2x4x5x5xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
        -> (tensor<2x4x5x5xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
    %p, %i = graph.max_pool %y {kernel_shape = array<i64: 3, 3>, strides = array<i64: 2, 2>,
        dilations = array<i64: 1, 1>, pads_begin = array<i64: 1, 1>, pads_end = array<i64: 1, 1>}
        : tensor<2x4x5x5xf32> -> (tensor<2x4x3x3xf32>, tensor<2x4x3x3xi64>)
    %dy = graph.max_pool_grad %g, %i {kernel_shape = array<i64: 3, 3>, strides = array<i64: 2, 2>,
        dilations = array<i64: 1, 1>, pads_begin = array<i64: 1, 1>, pads_end = array<i64: 1, 1>}
        : (tensor<2x4x3x3xf32>, tensor<2x4x3x3xi64>) -> tensor<2x4x5x5xf32>
    %dc, %ds, %db = graph.batch_norm_grad %dy, %c, %s, %sm, %si
        : (tensor<2x4x5x5xf32>, tensor<2x4x5x5xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
        -> (tensor<2x4x5x5xf32>, tensor<4xf32>, tensor<4xf32>)
    %dx = graph.conv_grad_input %dc, %w {strides = array<i64: 2, 2>, dilations = array<i64: 1, 1>,
        pads_begin = array<i64: 1, 1>, pads_end = array<i64: 1, 1>, group = 1 : i64}
        : (tensor<2x4x5x5xf32>, tensor<4x3x3x3xf32>) -> tensor<2x3x9x9xf32>
    %dw = graph.conv_grad_weight %dc, %x {strides = array<i64: 2, 2>, dilations = array<i64: 1, 1>,
        pads_begin = array<i64: 1, 1>, pads_end = array<i64: 1, 1>, group = 1 : i64}
        : (tensor<2x4x5x5xf32>, tensor<2x3x9x9xf32>) -> tensor<4x3x3x3xf32>
    %a = graph.avg_pool %c {kernel_shape = array<i64: 3, 3>, strides = array<i64: 2, 2>,
        dilations = array<i64: 1, 1>, pads_begin = array<i64: 1, 1>, pads_end = array<i64: 1, 1>,
        count_include_pad = false} : tensor<2x4x5x5xf32> -> tensor<2x4x3x3xf32>
    %da = graph.avg_pool_grad %g {kernel_shape = array<i64: 3, 3>, strides = array<i64: 2, 2>,
        dilations = array<i64: 1, 1>, pads_begin = array<i64: 1, 1>, pads_end = array<i64: 1, 1>,
        count_include_pad = false} : tensor<2x4x3x3xf32> -> tensor<2x4x5x5xf32>
    %yi = graph.batch_norm_inference %c, %s, %b, %m, %v {epsilon = 1.0e-05 : f32}
        : (tensor<2x4x5x5xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
        -> tensor<2x4x5x5xf32>
    return %dx, %dw, %ds, %db, %rm, %rv, %a, %da, %yi
        : tensor<2x3x9x9xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>,
          tensor<4xf32>, tensor<2x4x3x3xf32>, tensor<2x4x5x5xf32>, tensor<2x4x5x5xf32>
  }
}
