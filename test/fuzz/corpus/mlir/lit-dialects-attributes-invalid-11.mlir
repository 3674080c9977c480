module attributes {otc.seed = "seven"} {
  func.func @f() {
    return
  }
}
