// RUN: otc-opt %s --otc-sdp="mode=neuron world-size=2 active=0.5" | FileCheck %s
// RUN: otc-opt %s --otc-sdp="mode=neuron world-size=4 active=0.5 assignment=disjoint" --otc-build-training="loss=mse" --otc-insert-allreduce="world-size=4" | FileCheck %s --check-prefix=TRAIN
// RUN: otc-opt %s --otc-sdp="mode=neuron world-size=4 active=0.5" --otc-build-training="loss=mse" --otc-insert-allreduce="world-size=4" | FileCheck %s --check-prefix=CYCLIC
// RUN: otc-opt %s --otc-sdp="mode=neuron world-size=4 active=0.75 assignment=disjoint" --otc-build-training="loss=mse" --otc-insert-allreduce="world-size=4" | FileCheck %s --check-prefix=TILES
// RUN: otc-opt %s --otc-sdp="mode=neuron world-size=4 active=0.75 assignment=disjoint" --otc-build-training="loss=mse" --otc-bucket-gradients | FileCheck %s --check-prefix=TILES-COMPRESS
// RUN: otc-opt %s --otc-sdp="mode=neuron world-size=4 active=0.5 masking=backward assignment=disjoint" --otc-build-training="loss=mse optimizer=adam" --otc-insert-allreduce="world-size=4" | FileCheck %s --check-prefix=BWD


// Neuron groups: fc1's 8 hidden units (through its bias and a relu) into
// fc2; fc2's 6 into the head. Rank r keeps half of each.
func.func @forward(%x: tensor<2x5xf32> {otc.input = "x", otc.role = "data"},
                   %w1: tensor<8x5xf32> {otc.param = "fc1.weight"},
                   %c1: tensor<8xf32> {otc.param = "fc1.bias"},
                   %w2: tensor<6x8xf32> {otc.param = "fc2.weight"},
                   %c2: tensor<6xf32> {otc.param = "fc2.bias"},
                   %w3: tensor<6x3xf32> {otc.param = "fc3.weight"}) -> tensor<2x3xf32> {
  %0 = graph.gemm %x, %w1, %c1 {transB = true} : (tensor<2x5xf32>, tensor<8x5xf32>, tensor<8xf32>) -> tensor<2x8xf32>
  %1 = graph.relu %0 : tensor<2x8xf32>
  %2 = graph.gemm %1, %w2, %c2 {transB = true} : (tensor<2x8xf32>, tensor<6x8xf32>, tensor<6xf32>) -> tensor<2x6xf32>
  %3 = graph.sigmoid %2 : tensor<2x6xf32>
  %4 = graph.matmul %3, %w3 : (tensor<2x6xf32>, tensor<6x3xf32>) -> tensor<2x3xf32>
  return %4 : tensor<2x3xf32>
}

// Rank 1 keeps fc1's units 4..7 and fc2's 3..5: fc2.weight loses columns
// for the first group and rows for the second. What the consumers read is
// scaled by 2 (= features / kept).
// CHECK: components = [{name = "fc1[0]", owners = array<i64: 0>}, {name = "fc1[1]", owners = array<i64: 1>}, {name = "fc2[0]", owners = array<i64: 0>}, {name = "fc2[1]", owners = array<i64: 1>}]
// CHECK-LABEL: func.func @forward_rank1(
// CHECK-SAME: tensor<4x5xf32> {dist.sdp_owners = array<i64: 1>, dist.sdp_slices = [{axis = 0 : i64, ranges = array<i64: 4, 8>}], otc.param = "fc1.weight"}
// CHECK-SAME: tensor<4xf32> {dist.sdp_owners = array<i64: 1>, dist.sdp_slices = [{axis = 0 : i64, ranges = array<i64: 4, 8>}], otc.param = "fc1.bias"}
// CHECK-SAME: tensor<3x4xf32> {dist.sdp_owners = array<i64: 1>, dist.sdp_slices = [{axis = 1 : i64, ranges = array<i64: 4, 8>}, {axis = 0 : i64, ranges = array<i64: 3, 6>}], otc.param = "fc2.weight"}
// CHECK-SAME: tensor<3xf32> {dist.sdp_owners = array<i64: 1>, dist.sdp_slices = [{axis = 0 : i64, ranges = array<i64: 3, 6>}], otc.param = "fc2.bias"}
// CHECK-SAME: tensor<3x3xf32> {dist.sdp_owners = array<i64: 1>, dist.sdp_slices = [{axis = 0 : i64, ranges = array<i64: 3, 6>}], otc.param = "fc3.weight"}
// CHECK: %[[H:.*]] = graph.gemm %arg0, %arg1, %arg2 {transB = true} : (tensor<2x5xf32>, tensor<4x5xf32>, tensor<4xf32>) -> tensor<2x4xf32>
// CHECK: %[[R:.*]] = graph.relu %[[H]] : tensor<2x4xf32>
// CHECK: %[[S:.*]] = graph.mul %[[R]], %{{.*}} : (tensor<2x4xf32>, tensor<f32>) -> tensor<2x4xf32>
// CHECK: graph.gemm %[[S]], %arg3, %arg4 {transB = true} : (tensor<2x4xf32>, tensor<3x4xf32>, tensor<3xf32>) -> tensor<2x3xf32>
// CHECK: graph.matmul %{{.*}}, %arg5 : (tensor<2x3xf32>, tensor<3x3xf32>) -> tensor<2x3xf32>

// Four ranks, two owners per chunk, the cycle run on by two per chunk
// (`disjoint`): ranks {0, 1} and {2, 3} hold the same chunks and average
// their gradients in their owner group.
// TRAIN-LABEL: func.func @train_step_rank0(
// TRAIN-SAME: tensor<4x5xf32> {dist.sdp_owners = array<i64: 0, 1>, dist.sdp_slices = [{axis = 0 : i64, ranges = array<i64: 0, 2, 4, 6>}], otc.param = "fc1.weight"}
// TRAIN: dist.all_reduce mean %{{.*}} {ranks = array<i64: 0, 1>} : tensor<4x5xf32>
// TRAIN-LABEL: func.func @train_step_rank2(
// TRAIN: dist.all_reduce mean %{{.*}} {ranks = array<i64: 2, 3>} : tensor<4x5xf32>
// TRAIN-NOT: func.func @train_step_rank1

// Four ranks, three owners per chunk: chunk c is owned by {0,1,2}, {3,0,1},
// {2,3,0}, {1,2,3}, so rank 0 holds chunks 0-2 of fc1 with three different
// owner sets. Its gradient is averaged tile by tile, each over its owners:
// row tiles in place, one ranged all-reduce each.
// TILES-LABEL: func.func @train_step_rank0(
// TILES-SAME: tensor<6x5xf32> {dist.sdp_slices = [{axis = 0 : i64, ranges = array<i64: 0, 6>}], dist.sdp_tiles = {axes = [0], cuts = [array<i64: 0, 2, 4, 6>], owners = [array<i64: 0, 1, 2>, array<i64: 0, 1, 3>, array<i64: 0, 2, 3>]}, otc.param = "fc1.weight"}
// fc2.weight: rows of fc2's chunks by columns of fc1's (fc2's 6 features
// in chunks of 1, 2, 1, 2); a tile's owners are those of both its chunks.
// TILES-SAME: {{.*}}dist.sdp_tiles = {axes = [0, 1], cuts = [array<i64: 0, 1, 3, 4>, array<i64: 0, 2, 4, 6>], owners = [array<i64: 0, 1, 2>, array<i64: 0, 1>, array<i64: 0, 2>, array<i64: 0, 1>, array<i64: 0, 1, 3>, array<i64: 0, 3>, array<i64: 0, 2>, array<i64: 0, 3>, array<i64: 0, 2, 3>]}, otc.param = "fc2.weight"
// TILES: %[[A0:.*]] = dist.all_reduce mean %{{.*}} {range = array<i64: 0, 10>, ranks = array<i64: 0, 1, 2>} : tensor<6x5xf32>
// TILES-NEXT: %[[A1:.*]] = dist.all_reduce mean %[[A0]] {range = array<i64: 10, 20>, ranks = array<i64: 0, 1, 3>} : tensor<6x5xf32>
// TILES-NEXT: %[[A2:.*]] = dist.all_reduce mean %[[A1]] {range = array<i64: 20, 30>, ranks = array<i64: 0, 2, 3>} : tensor<6x5xf32>
// TILES-NEXT: graph.sgd_update %arg1, %[[A2]]
// fc2.weight's tiles (a 2-D grid) are slices; those of one owner set (two
// of {0, 1}) travel flattened in one all-reduce.
// TILES: %[[F:.*]] = graph.concat %{{.*}}, %{{.*}} {axis = 0 : i64} : (tensor<{{[0-9]+}}xf32>, tensor<{{[0-9]+}}xf32>) -> tensor<[[N:[0-9]+]]xf32>
// TILES-NEXT: dist.all_reduce mean %[[F]] {ranks = array<i64: 0, 1>} : tensor<[[N]]xf32>
// Compressed: each tile goes into the bucket of its owner set; the
// three-owner sets first (their first tiles are fc1.weight's), then the
// two-owner tiles of fc2.weight; single-owner tiles stay out.
// TILES-COMPRESS-LABEL: func.func @train_step_rank0(
// TILES-COMPRESS: dist.bucket {{.*}} {ranks = array<i64: 0, 1, 2>} : tensor<2x5xf32>, tensor<2xf32>, tensor<1x2xf32>, tensor<1xf32>, tensor<1x3xf32> -> tensor<18xf32>
// TILES-COMPRESS: dist.bucket {{.*}} {ranks = array<i64: 0, 1, 3>}
// TILES-COMPRESS: dist.bucket {{.*}} {ranks = array<i64: 0, 2, 3>}
// TILES-COMPRESS: dist.bucket {{.*}} {ranks = array<i64: 0, 1>} : tensor<1x2xf32>, tensor<2x2xf32> -> tensor<6xf32>
// TILES-COMPRESS: dist.bucket {{.*}} {ranks = array<i64: 0, 2>}
// TILES-COMPRESS: dist.bucket {{.*}} {ranks = array<i64: 0, 3>}
// TILES-COMPRESS-NOT: dist.bucket
// TILES-COMPRESS: %[[W1:.*]] = graph.concat
// TILES-COMPRESS: graph.sgd_update %arg1, %[[W1]] : tensor<6x5xf32>

// Backward masking: every rank holds fc2.weight whole (6x8) and trains the
// rows of its fc2 chunks by the columns of its fc1 chunks (2x4 for rank 0:
// rows 0 and 3, columns 0-1 and 4-5); its Adam state is that size. The
// grid lists every tile of the whole weight with its owners (none where
// the row and column chunks have no common owner). After the update each
// tile comes from its first owner: rank 0 sends its 4 tiles (8 elements),
// rank 2 its 4 (16).
// BWD-LABEL: func.func @train_step_rank0(
// BWD-SAME: %arg3: tensor<6x8xf32> {dist.sdp_trains = {grid = {axes = [0, 1], cuts = [array<i64: 0, 1, 3, 4, 6>, array<i64: 0, 2, 4, 6, 8>], owners = [array<i64: 0, 1>, array<i64>, array<i64: 0, 1>, array<i64>, {{.*}}]}, owners = array<i64: 0, 1>, slices = [{axis = 1 : i64, ranges = array<i64: 0, 2, 4, 6>}, {axis = 0 : i64, ranges = array<i64: 0, 1, 3, 4>}]}, otc.param = "fc2.weight"}
// BWD-SAME: %arg11: tensor<2x4xf32> {otc.state = "fc2.weight.exp_avg"}
// BWD-SAME: -> (tensor<8x5xf32> {otc.updates = 1 : i64}
// BWD: %[[G:.*]] = dist.all_reduce mean %{{.*}} {ranks = array<i64: 0, 1>} : tensor<2x4xf32>
// BWD: graph.adam_update %{{.*}}, %[[G]], %arg11, %arg12 {{{.*}}dist.sdp_part_of = 3 : i64{{.*}}} : tensor<2x4xf32>
// BWD: dist.broadcast %{{.*}} {root = 0 : i64} : tensor<8xf32>
// BWD: dist.broadcast %{{.*}} {root = 2 : i64} : tensor<16xf32>
// BWD-LABEL: func.func @train_step_rank2(
// BWD-SAME: %arg11: tensor<4x4xf32> {otc.state = "fc2.weight.exp_avg"}
// BWD-NOT: func.func @train_step_rank1

// The default cycle starts chunk c at rank c: chunk c is owned by {c, c+1}
// (mod 4), so rank 0 holds chunks 0 and 3 of every group, with owners
// {0, 1} and {0, 3}: its parameters are held in tiles, each averaged with
// its owners; row tiles in place (a ranged all-reduce each), the 2-D grid
// of fc2.weight through slices. Every rank has a mask of its own.
// CYCLIC: components = [{name = "fc1[0]", owners = array<i64: 0, 1>}, {name = "fc1[1]", owners = array<i64: 1, 2>}, {name = "fc1[2]", owners = array<i64: 2, 3>}, {name = "fc1[3]", owners = array<i64: 0, 3>}
// CYCLIC-LABEL: func.func @train_step_rank0(
// CYCLIC-SAME: dist.sdp_slices = [{axis = 0 : i64, ranges = array<i64: 0, 2, 6, 8>}], dist.sdp_tiles = {axes = [0], cuts = [array<i64: 0, 2, 4>], owners = [array<i64: 0, 1>, array<i64: 0, 3>]}, otc.param = "fc1.weight"
// CYCLIC: %[[A:.*]] = dist.all_reduce mean %{{.*}} {range = array<i64: 0, 10>, ranks = array<i64: 0, 1>} : tensor<4x5xf32>
// CYCLIC-NEXT: dist.all_reduce mean %[[A]] {range = array<i64: 10, 20>, ranks = array<i64: 0, 3>} : tensor<4x5xf32>
// CYCLIC: dist.all_reduce mean %{{.*}} {ranks = array<i64: 0, 1>} : tensor<1x2xf32>
// CYCLIC: dist.all_reduce mean %{{.*}} {ranks = array<i64: 0, 3>} : tensor<2x2xf32>
// CYCLIC-LABEL: func.func @train_step_rank1(
// CYCLIC-SAME: dist.sdp_tiles = {axes = [0], cuts = [array<i64: 0, 2, 4>], owners = [array<i64: 0, 1>, array<i64: 1, 2>]}
// CYCLIC-LABEL: func.func @train_step_rank2(
// CYCLIC-LABEL: func.func @train_step_rank3(
