//===- ExecOps.td - exec dialect ---------------------------*- tablegen -*-===//
//
// The `exec` dialect: a step as the hardware sees it. Buffers only (memref),
// kernels that read `ins` and write `outs` in place, collectives, and — after
// memory planning — one arena per rank addressed through typed views.
//
//===----------------------------------------------------------------------===//

#ifndef OTC_EXEC_OPS
#define OTC_EXEC_OPS

include "mlir/IR/EnumAttr.td"
include "mlir/IR/OpBase.td"
include "mlir/IR/BuiltinAttributeInterfaces.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

def Exec_Dialect : Dialect {
  let name = "exec";
  let cppNamespace = "::otc::exec";
  let summary = "Buffers, kernel calls and collectives of one rank's step";
  let description = [{
    Emission walks this dialect. Before `otc-plan-memory` buffers come from
    `exec.alloc`; after it every buffer is an `exec.view` into the function's
    arena argument at a static offset.
  }];
}

class Exec_Op<string mnemonic, list<Trait> traits = []>
    : Op<Exec_Dialect, mnemonic, traits>;

def Exec_AllocOp : Exec_Op<"alloc", [MemoryEffects<[MemAlloc]>]> {
  let summary = "A buffer to be placed by the memory planner";
  let description = [{
    ```mlir
    %buf = exec.alloc : memref<64x256xf32>
    ```
  }];
  let results = (outs AnyStaticShapeMemRef:$result);
  let assemblyFormat = "attr-dict `:` type($result)";
}

def Exec_ViewOp : Exec_Op<"view", [Pure]> {
  let summary = "A typed view of the arena at a static byte offset";
  let description = [{
    ```mlir
    %w = exec.view %arena[1024] : memref<?xi8> -> memref<256x784xf32>
    ```
  }];
  let arguments = (ins MemRefRankOf<[I8], [1]>:$arena, I64Attr:$offset);
  let results = (outs AnyStaticShapeMemRef:$result);
  let assemblyFormat = [{
    $arena `[` $offset `]` attr-dict `:` type($arena) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Exec_ConstantOp : Exec_Op<"constant", [Pure]> {
  let summary = "Read-only constant data";
  let description = [{
    Emitted as a static array; kernels only read it.

    ```mlir
    %c = exec.constant dense<1.0> : memref<f32>
    ```
  }];
  let arguments = (ins ElementsAttr:$value);
  let results = (outs AnyStaticShapeMemRef:$result);
  let assemblyFormat = "$value attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Exec_KernelOp : Exec_Op<"kernel",
    [AttrSizedOperandSegments,
     DeclareOpInterfaceMethods<MemoryEffectsOpInterface>]> {
  let summary = "Call a kernel of the OTC kernel library";
  let description = [{
    Reads `ins`, writes `outs` (destination style: optimizer updates also
    read their `outs`). The kernel name selects the library entry; its
    attributes are the kernel's static parameters. The verifier checks the
    name and the operand counts against the kernel table.

    ```mlir
    exec.kernel "gemm" ins(%x, %w : memref<64x784xf32>, memref<256x784xf32>)
        outs(%y : memref<64x256xf32>) {transB = true}
    ```
  }];
  let arguments = (ins StrAttr:$kernel, Variadic<AnyStaticShapeMemRef>:$ins,
                       Variadic<AnyStaticShapeMemRef>:$outs);
  let assemblyFormat = [{
    $kernel (`ins` `(` $ins^ `:` type($ins) `)`)?
    `outs` `(` $outs `:` type($outs) `)` attr-dict
  }];
  let hasVerifier = 1;
}

def Exec_ReduceKind : I32EnumAttr<"ReduceKind", "reduction of a collective", [
  I32EnumAttrCase<"sum", 0>,
  I32EnumAttrCase<"mean", 1>,
]> {
  let cppNamespace = "::otc::exec";
}

def Exec_AllReduceOp : Exec_Op<"all_reduce",
    [MemoryEffects<[MemRead, MemWrite]>]> {
  let summary = "Average a buffer over all ranks, in place";
  let description = [{
    With `group`, over the ranks of that SDP owner group only (an index
    into the module's `dist.sdp` groups; the runtime holds one
    sub-communicator per group). With `range` = [begin, end), only those
    elements of the buffer.

    ```mlir
    exec.all_reduce mean %grad : memref<256x784xf32>
    exec.all_reduce mean %grad {group = 1 : i64} : memref<256x784xf32>
    ```
  }];
  let arguments = (ins MemRefOf<[F32]>:$buffer, Exec_ReduceKind:$kind,
                       OptionalAttr<I64Attr>:$group,
                       OptionalAttr<DenseI64ArrayAttr>:$range);
  let assemblyFormat = "$kind $buffer attr-dict `:` type($buffer)";
  let hasVerifier = 1;
}

def Exec_BroadcastOp : Exec_Op<"broadcast",
    [MemoryEffects<[MemRead, MemWrite]>]> {
  let summary = "Overwrite a buffer with the root rank's, in place";
  let description = [{
    ```mlir
    exec.broadcast %w {root = 1 : i64} : memref<64x64xf32>
    ```
  }];
  let arguments = (ins MemRefOf<[F32]>:$buffer, I64Attr:$root);
  let assemblyFormat = "$buffer attr-dict `:` type($buffer)";
}

def Exec_CompressedAllReduceOp : Exec_Op<"compressed_all_reduce",
    [MemoryEffects<[MemRead, MemWrite]>, AttrSizedOperandSegments]> {
  let summary = "Average a gradient bucket over all ranks, compressed, in place";
  let description = [{
    The buffer form of `dist.compressed_all_reduce`: `buffer` is replaced by
    the average; `residual`, when present, is this rank's error-feedback
    state, read and updated in place; `velocity`, when present, this rank's
    momentum (factor masking), read and updated in place with the step's
    hyperparameter that `velocity_decay` names; `state`, when present, the
    method's (PowerSGD's Q matrices), read and updated in place. Attributes
    as on the dist op.

    ```mlir
    exec.compressed_all_reduce %bucket, %residual velocity %u
        {method = "topk-int8", ratio = 1.000000e-01 : f32, bucket = 0 : i64}
        : memref<1024xf32>, memref<1024xf32> velocity memref<1024xf32>
    ```
  }];
  let arguments = (ins MemRefRankOf<[F32], [1]>:$buffer,
                       Optional<MemRefRankOf<[F32], [1]>>:$residual,
                       Optional<MemRefRankOf<[F32], [1]>>:$velocity,
                       Optional<MemRefRankOf<[F32], [1]>>:$state,
                       StrAttr:$method, F32Attr:$ratio, F32Attr:$ratio_min,
                       I64Attr:$block_size, BoolAttr:$adaptive,
                       I64Attr:$warmup_steps, I64Attr:$bucket,
                       OptionalAttr<I64Attr>:$group,
                       DefaultValuedAttr<StrAttr, "\"momentum\"">:$velocity_decay,
                       DefaultValuedAttr<StrAttr, "\"all-gather\"">:$exchange,
                       DefaultValuedAttr<BoolAttr, "false">:$nesterov,
                       DefaultValuedAttr<I64Attr, "0">:$powersgd_rank,
                       OptionalAttr<DenseI64ArrayAttr>:$matrices);
  let assemblyFormat = [{
    $buffer (`,` $residual^)? (`velocity` $velocity^)? (`state` $state^)?
    attr-dict `:`
    type($buffer) (`,` type($residual)^)? (`velocity` type($velocity)^)?
    (`state` type($state)^)?
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Synchronization: placed by otc-place-waits, printed as they stand
//===----------------------------------------------------------------------===//

def Exec_WaitCollectivesOp : Exec_Op<"wait_collectives",
    [MemoryEffects<[MemRead, MemWrite]>]> {
  let summary = "Wait for the collectives started since the last wait";
  let description = [{
    `exec.all_reduce` and `exec.compressed_all_reduce` start an exchange
    that may still run when the op is done: their buffers (and residuals)
    must not be read or written until an `exec.wait_collectives` has
    completed them. A collective that finds a non-finite gradient makes
    the step return skipped here.

    ```mlir
    exec.all_reduce mean %g : memref<64xf32>
    exec.kernel "relu" ins(%a) outs(%b) ...  // does not touch %g
    exec.wait_collectives
    exec.kernel "sgd_update" ins(%g) outs(%w) ...
    ```
  }];
  let assemblyFormat = "attr-dict";
}

def Exec_AgreeFiniteOp : Exec_Op<"agree_finite",
    [MemoryEffects<[MemRead, MemWrite]>]> {
  let summary = "Every rank learns whether any rank saw a non-finite gradient";
  let description = [{
    SDP: a collective of an owner group only tells its own ranks about a
    non-finite gradient; before the first update every rank agrees, and
    all skip the step together or none does.
  }];
  let assemblyFormat = "attr-dict";
}

def Exec_CheckErrorsOp : Exec_Op<"check_errors",
    [MemoryEffects<[MemRead, MemWrite]>]> {
  let summary = "Stop the step if a kernel recorded an error";
  let description = [{
    Placed before the first update, so that an error (a label out of
    range) stops the step before any parameter changes. CUDA kernels
    record their errors on the device: this waits for the stream and
    reads them. CPU kernels stop the step as they fail, so on the CPU
    there is nothing left to check.
  }];
  let assemblyFormat = "attr-dict";
}

#endif // OTC_EXEC_OPS
