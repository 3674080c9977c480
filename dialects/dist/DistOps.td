//===- DistOps.td - dist dialect ---------------------------*- tablegen -*-===//
//
// The `dist` dialect: collectives over the ranks of a data-parallel job, on
// tensors. The world size is the module attribute `dist.world_size`.
//
//===----------------------------------------------------------------------===//

#ifndef OTC_DIST_OPS
#define OTC_DIST_OPS

include "mlir/IR/OpBase.td"
include "mlir/IR/EnumAttr.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

def Dist_Dialect : Dialect {
  let name = "dist";
  let cppNamespace = "::otc::dist";
  let summary = "Collectives, ranks and gradient buckets";
  let description = [{
    Tensor-level collectives. `dist.world_size` on the module is the number
    of ranks the program is compiled for; the runtime refuses any other.
  }];
}

class Dist_Op<string mnemonic, list<Trait> traits = []>
    : Op<Dist_Dialect, mnemonic, traits>;

def Dist_ReduceKind : I32EnumAttr<"ReduceKind", "reduction of a collective", [
  I32EnumAttrCase<"sum", 0>,
  I32EnumAttrCase<"mean", 1>,
]> {
  let cppNamespace = "::otc::dist";
}

def Dist_AllReduceOp : Dist_Op<"all_reduce",
    [AllTypesMatch<["input", "result"]>,
     MemoryEffects<[MemRead, MemWrite]>]> {
  let summary = "Reduce a tensor over all ranks";
  let description = [{
    Every rank contributes `input` and receives the elementwise reduction
    (`mean` divides the sum by the world size). The op communicates, so it
    is not `Pure`: it is never folded, duplicated or removed.

    ```mlir
    %avg = dist.all_reduce mean %grad : tensor<256x784xf32>
    ```
  }];
  let arguments = (ins RankedTensorOf<[F32]>:$input, Dist_ReduceKind:$kind);
  let results = (outs RankedTensorOf<[F32]>:$result);
  let assemblyFormat = "$kind $input attr-dict `:` type($input)";
}

def Dist_CompressedAllReduceOp : Dist_Op<"compressed_all_reduce",
    [AllTypesMatch<["input", "result"]>,
     MemoryEffects<[MemRead, MemWrite]>]> {
  let summary = "Average a gradient bucket over all ranks, compressed";
  let description = [{
    Every rank compresses its bucket block by block (`block_size` elements),
    all-gathers the fixed-size payloads and sums their decompressions,
    divided by the world size. Methods: `none` (fp32), `fp16`, `bf16`,
    `int8` (dense, one absmax scale per block), `topk` (per block the
    ceil(ratio * block_size) largest |g|, fp32 values), `topk-int8` (the
    same with int8 values and one fp32 scale per block) and `randomk`
    (seeded random indices, a baseline). With `error_feedback` each rank
    keeps the compression error and adds it to its next gradient;
    `adaptive` moves the ratio with the all-reduced gradient norm;
    `warmup_steps` first steps are sent dense.

    ```mlir
    %avg = dist.compressed_all_reduce %bucket {method = "topk-int8",
        ratio = 1.000000e-01 : f32, block_size = 256 : i64,
        error_feedback = true} : tensor<1024xf32>
    ```
  }];
  let arguments = (ins RankedTensorOf<[F32]>:$input, StrAttr:$method,
                       DefaultValuedAttr<F32Attr, "0.1">:$ratio,
                       DefaultValuedAttr<I64Attr, "256">:$block_size,
                       DefaultValuedAttr<BoolAttr, "true">:$error_feedback,
                       DefaultValuedAttr<BoolAttr, "false">:$adaptive,
                       DefaultValuedAttr<I64Attr, "0">:$warmup_steps);
  let results = (outs RankedTensorOf<[F32]>:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
  let hasVerifier = 1;
}

#endif // OTC_DIST_OPS
