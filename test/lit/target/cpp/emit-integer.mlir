// RUN: otc-opt %s --otc-lower-to-exec --otc-plan-memory --otc-place-waits | otc-translate --emit-cpp | FileCheck %s --check-prefix=CPU
// RUN: otc-opt %s --otc-lower-to-exec --otc-plan-memory --otc-place-waits | otc-translate --emit-cuda-cpp | FileCheck %s --check-prefix=CUDA

// Integer elementwise ops of every width call one kernel entry with the
// element type's otck_dtype code (UINT8 = 2, INT8 = 3, UINT64 = 13); the
// comparisons too (FLOAT = 1). Buffers get their C types, the manifest the
// dtype names, constants their values in the type's range.

// CPU: static const int8_t kConst{{[0-9]+}}[] = {-128};
// CPU: static const uint64_t kConst{{[0-9]+}}[] = {18446744073709551615ull};
// CPU: \"inputs\":[{\"dtype\":\"u8\",\"name\":\"a\"{{.*}}{\"dtype\":\"i8\",\"name\":\"c\"{{.*}}{\"dtype\":\"u64\",\"name\":\"d\"
// CPU-LABEL: static int otc_eval_step(uint8_t *arena, const otc_step_context_t *ctx) {
// CPU-DAG: uint8_t *[[A:v[0-9]+]] = reinterpret_cast<uint8_t *>(arena + {{[0-9]+}});
// CPU-DAG: int8_t *{{v[0-9]+}} = reinterpret_cast<int8_t *>(arena + {{[0-9]+}});
// CPU-DAG: uint64_t *{{v[0-9]+}} = reinterpret_cast<uint64_t *>(arena + {{[0-9]+}});
// CPU: if (otck_binary_int(OTCK_ADD, 2, 1, shape, [[A]], as, {{v[0-9]+}}, bs, {{v[0-9]+}}) != OTCK_OK)
// CPU-NEXT: return OTC_STEP_ERR_DIVISION_BY_ZERO;
// CPU: otck_binary_int(OTCK_SHIFT_LEFT, 2, 1,
// CPU: otck_binary_int(OTCK_MAX, 3, 1,
// CPU: otck_binary_int(OTCK_SHIFT_RIGHT, 13, 1,
// CPU: otck_compare(OTCK_CMP_LESS, 2, 1,
// CPU: otck_compare(OTCK_CMP_EQUAL, 1, 1,

// CUDA-LABEL: static int otc_eval_step(uint8_t *arena, const otc_step_context_t *ctx) {
// CUDA: otckd_binary_int(OTCK_ADD, 2, 1,
// CUDA-NOT: otck_binary_int
// CUDA: otckd_binary_int(OTCK_SHIFT_LEFT, 2, 1,
// CUDA: otckd_binary_int(OTCK_MAX, 3, 1,
// CUDA: otckd_binary_int(OTCK_SHIFT_RIGHT, 13, 1,
// CUDA: otckd_compare(OTCK_CMP_LESS, 2, 1,
// CUDA: otckd_compare(OTCK_CMP_EQUAL, 1, 1,
module {
  func.func @eval_step(%a: tensor<4xui8> {otc.input = "a", otc.role = "data"},
                       %b: tensor<4xui8> {otc.input = "b", otc.role = "data"},
                       %c: tensor<4xi8> {otc.input = "c", otc.role = "data"},
                       %d: tensor<4xui64> {otc.input = "d", otc.role = "data"},
                       %f: tensor<4xf32> {otc.input = "f", otc.role = "data"})
      -> (tensor<4xui8> {otc.output = "sum"}, tensor<4xui8> {otc.output = "shl"},
          tensor<4xi8> {otc.output = "max"}, tensor<4xui64> {otc.output = "shr"},
          tensor<4xi1> {otc.output = "lt"}, tensor<4xi1> {otc.output = "eq"}) {
    %sum = graph.add %a, %b : (tensor<4xui8>, tensor<4xui8>) -> tensor<4xui8>
    %shl = graph.shift_left %sum, %b : (tensor<4xui8>, tensor<4xui8>) -> tensor<4xui8>
    %lo = graph.constant dense<-128> : tensor<i8>
    %max = graph.max %c, %lo : (tensor<4xi8>, tensor<i8>) -> tensor<4xi8>
    %hi = graph.constant dense<18446744073709551615> : tensor<ui64>
    %shr = graph.shift_right %d, %hi : (tensor<4xui64>, tensor<ui64>) -> tensor<4xui64>
    %lt = graph.compare "lt" %a, %b : (tensor<4xui8>, tensor<4xui8>) -> tensor<4xi1>
    %eq = graph.compare "eq" %f, %f : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>
    return %sum, %shl, %max, %shr, %lt, %eq
        : tensor<4xui8>, tensor<4xui8>, tensor<4xi8>, tensor<4xui64>, tensor<4xi1>, tensor<4xi1>
  }
}
