module {
  func.func @train_step(%arena: memref<?xi8>) {
    return
  }
}
