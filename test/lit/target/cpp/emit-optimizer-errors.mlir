// RUN: otc-opt %s --otc-plan-memory --otc-place-waits | not otc-translate --emit-cpp 2>&1 | FileCheck %s

// An RMSprop call whose buffers do not match its centered / with_momentum
// attributes is refused on its op rather than emitted with a missing
// state pointer.
// CHECK: error: 'exec.kernel' op rmsprop_update writes 3 buffers (parameter, square_avg, grad_avg), got 2
module {
  func.func @train_step(%w: memref<6xf32> {otc.param = "w"},
                        %sq: memref<6xf32> {otc.state = "w.square_avg"},
                        %x: memref<6xf32> {otc.input = "x", otc.role = "data"}) {
    %g = exec.alloc : memref<6xf32>
    exec.kernel "neg" ins(%x : memref<6xf32>) outs(%g : memref<6xf32>)
    exec.kernel "rmsprop_update" ins(%g : memref<6xf32>) outs(%w, %sq : memref<6xf32>, memref<6xf32>) {centered = true}
    return
  }
}
