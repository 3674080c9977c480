module attributes {dist.wold_size = 2 : i64} {
  func.func @f() {
    return
  }
}
