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
