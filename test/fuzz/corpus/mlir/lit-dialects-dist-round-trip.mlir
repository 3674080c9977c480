func.func @avg(%g: tensor<16x8xf32>) -> tensor<16x8xf32> {
  %0 = dist.all_reduce mean %g : tensor<16x8xf32>
  %1 = dist.all_reduce sum %0 : tensor<16x8xf32>
  %r = dist.all_reduce mean %1 {range = array<i64: 8, 64>} : tensor<16x8xf32>
  return %1 : tensor<16x8xf32>
}

func.func @compressed(%b: tensor<1000xf32>, %r: tensor<1000xf32>) -> tensor<1000xf32> {
  %0, %r2 = dist.compressed_all_reduce %b, %r {method = "topk-int8", ratio = 0.01 : f32, block_size = 128 : i64} : tensor<1000xf32>, tensor<1000xf32> -> tensor<1000xf32>, tensor<1000xf32>
  %1 = dist.compressed_all_reduce %0 {method = "topk", adaptive = true, warmup_steps = 10 : i64, bucket = 1 : i64} : tensor<1000xf32> -> tensor<1000xf32>
  %2 = dist.compressed_all_reduce %1 {method = "none"} : tensor<1000xf32> -> tensor<1000xf32>
  return %2 : tensor<1000xf32>
}

func.func @buckets(%a: tensor<2x3xf32>, %b: tensor<4xf32>) -> (tensor<2x3xf32>, tensor<4xf32>) {
  %0 = dist.bucket %a, %b : tensor<2x3xf32>, tensor<4xf32> -> tensor<10xf32>
  %1:2 = dist.unbucket %0 : tensor<10xf32> -> tensor<2x3xf32>, tensor<4xf32>
  return %1#0, %1#1 : tensor<2x3xf32>, tensor<4xf32>
}
