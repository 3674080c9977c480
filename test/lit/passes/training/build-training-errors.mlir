// RUN: otc-opt %s --split-input-file --otc-build-training="loss=hinge" --verify-diagnostics
// RUN: not otc-opt %s --otc-build-training="optimizer=lbfgs" 2>&1 | FileCheck %s --check-prefix=OPT
// RUN: not otc-opt %s --otc-build-training="loss=none" 2>&1 | FileCheck %s --check-prefix=NONE
// RUN: not otc-opt %s --otc-build-training="lr=-1" 2>&1 | FileCheck %s --check-prefix=LR
// RUN: not otc-opt %s --otc-build-training="optimizer=adam centered=true" 2>&1 | FileCheck %s --check-prefix=CENTERED
// RUN: not otc-opt %s --otc-build-training="optimizer=rmsprop alpha=1" 2>&1 | FileCheck %s --check-prefix=ALPHA
// RUN: not otc-opt %s --otc-build-training="optimizer=adagrad lr-decay=-0.5" 2>&1 | FileCheck %s --check-prefix=LRDECAY
// RUN: not otc-opt %s --otc-build-training="ema=1.5" 2>&1 | FileCheck %s --check-prefix=EMA
// RUN: not otc-opt %s --otc-build-training="optimizer=lamb eps=0" 2>&1 | FileCheck %s --check-prefix=EPS

// expected-error @+1 {{unknown loss 'hinge' (expected cross-entropy, mse, l1, bce-with-logits, nll or none)}}
module {
  func.func @forward(%x: tensor<4x8xf32> {otc.input = "input", otc.role = "data"},
                     %w: tensor<8x3xf32> {otc.param = "w"}) -> (tensor<4x3xf32> {otc.output = "y"}) {
    %y = graph.matmul %x, %w : (tensor<4x8xf32>, tensor<8x3xf32>) -> tensor<4x3xf32>
    return %y : tensor<4x3xf32>
  }
}
// OPT: unknown optimizer 'lbfgs' (expected sgd, momentum, adam, adamw, lamb, lion, adagrad or rmsprop)
// NONE: --loss none needs a scalar first output (the model's own loss), got 'tensor<4x3xf32>'
// LR: learning rate must be positive, got -1
// CENTERED: centered is an RMSprop option; the optimizer is adam
// ALPHA: RMSprop alpha must be in [0, 1), got 1
// LRDECAY: Adagrad lr decay must be non-negative, got -5.000000e-01
// EMA: the EMA decay must be in (0, 1), got 1.5
// EPS: epsilon must be positive, got 0
