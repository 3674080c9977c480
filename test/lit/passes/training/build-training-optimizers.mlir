// RUN: otc-opt %s --otc-build-training="optimizer=lamb weight-decay=0.01" | FileCheck %s --check-prefix=LAMB
// RUN: otc-opt %s --otc-build-training="optimizer=lion" | FileCheck %s --check-prefix=LION
// RUN: otc-opt %s --otc-build-training="optimizer=lion beta2=0.95 lr=0.0003" | FileCheck %s --check-prefix=LION-SET
// RUN: otc-opt %s --otc-build-training="optimizer=adagrad lr-decay=0.05" | FileCheck %s --check-prefix=ADAGRAD
// RUN: otc-opt %s --otc-build-training="optimizer=rmsprop" | FileCheck %s --check-prefix=RMS
// RUN: otc-opt %s --otc-build-training="optimizer=rmsprop centered=true momentum=0.9 alpha=0.9" | FileCheck %s --check-prefix=RMS-CM
// RUN: otc-opt %s --otc-build-training="optimizer=adam ema=0.999" | FileCheck %s --check-prefix=EMA
// The training pipeline (otc-compile's options) resolves the same defaults.
// RUN: otc-opt %s --otc-training-pipeline="optimizer=lion" | FileCheck %s --check-prefix=PIPE-LION
// RUN: otc-opt %s --otc-training-pipeline="optimizer=rmsprop momentum=0.5" | FileCheck %s --check-prefix=PIPE-RMS
// RUN: otc-opt %s --otc-training-pipeline="optimizer=adagrad eps=1e-6" | FileCheck %s --check-prefix=PIPE-ADAGRAD

func.func @forward(%x: tensor<4x8xf32> {otc.input = "input", otc.role = "data"},
                   %w: tensor<3x8xf32> {otc.param = "fc.weight"},
                   %b: tensor<3xf32> {otc.param = "fc.bias"}) -> (tensor<4x3xf32> {otc.output = "logits"}) {
  %h = graph.gemm %x, %w, %b {transB = true} : (tensor<4x8xf32>, tensor<3x8xf32>, tensor<3xf32>) -> tensor<4x3xf32>
  return %h : tensor<4x3xf32>
}

// lamb keeps Adam's two moments per parameter; the paper's eps 1e-6 when none
// is given.
// LAMB: otc.training = {{{.*}}eps = 9.9999999999999995E-7 : f64{{.*}}optimizer = "lamb"{{.*}}weight_decay = 1.000000e-02
// LAMB-LABEL: func.func @train_step(
// LAMB-SAME: %[[W:[^:]*]]: tensor<3x8xf32> {otc.param = "fc.weight"}
// LAMB-SAME: %[[B:[^:]*]]: tensor<3xf32> {otc.param = "fc.bias"}
// LAMB-SAME: %[[M:[^:]*]]: tensor<3x8xf32> {otc.state = "fc.weight.exp_avg"}
// LAMB-SAME: %[[V:[^:]*]]: tensor<3x8xf32> {otc.state = "fc.weight.exp_avg_sq"}
// LAMB-SAME: tensor<3xf32> {otc.state = "fc.bias.exp_avg"}
// LAMB-SAME: tensor<3xf32> {otc.state = "fc.bias.exp_avg_sq"}
// LAMB: %[[NW:.*]], %[[NM:.*]], %[[NV:.*]] = graph.lamb_update %[[W]], %{{.*}}, %[[M]], %[[V]] : tensor<3x8xf32>
// LAMB: graph.lamb_update %[[B]]
// LAMB: return %[[NW]], %[[NM]], %[[NV]],

// lion keeps one moment; betas (0.9, 0.99) unless given.
// LION: otc.training = {{{.*}}beta1 = 9.000000e-01 : f64, beta2 = 0.98999999999999999 : f64{{.*}}optimizer = "lion"
// LION-LABEL: func.func @train_step(
// LION-SAME: {otc.state = "fc.weight.exp_avg"}
// LION-SAME: {otc.state = "fc.bias.exp_avg"})
// LION: graph.lion_update %{{.*}}, %{{.*}}, %{{.*}} : tensor<3x8xf32>
// LION: graph.lion_update %{{.*}}, %{{.*}}, %{{.*}} : tensor<3xf32>
// LION-SET: otc.training = {{{.*}}beta2 = 0.94999999999999996 : f64{{.*}}lr = 3.000000e-04 : f64{{.*}}optimizer = "lion"

// adagrad keeps the accumulator `sum`; eps 1e-10 unless given.
// ADAGRAD: otc.training = {{{.*}}eps = 1.000000e-10 : f64{{.*}}lr_decay = 5.000000e-02 : f64{{.*}}optimizer = "adagrad"
// ADAGRAD-LABEL: func.func @train_step(
// ADAGRAD-SAME: %[[S:[^:]*]]: tensor<3x8xf32> {otc.state = "fc.weight.sum"}
// ADAGRAD-SAME: {otc.state = "fc.bias.sum"})
// ADAGRAD: graph.adagrad_update %{{.*}}, %{{.*}}, %[[S]] : tensor<3x8xf32>

// rmsprop takes torch's momentum 0, so no momentum buffer (the option's own
// default, 0.9, is momentum SGD's); not centered: square_avg only.
// RMS: otc.training = {{{.*}}alpha = 0.98999999999999999 : f64{{.*}}centered = false{{.*}}momentum = 0.000000e+00 : f64, momentum_buffer = false{{.*}}optimizer = "rmsprop"
// RMS-LABEL: func.func @train_step(
// RMS-SAME: %[[SQ:[^:]*]]: tensor<3x8xf32> {otc.state = "fc.weight.square_avg"}
// RMS-SAME: {otc.state = "fc.bias.square_avg"})
// RMS-NOT: grad_avg
// RMS: graph.rmsprop_update %{{.*}}, %{{.*}}, %[[SQ]] : tensor<3x8xf32>
// RMS-NOT: momentum_buffer

// Centered with momentum: square_avg, grad_avg, momentum_buffer, in that
// order, and the op says which it has.
// RMS-CM: otc.training = {{{.*}}alpha = 9.000000e-01 : f64{{.*}}centered = true{{.*}}momentum = 9.000000e-01 : f64, momentum_buffer = true
// RMS-CM-LABEL: func.func @train_step(
// RMS-CM-SAME: %[[SQ:[^:]*]]: tensor<3x8xf32> {otc.state = "fc.weight.square_avg"}
// RMS-CM-SAME: %[[GA:[^:]*]]: tensor<3x8xf32> {otc.state = "fc.weight.grad_avg"}
// RMS-CM-SAME: %[[BUF:[^:]*]]: tensor<3x8xf32> {otc.state = "fc.weight.momentum_buffer"}
// RMS-CM-SAME: {otc.state = "fc.bias.square_avg"}
// RMS-CM-SAME: {otc.state = "fc.bias.grad_avg"}
// RMS-CM-SAME: {otc.state = "fc.bias.momentum_buffer"})
// RMS-CM: %{{.*}}, %[[NS:.*]]:3 = graph.rmsprop_update %{{.*}}, %{{.*}}, %[[SQ]], %[[GA]], %[[BUF]] {centered = true, with_momentum = true} : tensor<3x8xf32>
// RMS-CM: return %{{.*}}, %[[NS]]#0, %[[NS]]#1, %[[NS]]#2,

// With an EMA, every trained parameter's last state slot, updated right after its
// optimizer update from the parameter's new value, and returned.
// EMA: otc.training = {{{.*}}ema = 0.99899999999999999 : f64
// EMA-LABEL: func.func @train_step(
// EMA-SAME: %[[W:[^:]*]]: tensor<3x8xf32> {otc.param = "fc.weight"}
// EMA-SAME: {otc.state = "fc.weight.exp_avg"}
// EMA-SAME: {otc.state = "fc.weight.exp_avg_sq"}
// EMA-SAME: %[[EW:[^:]*]]: tensor<3x8xf32> {otc.state = "fc.weight.ema"}
// EMA-SAME: {otc.state = "fc.bias.exp_avg"}
// EMA-SAME: {otc.state = "fc.bias.exp_avg_sq"}
// EMA-SAME: %[[EB:[^:]*]]: tensor<3xf32> {otc.state = "fc.bias.ema"})
// EMA-SAME: tensor<3x8xf32> {otc.updates = 6 : i64}
// EMA-SAME: tensor<3xf32> {otc.updates = 9 : i64}
// EMA: %[[NW:.*]], %{{.*}}, %{{.*}} = graph.adam_update %[[W]]
// EMA-NEXT: %[[NEW:.*]] = graph.ema_update %[[EW]], %[[NW]] {decay = 9.990000e-01 : f32} : tensor<3x8xf32>
// EMA: %[[NB:.*]], %{{.*}}, %{{.*}} = graph.adam_update
// EMA-NEXT: %[[NEB:.*]] = graph.ema_update %[[EB]], %[[NB]]
// EMA: return %[[NW]], %{{.*}}, %{{.*}}, %[[NEW]], %[[NB]], %{{.*}}, %{{.*}}, %[[NEB]],

// PIPE-LION: beta2 = 0.98999999999999999 : f64
// PIPE-LION: graph.lion_update
// PIPE-RMS: momentum = 5.000000e-01 : f64, momentum_buffer = true
// PIPE-RMS: {otc.state = "fc.weight.momentum_buffer"}
// PIPE-ADAGRAD: eps = 9.9999999999999995E-7 : f64
