func.func @gelu_erf(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %sqrt2 = graph.constant dense<1.41421354> : tensor<f32>
  %one = graph.constant dense<1.0> : tensor<f32>
  %half = graph.constant dense<0.5> : tensor<f32>
  %d = graph.div %x, %sqrt2 : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %e = graph.erf %d : tensor<4x8xf32>
  %a = graph.add %e, %one : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %m = graph.mul %x, %a : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %y = graph.mul %m, %half : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

func.func @gelu_erf_grouped(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %rsqrt2 = graph.constant dense<0.707106769> : tensor<f32>
  %one = graph.constant dense<1.0> : tensor<f32>
  %half = graph.constant dense<0.5> : tensor<f32>
  %h = graph.mul %half, %x : (tensor<f32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %d = graph.mul %x, %rsqrt2 : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %e = graph.erf %d : tensor<4x8xf32>
  %a = graph.add %one, %e : (tensor<f32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %y = graph.mul %h, %a : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

func.func @gelu_tanh(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %k = graph.constant dense<0.044715> : tensor<f32>
  %s = graph.constant dense<0.797884583> : tensor<f32>
  %one = graph.constant dense<1.0> : tensor<f32>
  %half = graph.constant dense<0.5> : tensor<f32>
  %x2 = graph.mul %x, %x : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %x3 = graph.mul %x, %x2 : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %kx3 = graph.mul %k, %x3 : (tensor<f32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %in = graph.add %x, %kx3 : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %u = graph.mul %s, %in : (tensor<f32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %t = graph.tanh %u : tensor<2x3xf32>
  %a = graph.add %one, %t : (tensor<f32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %m = graph.mul %x, %a : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %y = graph.mul %half, %m : (tensor<f32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  return %y : tensor<2x3xf32>
}

func.func @mish(%x: tensor<5xf32>) -> tensor<5xf32> {
  %sp = graph.softplus %x : tensor<5xf32>
  %t = graph.tanh %sp : tensor<5xf32>
  %y = graph.mul %t, %x : (tensor<5xf32>, tensor<5xf32>) -> tensor<5xf32>
  return %y : tensor<5xf32>
}

func.func @wrong_constant(%x: tensor<4xf32>) -> tensor<4xf32> {
  %sqrt2 = graph.constant dense<1.41421354> : tensor<f32>
  %one = graph.constant dense<1.0> : tensor<f32>
  %c = graph.constant dense<0.6> : tensor<f32>
  %d = graph.div %x, %sqrt2 : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %e = graph.erf %d : tensor<4xf32>
  %a = graph.add %e, %one : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %m = graph.mul %x, %a : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %y = graph.mul %m, %c : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  return %y : tensor<4xf32>
}

func.func @shared_intermediate(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %sqrt2 = graph.constant dense<1.41421354> : tensor<f32>
  %one = graph.constant dense<1.0> : tensor<f32>
  %half = graph.constant dense<0.5> : tensor<f32>
  %d = graph.div %x, %sqrt2 : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %e = graph.erf %d : tensor<4xf32>
  %a = graph.add %e, %one : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %m = graph.mul %x, %a : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %y = graph.mul %m, %half : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  return %y, %e : tensor<4xf32>, tensor<4xf32>
}

func.func @broadcast_x(%x: tensor<4xf32>) -> tensor<3x4xf32> {
  %ones = graph.constant dense<1.0> : tensor<3x4xf32>
  %sp = graph.softplus %x : tensor<4xf32>
  %t = graph.tanh %sp : tensor<4xf32>
  %m = graph.mul %t, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %y = graph.mul %m, %ones : (tensor<4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
  return %y : tensor<3x4xf32>
}
