// RUN: otc-opt %s --otc-mixed-precision=precision=bf16 | FileCheck %s
// RUN: otc-opt %s --otc-mixed-precision | FileCheck %s --check-prefix=FP32
// RUN: otc-opt %s --otc-mixed-precision=precision=bf16 --otc-lower-to-exec | FileCheck %s --check-prefix=EXEC
// RUN: otc-opt %s --otc-mixed-precision=precision=bf16 --otc-lower-to-exec --otc-plan-memory --otc-place-waits | otc-translate --emit-cpp | FileCheck %s --check-prefix=CPU
// RUN: otc-opt %s --otc-mixed-precision=precision=bf16 --otc-lower-to-exec=target=cuda --otc-plan-memory --otc-place-waits | otc-translate --emit-cuda-cpp | FileCheck %s --check-prefix=CUDA
// RUN: not otc-opt %s --otc-mixed-precision=precision=fp8 2>&1 | FileCheck %s --check-prefix=BAD

// Products and convolutions, forward and backward, compute in bf16; the
// elementwise ops do not.
// CHECK-LABEL: func.func @eval_step
// FP32-NOT: compute
// BAD: unknown precision 'fp8' (fp32 or bf16)
func.func @eval_step(%x: tensor<2x3x8x8xf32> {otc.input = "x", otc.role = "data"},
                     %w: tensor<4x3x3x3xf32> {otc.param = "w"},
                     %m2: tensor<64x10xf32> {otc.param = "m2"},
                     %a: tensor<2x5x7xf32> {otc.input = "a", otc.role = "data"},
                     %b: tensor<7x6xf32> {otc.param = "b"})
    -> (tensor<2x10xf32> {otc.output = "y"}, tensor<2x5x6xf32> {otc.output = "z"},
        tensor<4x3x3x3xf32> {otc.output = "dw"}) {
  // CHECK: graph.conv {{.*}}compute = "bf16"
  // EXEC: exec.kernel "conv" {{.*}}compute = "bf16"
  // CPU: static const otck_conv_desc d = {2, OTCK_COMPUTE_BF16,
  // CPU-NEXT: otck_conv_f32(&d,
  // CUDA: static const otck_conv_desc d = {2, OTCK_COMPUTE_BF16,
  // CUDA-NEXT: otckd_conv_f32(&d,
  %c = graph.conv %x, %w {dilations = array<i64: 1, 1>, group = 1 : i64, pads_begin = array<i64: 1, 1>, pads_end = array<i64: 1, 1>, strides = array<i64: 2, 2>} : (tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<2x4x4x4xf32>
  // CHECK: graph.conv_grad_weight {{.*}}compute = "bf16"
  %dw = graph.conv_grad_weight %c, %x {dilations = array<i64: 1, 1>, group = 1 : i64, pads_begin = array<i64: 1, 1>, pads_end = array<i64: 1, 1>, strides = array<i64: 2, 2>} : (tensor<2x4x4x4xf32>, tensor<2x3x8x8xf32>) -> tensor<4x3x3x3xf32>
  // CHECK: graph.relu %{{[0-9]+}} : tensor<2x4x4x4xf32>
  %r = graph.relu %c : tensor<2x4x4x4xf32>
  %f = graph.reshape %r : tensor<2x4x4x4xf32> -> tensor<2x64xf32>
  // CHECK: graph.matmul {{.*}}compute = "bf16"
  // A bf16 product's last output is its workspace: the two operands'
  // bfloat16 copies, each rounded up to 64 bytes (2*64*2 -> 256, 64*10*2
  // -> 1280).
  // EXEC: exec.kernel "gemm" ins({{.*}} : memref<2x64xf32>, memref<64x10xf32>) outs({{.*}}, {{.*}} : memref<2x10xf32>, memref<1536xi8>) {compute = "bf16",
  // CPU: otck_gemm_bf16(0, 0, 2, 10, 64, 1.000000000e+00f, {{v[0-9]+}}, {{v[0-9]+}}, 0.000000000e+00f, {{v[0-9]+}}, {{v[0-9]+}});
  // CUDA: otckd_gemm_bf16(0, 0, 2, 10, 64, 1.000000000e+00f, {{v[0-9]+}}, {{v[0-9]+}}, 0.000000000e+00f, {{v[0-9]+}}, {{v[0-9]+}});
  %y = graph.matmul %f, %m2 : (tensor<2x64xf32>, tensor<64x10xf32>) -> tensor<2x10xf32>
  // CHECK: graph.matmul {{.*}}compute = "bf16"
  // EXEC: exec.kernel "matmul" {{.*}}memref<2x5x6xf32>, memref<320xi8>) {compute = "bf16",
  // CPU: otck_batched_gemm_bf16(1, batch, as, bs, 0, 0, 5, 6, 7, {{v[0-9]+}}, {{v[0-9]+}}, {{v[0-9]+}}, {{v[0-9]+}});
  // CUDA: otckd_batched_gemm_bf16(1, batch, as, bs, 0, 0, 5, 6, 7,
  %z = graph.matmul %a, %b : (tensor<2x5x7xf32>, tensor<7x6xf32>) -> tensor<2x5x6xf32>
  return %y, %z, %dw : tensor<2x10xf32>, tensor<2x5x6xf32>, tensor<4x3x3x3xf32>
}
