// RUN: otc-opt %s --otc-lower-to-exec --otc-plan-memory | FileCheck %s --implicit-check-not=exec.alloc --implicit-check-not='"pack"' --implicit-check-not='"unpack"'
// The planner's layout passes its verifier.
// RUN: otc-opt %s --otc-lower-to-exec --otc-plan-memory --otc-verify-plan -o /dev/null

// The gradients are computed straight into their bucket (at 4-byte offsets
// inside it), the reduction works on the bucket in place, and the updates
// read the gradients back from it: no pack or unpack copies remain.
// CHECK: {kind = "residual", name = "bucket0.residual", offset = {{[0-9]+}} : i64, role = "state", type = memref<10xf32>}
// CHECK-SAME: {name = "bucket0", offset = [[BUCKET:[0-9]+]] : i64, role = "grad", type = memref<10xf32>}
// CHECK-SAME: comm_buffers = 40 : i64
// CHECK-LABEL: func.func @train_step
// CHECK: %[[DB:.*]] = exec.view %{{.*}}[[[BUCKET]]] : memref<?xi8> -> memref<2xf32>
// CHECK: exec.kernel "neg" ins(%{{.*}}) outs(%[[DB]] : memref<2xf32>)
// CHECK: %[[DW:.*]] = exec.view %{{.*}}[[[DWOFF:[0-9]+]]] : memref<?xi8> -> memref<4x2xf32>
// CHECK: exec.kernel "relu" ins(%{{.*}}) outs(%[[DW]] : memref<4x2xf32>)
// CHECK: %[[B:.*]] = exec.view %{{.*}}[[[BUCKET]]] : memref<?xi8> -> memref<10xf32>
// CHECK: exec.compressed_all_reduce %[[B]], %{{.*}} {{{.*}}method = "topk-int8"
// CHECK-DAG: exec.view %{{.*}}[[[DWOFF]]] : memref<?xi8> -> memref<4x2xf32>
// CHECK-DAG: exec.view %{{.*}}[[[BUCKET]]] : memref<?xi8> -> memref<2xf32>
// CHECK: exec.kernel "sgd_update"
// CHECK: exec.kernel "sgd_update"
module {
  func.func @train_step(%w2: tensor<4x2xf32> {otc.param = "w2"}, %b2: tensor<2xf32> {otc.param = "b2"},
                        %r: tensor<10xf32> {otc.state = "bucket0.residual", otc.role = "residual"})
      -> (tensor<4x2xf32> {otc.updates = 0 : i64}, tensor<2xf32> {otc.updates = 1 : i64}, tensor<10xf32> {otc.updates = 2 : i64}) {
    %db2 = graph.neg %b2 : tensor<2xf32>
    %dw2 = graph.relu %w2 : tensor<4x2xf32>
    %b = dist.bucket %db2, %dw2 : tensor<2xf32>, tensor<4x2xf32> -> tensor<10xf32>
    %avg, %r2 = dist.compressed_all_reduce %b, %r {method = "topk-int8"} : tensor<10xf32>, tensor<10xf32> -> tensor<10xf32>, tensor<10xf32>
    %u:2 = dist.unbucket %avg : tensor<10xf32> -> tensor<2xf32>, tensor<4x2xf32>
    %n2 = graph.sgd_update %w2, %u#1 : tensor<4x2xf32>
    %n3 = graph.sgd_update %b2, %u#0 : tensor<2xf32>
    return %n2, %n3, %r2 : tensor<4x2xf32>, tensor<2xf32>, tensor<10xf32>
  }
}
