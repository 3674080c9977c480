// RUN: not otc-translate --emit-cpp %s 2>&1 | FileCheck %s

// CHECK: error: module is not memory-planned (run --otc-plan-memory first)
module {
  func.func @train_step(%arena: memref<?xi8>) {
    return
  }
}
