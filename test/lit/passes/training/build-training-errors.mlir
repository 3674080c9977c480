// RUN: otc-opt %s --split-input-file --otc-build-training="loss=hinge" --verify-diagnostics
// RUN: not otc-opt %s --otc-build-training="optimizer=lbfgs" 2>&1 | FileCheck %s --check-prefix=OPT
// RUN: not otc-opt %s --otc-build-training="loss=none" 2>&1 | FileCheck %s --check-prefix=NONE
// RUN: not otc-opt %s --otc-build-training="lr=-1" 2>&1 | FileCheck %s --check-prefix=LR

// expected-error @+1 {{unknown loss 'hinge' (expected cross-entropy, mse, l1, bce-with-logits, nll or none)}}
module {
  func.func @forward(%x: tensor<4x8xf32> {otc.input = "input", otc.role = "data"},
                     %w: tensor<8x3xf32> {otc.param = "w"}) -> (tensor<4x3xf32> {otc.output = "y"}) {
    %y = graph.matmul %x, %w : (tensor<4x8xf32>, tensor<8x3xf32>) -> tensor<4x3xf32>
    return %y : tensor<4x3xf32>
  }
}
// OPT: unknown optimizer 'lbfgs' (expected sgd, momentum, adam or adamw)
// NONE: --loss none needs a scalar first output (the model's own loss), got 'tensor<4x3xf32>'
// LR: learning rate must be positive, got -1
