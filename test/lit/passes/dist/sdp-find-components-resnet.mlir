// RUN: otc-opt %s --otc-sdp-find-components 2>&1 | FileCheck %s --check-prefix=BLOCK
// RUN: otc-opt %s --otc-sdp-find-components=mode=neuron 2>&1 | FileCheck %s --check-prefix=NEURON

// A ResNet-like model as torch exports it (stem, two identity blocks, one
// projection block, linear head; BatchNorm in training mode).
// The identity blocks' branches are components; the projection block is not.
// BLOCK: remark: B-SDP component 'layer1.0': residual branch of 5 ops, 10 parameters (320 elements)
// BLOCK: remark: B-SDP component 'layer1.1': residual branch of 5 ops, 10 parameters (320 elements)
// BLOCK: remark: not an SDP component: not a residual connection: neither operand is computed from the other (a projection shortcut?)
// BLOCK: graph.add {{.*}} {sdp.component = "layer1.0"}
// BLOCK: graph.add {{.*}} {sdp.component = "layer1.1"}
// BLOCK: graph.add {{.*}} {sdp.rejected = "not a residual connection

// N-SDP: the channels between the two convolutions of each block (through
// BatchNorm and ReLU) are groups; the stem's and the blocks' outputs feed
// the residual stream, which is never sliced.
// NEURON: remark: N-SDP neuron group 'layer1.0.conv1': 4 features, 1 consumer(s), 6 sliced parameters
// NEURON: remark: N-SDP neuron group 'layer1.1.conv1': 4 features, 1 consumer(s), 6 sliced parameters
// NEURON: remark: N-SDP neuron group 'layer2.conv1': 8 features, 1 consumer(s), 6 sliced parameters
// NEURON: remark: not an SDP component: the features reach 'graph.add', which combines them with an activation outside the group (the residual stream is never sliced)
// NEURON: remark: not an SDP component: the features reach 'graph.add', which combines them with an activation outside the group (the residual stream is never sliced)
// NEURON: remark: not an SDP component: the features reach 'graph.add', which combines them with an activation outside the group (the residual stream is never sliced)
// NEURON: remark: not an SDP component: the features reach 'graph.add', which combines them with an activation outside the group (the residual stream is never sliced)
// NEURON: remark: not an SDP component: the features reach 'graph.add', which combines them with an activation outside the group (the residual stream is never sliced)
// NEURON: remark: not an SDP component: the features are a model output

module attributes {otc.seed = 0 : i64} {
  func.func @forward(%arg0: tensor<2x1x8x8xf32> {otc.input = "input.1", otc.role = "data"}, %arg1: tensor<4x1x3x3xf32> {otc.param = "stem.0.weight"}, %arg2: tensor<4xf32> {otc.param = "stem.1.weight"}, %arg3: tensor<4xf32> {otc.param = "stem.1.bias"}, %arg4: tensor<4xf32> {otc.buffer, otc.param = "stem.1.running_mean"}, %arg5: tensor<4xf32> {otc.buffer, otc.param = "stem.1.running_var"}, %arg6: tensor<4x4x3x3xf32> {otc.param = "layer1.0.conv1.weight"}, %arg7: tensor<4xf32> {otc.param = "layer1.0.bn1.weight"}, %arg8: tensor<4xf32> {otc.param = "layer1.0.bn1.bias"}, %arg9: tensor<4xf32> {otc.buffer, otc.param = "layer1.0.bn1.running_mean"}, %arg10: tensor<4xf32> {otc.buffer, otc.param = "layer1.0.bn1.running_var"}, %arg11: tensor<4x4x3x3xf32> {otc.param = "layer1.0.conv2.weight"}, %arg12: tensor<4xf32> {otc.param = "layer1.0.bn2.weight"}, %arg13: tensor<4xf32> {otc.param = "layer1.0.bn2.bias"}, %arg14: tensor<4xf32> {otc.buffer, otc.param = "layer1.0.bn2.running_mean"}, %arg15: tensor<4xf32> {otc.buffer, otc.param = "layer1.0.bn2.running_var"}, %arg16: tensor<4x4x3x3xf32> {otc.param = "layer1.1.conv1.weight"}, %arg17: tensor<4xf32> {otc.param = "layer1.1.bn1.weight"}, %arg18: tensor<4xf32> {otc.param = "layer1.1.bn1.bias"}, %arg19: tensor<4xf32> {otc.buffer, otc.param = "layer1.1.bn1.running_mean"}, %arg20: tensor<4xf32> {otc.buffer, otc.param = "layer1.1.bn1.running_var"}, %arg21: tensor<4x4x3x3xf32> {otc.param = "layer1.1.conv2.weight"}, %arg22: tensor<4xf32> {otc.param = "layer1.1.bn2.weight"}, %arg23: tensor<4xf32> {otc.param = "layer1.1.bn2.bias"}, %arg24: tensor<4xf32> {otc.buffer, otc.param = "layer1.1.bn2.running_mean"}, %arg25: tensor<4xf32> {otc.buffer, otc.param = "layer1.1.bn2.running_var"}, %arg26: tensor<8x4x3x3xf32> {otc.param = "layer2.conv1.weight"}, %arg27: tensor<8xf32> {otc.param = "layer2.bn1.weight"}, %arg28: tensor<8xf32> {otc.param = "layer2.bn1.bias"}, %arg29: tensor<8xf32> {otc.buffer, otc.param = "layer2.bn1.running_mean"}, %arg30: tensor<8xf32> {otc.buffer, otc.param = "layer2.bn1.running_var"}, %arg31: tensor<8x8x3x3xf32> {otc.param = "layer2.conv2.weight"}, %arg32: tensor<8xf32> {otc.param = "layer2.bn2.weight"}, %arg33: tensor<8xf32> {otc.param = "layer2.bn2.bias"}, %arg34: tensor<8xf32> {otc.buffer, otc.param = "layer2.bn2.running_mean"}, %arg35: tensor<8xf32> {otc.buffer, otc.param = "layer2.bn2.running_var"}, %arg36: tensor<8x4x1x1xf32> {otc.param = "layer2.shortcut.0.weight"}, %arg37: tensor<8xf32> {otc.param = "layer2.shortcut.1.weight"}, %arg38: tensor<8xf32> {otc.param = "layer2.shortcut.1.bias"}, %arg39: tensor<8xf32> {otc.buffer, otc.param = "layer2.shortcut.1.running_mean"}, %arg40: tensor<8xf32> {otc.buffer, otc.param = "layer2.shortcut.1.running_var"}, %arg41: tensor<3x8xf32> {otc.param = "head.weight"}, %arg42: tensor<3xf32> {otc.param = "head.bias"}) -> (tensor<2x3xf32> {otc.output = "95"}) {
    %0 = graph.conv %arg0, %arg1 {dilations = array<i64: 1, 1>, group = 1 : i64, pads_begin = array<i64: 1, 1>, pads_end = array<i64: 1, 1>, strides = array<i64: 1, 1>} : (tensor<2x1x8x8xf32>, tensor<4x1x3x3xf32>) -> tensor<2x4x8x8xf32>
    %result, %new_mean, %new_var, %saved_mean, %saved_invstd = graph.batch_norm %0, %arg2, %arg3, %arg4, %arg5 {epsilon = 9.99999974E-6 : f32, momentum = 0.899999976 : f32, unbiased_running_var = true} : (tensor<2x4x8x8xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<2x4x8x8xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
    %1 = graph.relu %result : tensor<2x4x8x8xf32>
    %2 = graph.conv %1, %arg6 {dilations = array<i64: 1, 1>, group = 1 : i64, pads_begin = array<i64: 1, 1>, pads_end = array<i64: 1, 1>, strides = array<i64: 1, 1>} : (tensor<2x4x8x8xf32>, tensor<4x4x3x3xf32>) -> tensor<2x4x8x8xf32>
    %result_0, %new_mean_1, %new_var_2, %saved_mean_3, %saved_invstd_4 = graph.batch_norm %2, %arg7, %arg8, %arg9, %arg10 {epsilon = 9.99999974E-6 : f32, momentum = 0.899999976 : f32, unbiased_running_var = true} : (tensor<2x4x8x8xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<2x4x8x8xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
    %3 = graph.relu %result_0 : tensor<2x4x8x8xf32>
    %4 = graph.conv %3, %arg11 {dilations = array<i64: 1, 1>, group = 1 : i64, pads_begin = array<i64: 1, 1>, pads_end = array<i64: 1, 1>, strides = array<i64: 1, 1>} : (tensor<2x4x8x8xf32>, tensor<4x4x3x3xf32>) -> tensor<2x4x8x8xf32>
    %result_5, %new_mean_6, %new_var_7, %saved_mean_8, %saved_invstd_9 = graph.batch_norm %4, %arg12, %arg13, %arg14, %arg15 {epsilon = 9.99999974E-6 : f32, momentum = 0.899999976 : f32, unbiased_running_var = true} : (tensor<2x4x8x8xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<2x4x8x8xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
    %5 = graph.add %result_5, %1 : (tensor<2x4x8x8xf32>, tensor<2x4x8x8xf32>) -> tensor<2x4x8x8xf32>
    %6 = graph.relu %5 : tensor<2x4x8x8xf32>
    %7 = graph.conv %6, %arg16 {dilations = array<i64: 1, 1>, group = 1 : i64, pads_begin = array<i64: 1, 1>, pads_end = array<i64: 1, 1>, strides = array<i64: 1, 1>} : (tensor<2x4x8x8xf32>, tensor<4x4x3x3xf32>) -> tensor<2x4x8x8xf32>
    %result_10, %new_mean_11, %new_var_12, %saved_mean_13, %saved_invstd_14 = graph.batch_norm %7, %arg17, %arg18, %arg19, %arg20 {epsilon = 9.99999974E-6 : f32, momentum = 0.899999976 : f32, unbiased_running_var = true} : (tensor<2x4x8x8xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<2x4x8x8xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
    %8 = graph.relu %result_10 : tensor<2x4x8x8xf32>
    %9 = graph.conv %8, %arg21 {dilations = array<i64: 1, 1>, group = 1 : i64, pads_begin = array<i64: 1, 1>, pads_end = array<i64: 1, 1>, strides = array<i64: 1, 1>} : (tensor<2x4x8x8xf32>, tensor<4x4x3x3xf32>) -> tensor<2x4x8x8xf32>
    %result_15, %new_mean_16, %new_var_17, %saved_mean_18, %saved_invstd_19 = graph.batch_norm %9, %arg22, %arg23, %arg24, %arg25 {epsilon = 9.99999974E-6 : f32, momentum = 0.899999976 : f32, unbiased_running_var = true} : (tensor<2x4x8x8xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<2x4x8x8xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
    %10 = graph.add %result_15, %6 : (tensor<2x4x8x8xf32>, tensor<2x4x8x8xf32>) -> tensor<2x4x8x8xf32>
    %11 = graph.relu %10 : tensor<2x4x8x8xf32>
    %12 = graph.conv %11, %arg26 {dilations = array<i64: 1, 1>, group = 1 : i64, pads_begin = array<i64: 1, 1>, pads_end = array<i64: 1, 1>, strides = array<i64: 2, 2>} : (tensor<2x4x8x8xf32>, tensor<8x4x3x3xf32>) -> tensor<2x8x4x4xf32>
    %result_20, %new_mean_21, %new_var_22, %saved_mean_23, %saved_invstd_24 = graph.batch_norm %12, %arg27, %arg28, %arg29, %arg30 {epsilon = 9.99999974E-6 : f32, momentum = 0.899999976 : f32, unbiased_running_var = true} : (tensor<2x8x4x4xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<2x8x4x4xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>)
    %13 = graph.relu %result_20 : tensor<2x8x4x4xf32>
    %14 = graph.conv %13, %arg31 {dilations = array<i64: 1, 1>, group = 1 : i64, pads_begin = array<i64: 1, 1>, pads_end = array<i64: 1, 1>, strides = array<i64: 1, 1>} : (tensor<2x8x4x4xf32>, tensor<8x8x3x3xf32>) -> tensor<2x8x4x4xf32>
    %result_25, %new_mean_26, %new_var_27, %saved_mean_28, %saved_invstd_29 = graph.batch_norm %14, %arg32, %arg33, %arg34, %arg35 {epsilon = 9.99999974E-6 : f32, momentum = 0.899999976 : f32, unbiased_running_var = true} : (tensor<2x8x4x4xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<2x8x4x4xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>)
    %15 = graph.conv %11, %arg36 {dilations = array<i64: 1, 1>, group = 1 : i64, pads_begin = array<i64: 0, 0>, pads_end = array<i64: 0, 0>, strides = array<i64: 2, 2>} : (tensor<2x4x8x8xf32>, tensor<8x4x1x1xf32>) -> tensor<2x8x4x4xf32>
    %result_30, %new_mean_31, %new_var_32, %saved_mean_33, %saved_invstd_34 = graph.batch_norm %15, %arg37, %arg38, %arg39, %arg40 {epsilon = 9.99999974E-6 : f32, momentum = 0.899999976 : f32, unbiased_running_var = true} : (tensor<2x8x4x4xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<2x8x4x4xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>)
    %16 = graph.add %result_25, %result_30 : (tensor<2x8x4x4xf32>, tensor<2x8x4x4xf32>) -> tensor<2x8x4x4xf32>
    %17 = graph.relu %16 : tensor<2x8x4x4xf32>
    %18 = graph.reduce "mean" %17 {axes = array<i64: 2, 3>, keepdims = true} : tensor<2x8x4x4xf32> -> tensor<2x8x1x1xf32>
    %19 = graph.reshape %18 : tensor<2x8x1x1xf32> -> tensor<2x8xf32>
    %20 = graph.gemm %19, %arg41, %arg42 {transB = true} : (tensor<2x8xf32>, tensor<3x8xf32>, tensor<3xf32>) -> tensor<2x3xf32>
    return %20 : tensor<2x3xf32>
  }
}
