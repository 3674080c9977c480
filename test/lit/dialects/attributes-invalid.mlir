// RUN: otc-opt %s --split-input-file --verify-diagnostics

// The otc.* and dist.* attributes the passes index with are verified where
// they appear: hand-written IR gets a diagnostic, never a pass's crash.

// expected-error @+1 {{result 0 updates argument -1, but the function has 1 argument}}
func.func @negative(%w: tensor<4xf32> {otc.param = "w"}) -> (tensor<4xf32> {otc.updates = -1 : i64}) {
  return %w : tensor<4xf32>
}

// -----

// expected-error @+1 {{result 0 updates argument 10, but the function has 1 argument}}
func.func @past_the_end(%w: tensor<4xf32> {otc.param = "w"}) -> (tensor<4xf32> {otc.updates = 10 : i64}) {
  return %w : tensor<4xf32>
}

// -----

// expected-error @+1 {{result 0 updates argument 9999999999, but the function has 1 argument}}
func.func @huge(%w: tensor<4xf32> {otc.param = "w"}) -> (tensor<4xf32> {otc.updates = 9999999999 : i64}) {
  return %w : tensor<4xf32>
}

// -----

// expected-error @+1 {{result 0 updates argument 1, a model input, not a parameter or state}}
func.func @an_input(%w: tensor<4xf32> {otc.param = "w"}, %x: tensor<4xf32> {otc.input = "x", otc.role = "data"}) -> (tensor<4xf32> {otc.updates = 1 : i64}) {
  return %w : tensor<4xf32>
}

// -----

// expected-error @+1 {{result 0 updates argument 0 of type 'tensor<4xf32>' with a value of type 'tensor<2xf32>'}}
func.func @other_type(%w: tensor<4xf32> {otc.param = "w"}, %b: tensor<2xf32> {otc.param = "b"}) -> (tensor<2xf32> {otc.updates = 0 : i64}) {
  return %b : tensor<2xf32>
}

// -----

// expected-error @+1 {{results 0 and 1 both update argument 0}}
func.func @twice(%w: tensor<4xf32> {otc.param = "w"}) -> (tensor<4xf32> {otc.updates = 0 : i64}, tensor<4xf32> {otc.updates = 0 : i64}) {
  return %w, %w : tensor<4xf32>, tensor<4xf32>
}

// -----

// expected-error @+1 {{'otc.updates' must be an integer on a function result}}
func.func @not_an_integer(%w: tensor<4xf32> {otc.param = "w"}) -> (tensor<4xf32> {otc.updates = "w"}) {
  return %w : tensor<4xf32>
}

// -----

// expected-error @+1 {{'otc.param' must be a string}}
func.func @param_name(%w: tensor<4xf32> {otc.param = 3 : i64}) {
  return
}

// -----

// expected-error @+1 {{'dist.world_size' must be a positive integer}}
module attributes {dist.world_size = 0 : i64} {
}

// -----

// expected-error @+1 {{'dist.world_size' must be a positive integer}}
module attributes {dist.world_size = "two"} {
}

// -----

// expected-error @+1 {{unknown dist attribute 'dist.wold_size'}}
module attributes {dist.wold_size = 2 : i64} {
  func.func @f() {
    return
  }
}

// -----

// expected-error @+1 {{'otc.seed' must be an integer}}
module attributes {otc.seed = "seven"} {
  func.func @f() {
    return
  }
}
