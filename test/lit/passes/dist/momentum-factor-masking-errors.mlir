// RUN: otc-opt %s --split-input-file --otc-insert-compressed-allreduce --verify-diagnostics
// RUN: not otc-opt %S/sdp-compress.mlir --otc-sdp="world-size=4 active=0.25 masking=backward" --otc-build-training="loss=mse optimizer=momentum" --otc-momentum-correction 2>&1 | FileCheck %s --check-prefix=SDP
// RUN: otc-opt %S/sdp-compress.mlir --otc-sdp="world-size=4 active=0.25 masking=backward" --otc-build-training="loss=mse optimizer=momentum" --otc-momentum-correction="factor-masking=false" -o /dev/null
// RUN: not otc-opt %S/sdp-compress.mlir --otc-sdp="world-size=4 active=0.25 masking=backward" --otc-build-training="loss=mse optimizer=adam" --otc-momentum-correction 2>&1 | FileCheck %s --check-prefix=SDP

// A bucket keeps one velocity for all its gradients: a function whose
// updates take their momentum from the exchange only in part is refused.
// expected-error @+1 {{only 1 of 2 optimizer updates take their momentum from the compressed all-reduce (dist.momentum_in_exchange): a bucket cannot keep a velocity for some of its gradients only}}
func.func @train_step(%w: tensor<4xf32> {otc.param = "w"}, %g: tensor<4xf32> {otc.input = "g", otc.role = "data"},
                      %b: tensor<2xf32> {otc.param = "b"}, %gb: tensor<2xf32> {otc.input = "gb", otc.role = "data"})
    -> (tensor<4xf32> {otc.updates = 0 : i64}, tensor<2xf32> {otc.updates = 2 : i64}) {
  %bk = dist.bucket %g, %gb : tensor<4xf32>, tensor<2xf32> -> tensor<6xf32>
  %u:2 = dist.unbucket %bk : tensor<6xf32> -> tensor<4xf32>, tensor<2xf32>
  %w2 = graph.sgd_update %w, %u#0 {dist.momentum_in_exchange} : tensor<4xf32>
  %b2 = graph.sgd_update %b, %u#1 : tensor<2xf32>
  return %w2, %b2 : tensor<4xf32>, tensor<2xf32>
}

// -----

// One velocity per bucket, decayed by one hyperparameter: SGD updates
// (momentum) and Adam's (beta1) cannot share it.
func.func @train_step(%w: tensor<4xf32> {otc.param = "w"}, %g: tensor<4xf32> {otc.input = "g", otc.role = "data"},
                      %b: tensor<2xf32> {otc.param = "b"}, %gb: tensor<2xf32> {otc.input = "gb", otc.role = "data"},
                      %m: tensor<2xf32> {otc.state = "b.exp_avg"}, %v: tensor<2xf32> {otc.state = "b.exp_avg_sq"})
    -> (tensor<4xf32> {otc.updates = 0 : i64}, tensor<2xf32> {otc.updates = 2 : i64},
        tensor<2xf32> {otc.updates = 4 : i64}, tensor<2xf32> {otc.updates = 5 : i64}) {
  %bk = dist.bucket %g, %gb : tensor<4xf32>, tensor<2xf32> -> tensor<6xf32>
  %u:2 = dist.unbucket %bk : tensor<6xf32> -> tensor<4xf32>, tensor<2xf32>
  %w2 = graph.sgd_update %w, %u#0 {dist.momentum_in_exchange} : tensor<4xf32>
  // expected-error @+1 {{optimizer updates that take their momentum from the compressed all-reduce decay it with both momentum and beta1: a bucket's velocity has one}}
  %b2, %m2, %v2 = graph.adam_update %b, %u#1, %m, %v {dist.momentum_in_exchange, first_moment = false} : tensor<2xf32>
  return %w2, %b2, %m2, %v2 : tensor<4xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>
}

// -----

func.func @not_unit(%w: tensor<4xf32>, %g: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'dist.momentum_in_exchange' is a unit attribute}}
  %w2 = graph.sgd_update %w, %g {dist.momentum_in_exchange = 1 : i64} : tensor<4xf32>
  return %w2 : tensor<4xf32>
}

// SDP with one owner per block: that part is never exchanged, so masking
// (which keeps the velocity in the exchange) is refused, for Adam's first
// moment too; without masking the velocity stays in the graph and it
// compiles.
// SDP: error: momentum-factor masking keeps the velocity in the compressed all-reduce, but a part of this parameter has a single SDP owner and is never exchanged; use momentum correction without factor masking (--no-factor-masking)
