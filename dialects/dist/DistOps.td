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
    SDP's argument attributes (`dist.sdp_owners`, `dist.sdp_slices`,
    `dist.sdp_tiles`, `dist.sdp_trains`, `dist.sdp_frozen`) are verified by
    the dialect.
  }];
  let hasRegionArgAttrVerify = 1;
  let hasOperationAttrVerify = 1;
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

    With `ranks` (sorted, distinct, a proper subset of the world) only those
    ranks take part (an SDP owner group: one sub-communicator per distinct
    set) and `mean` divides by their number.

    With `range` = [begin, end), only those elements of the row-major input
    are reduced and the others pass through: the tiles of an SDP parameter
    whose parts have different owners, each in place with its owners.

    ```mlir
    %avg = dist.all_reduce mean %grad : tensor<256x784xf32>
    %own = dist.all_reduce mean %grad {ranks = array<i64: 0, 2>} : tensor<256x784xf32>
    %top = dist.all_reduce mean %grad {range = array<i64: 0, 50176>, ranks = array<i64: 0, 1>} : tensor<256x784xf32>
    ```
  }];
  let arguments = (ins StaticShapeTensorOf<[F32]>:$input, Dist_ReduceKind:$kind,
                       OptionalAttr<DenseI64ArrayAttr>:$ranks,
                       OptionalAttr<DenseI64ArrayAttr>:$range);
  let results = (outs StaticShapeTensorOf<[F32]>:$result);
  let assemblyFormat = "$kind $input attr-dict `:` type($input)";
  let hasVerifier = 1;
}

def Dist_BroadcastOp : Dist_Op<"broadcast",
    [AllTypesMatch<["input", "result"]>,
     MemoryEffects<[MemRead, MemWrite]>]> {
  let summary = "Every rank receives the root rank's tensor";
  let description = [{
    SDP backward masking: a component's parameters are updated by its
    owners only, and the first owner (`root`) sends the new values to every
    rank. Ranks other than `root` ignore their own `input`.

    ```mlir
    %w2 = dist.broadcast %w {root = 1 : i64} : tensor<64x64xf32>
    ```
  }];
  let arguments = (ins StaticShapeTensorOf<[F32]>:$input, I64Attr:$root);
  let results = (outs StaticShapeTensorOf<[F32]>:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
  let hasVerifier = 1;
}

def Dist_BucketOp : Dist_Op<"bucket", [Pure]> {
  let summary = "Concatenate flattened gradients into one bucket";
  let description = [{
    The gradients of one bucket, flattened and laid end to end in operand
    order. After memory planning the operands are produced in place inside
    the bucket's buffer, so the concatenation costs no copy.

    ```mlir
    %b = dist.bucket %dw, %db : tensor<256x784xf32>, tensor<256xf32> -> tensor<200960xf32>
    ```
  }];
  let arguments = (ins Variadic<StaticShapeTensorOf<[F32]>>:$grads);
  let results = (outs StaticShapeTensorOf<[F32]>:$result);
  let assemblyFormat = "$grads attr-dict `:` type($grads) `->` type($result)";
  let hasVerifier = 1;
}

def Dist_UnbucketOp : Dist_Op<"unbucket", [Pure]> {
  let summary = "Split a bucket back into its gradients";
  let description = [{
    The inverse of `dist.bucket`: views of consecutive slices, reshaped.

    ```mlir
    %dw, %db = dist.unbucket %b : tensor<200960xf32> -> tensor<256x784xf32>, tensor<256xf32>
    ```
  }];
  let arguments = (ins StaticShapeTensorOf<[F32]>:$bucket);
  let results = (outs Variadic<StaticShapeTensorOf<[F32]>>:$grads);
  let assemblyFormat = "$bucket attr-dict `:` type($bucket) `->` type($grads)";
  let hasVerifier = 1;
}

def Dist_CompressedAllReduceOp : Dist_Op<"compressed_all_reduce",
    [MemoryEffects<[MemRead, MemWrite]>, AttrSizedOperandSegments,
     AttrSizedResultSegments]> {
  let summary = "Average a gradient bucket over all ranks, compressed";
  let description = [{
    Every rank compresses its bucket block by block (`block_size` elements),
    all-gathers the fixed-size payloads and sums their decompressions,
    divided by the world size. Methods: `none` (fp32), `fp16`, `bf16`,
    `int8` (dense, one absmax scale per block), `topk` (per block the
    ceil(ratio * block_size) largest |g|, fp32 values), `topk-int8` (the
    same with int8 values and one fp32 scale per block) and `randomk`
    (seeded random indices, a baseline). With `error_feedback` the op takes
    this rank's residual (the error of its earlier compressions, added to
    the gradient before compressing) and returns the new one; `adaptive`
    moves the ratio with the all-reduced gradient norm within
    [`ratio_min`, `ratio`]; the first `warmup_steps` steps are sent dense.
    `bucket` numbers the step's buckets (runtime state is per bucket).
    With `ranks`, over that SDP owner group only (as `dist.all_reduce`).

    `exchange` is how the ranks combine their payloads: `all-gather` (every
    rank receives every payload: P * (W - 1) bytes sent per rank),
    `reduce-scatter` (rank s owns shard s of the bucket's blocks: an
    all-to-all brings it every rank's payload of that shard, it sums them,
    compresses the sum again, adding that error to its residual, and the
    owners' payloads are all-gathered: about 2 P (W - 1) / W bytes, whatever
    W), or `all-reduce` (method `none` only: a plain fp32 all-reduce).

    With a `velocity` (Deep Gradient Compression's momentum correction with
    momentum-factor masking) the op keeps this rank's momentum of the
    bucket: `u = decay * u + input`, where `decay` (in [0, 1)) is the
    step's run-time hyperparameter that `velocity_decay` names (`momentum`
    for momentum SGD, `beta1` for Adam and AdamW, whose first moment the
    velocity then is), is compressed with its tail, `u + decay / (1 -
    decay) * u` (what momentum would still add of `u`), and the residual;
    `new_velocity` is `u` with every element this rank sent set to zero
    (each block's kept indices), and where nothing was sent the tail goes
    back out of the residual. A dense warm-up step sends `u` whole and keeps
    it (momentum SGD). The result is still the mean of the ranks'
    decompressed payloads. With `nesterov` (momentum SGD's Nesterov
    variant) the base is `input` instead of `u` (without the tail, the
    look-ahead `decay * u + input`); `u` is masked as without. The exact
    semantics are the runtime's (src/comm/compressed.cpp).

    Method `powersgd` (PowerSGD, all-reduce based: `exchange = "all-reduce"`)
    approximates each of the bucket's `matrices` (triples offset, rows,
    cols, in elements: each gradient of rank 2 or more viewed as rows =
    its first dimension) with rank r = min(`powersgd_rank`, rows, cols):
    with M = input + residual, P = M Q is summed over the ranks and
    orthonormalised, Q = M^T P is summed, the result is P Q^T / W and the
    new residual M - P Q^T / W. `state` holds every matrix's Q (the sum of
    cols * r), warm-started across steps (a zero Q starts from a seeded
    normal). The rest of the bucket is averaged uncompressed.

    ```mlir
    %avg, %res2 = dist.compressed_all_reduce %b, %res {method = "topk-int8",
        ratio = 1.000000e-01 : f32, bucket = 0 : i64}
        : tensor<1024xf32>, tensor<1024xf32> -> tensor<1024xf32>, tensor<1024xf32>
    %avg2, %res3, %u2 = dist.compressed_all_reduce %b, %res velocity %u
        {method = "topk-int8"} : tensor<1024xf32>, tensor<1024xf32>
        velocity tensor<1024xf32>
        -> tensor<1024xf32>, tensor<1024xf32> velocity tensor<1024xf32>
    ```
  }];
  let arguments = (ins StaticShapeTensorOf<[F32]>:$input,
                       Optional<StaticShapeTensorOf<[F32]>>:$residual,
                       Optional<StaticShapeTensorOf<[F32]>>:$velocity,
                       Optional<StaticShapeTensorOf<[F32]>>:$state,
                       StrAttr:$method,
                       DefaultValuedAttr<F32Attr, "0.1">:$ratio,
                       DefaultValuedAttr<F32Attr, "0.01">:$ratio_min,
                       DefaultValuedAttr<I64Attr, "256">:$block_size,
                       DefaultValuedAttr<BoolAttr, "false">:$adaptive,
                       DefaultValuedAttr<I64Attr, "0">:$warmup_steps,
                       DefaultValuedAttr<I64Attr, "0">:$bucket,
                       OptionalAttr<DenseI64ArrayAttr>:$ranks,
                       DefaultValuedAttr<StrAttr, "\"momentum\"">:$velocity_decay,
                       DefaultValuedAttr<StrAttr, "\"all-gather\"">:$exchange,
                       DefaultValuedAttr<BoolAttr, "false">:$nesterov,
                       DefaultValuedAttr<I64Attr, "0">:$powersgd_rank,
                       OptionalAttr<DenseI64ArrayAttr>:$matrices);
  let results = (outs StaticShapeTensorOf<[F32]>:$result,
                      Optional<StaticShapeTensorOf<[F32]>>:$new_residual,
                      Optional<StaticShapeTensorOf<[F32]>>:$new_velocity,
                      Optional<StaticShapeTensorOf<[F32]>>:$new_state);
  let assemblyFormat = [{
    $input (`,` $residual^)? (`velocity` $velocity^)? (`state` $state^)?
    attr-dict `:`
    type($input) (`,` type($residual)^)? (`velocity` type($velocity)^)?
    (`state` type($state)^)?
    `->` type($result) (`,` type($new_residual)^)?
    (`velocity` type($new_velocity)^)? (`state` type($new_state)^)?
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// Error feedback is on exactly when the op carries a residual.
    bool hasErrorFeedback() { return static_cast<bool>(getResidual()); }
    /// Momentum correction with factor masking: the op keeps the velocity.
    bool hasVelocity() { return static_cast<bool>(getVelocity()); }
  }];
}

#endif // OTC_DIST_OPS
