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

#endif // OTC_DIST_OPS
