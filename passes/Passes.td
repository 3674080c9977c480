//===- Passes.td - OTC passes ------------------------------*- tablegen -*-===//

#ifndef OTC_PASSES
#define OTC_PASSES

include "mlir/Pass/PassBase.td"

//===----------------------------------------------------------------------===//
// Training graph
//===----------------------------------------------------------------------===//

def BuildTraining : Pass<"otc-build-training", "mlir::ModuleOp"> {
  let summary = "Build @train_step and @eval_step from @forward";
  let description = [{
    Attaches the loss to the first output of `@forward`, differentiates it
    in reverse mode through `GradientOpInterface`, and appends one optimizer
    update per parameter. `@train_step` returns the updated parameters and
    optimizer state (result attribute `otc.updates` names the argument each
    replaces) and the loss; `@eval_step` is the forward (dropout off) plus
    the loss when labels exist. `@forward` is removed.

    SDP: frozen parameters (`dist.sdp_frozen`) get no gradient and no
    state; a parameter trained in part (`dist.sdp_trains`) has its part
    taken from the weight and the gradient (the gradient's product computed
    for the part only), state of the part's size, the update marked
    `dist.sdp_part_of`, and the part put back into the whole. LAMB, whose
    trust ratio is one number per whole tensor, refuses such parts and
    sliced parameters; the elementwise optimizers take them as they are.

    Options left unset take the optimizer's defaults where torch or the
    paper differ from Adam's: lion beta2 0.99, adagrad eps 1e-10, lamb eps
    1e-6, rmsprop momentum 0. `ema` > 0 follows every trained parameter's
    update with a `graph.ema_update` of its `<param>.ema` state (not with
    SDP).
  }];
  let dependentDialects = ["::otc::graph::GraphDialect",
                           "::mlir::func::FuncDialect"];
  let options = [
    Option<"loss", "loss", "std::string", "\"cross-entropy\"",
           "Loss on the first output: cross-entropy, mse, l1, "
           "bce-with-logits, nll (log-probabilities) or none (the "
           "output is already a scalar loss)">,
    Option<"label", "label", "std::string", "\"labels\"",
           "Name of the new label/target input">,
    Option<"optimizer", "optimizer", "std::string", "\"sgd\"",
           "sgd, momentum, adam, adamw, lamb, lion, adagrad or rmsprop">,
    Option<"lr", "lr", "double", "0.01", "Learning rate">,
    Option<"momentum", "momentum", "double", "0.9",
           "Momentum factor (optimizer=momentum; rmsprop: default 0, a "
           "value > 0 gives it a momentum buffer)">,
    Option<"nesterov", "nesterov", "bool", "false",
           "Nesterov momentum (optimizer=momentum)">,
    Option<"weightDecay", "weight-decay", "double", "0.0",
           "Weight decay (L2 for sgd/momentum/adam/adagrad/rmsprop, added "
           "to the update for lamb, decoupled for adamw and lion)">,
    Option<"beta1", "beta1", "double", "0.9", "beta1 (adam, adamw, lamb, lion)">,
    Option<"beta2", "beta2", "double", "0.999",
           "beta2 (adam, adamw, lamb; lion: default 0.99)">,
    Option<"eps", "eps", "double", "1e-8",
           "Epsilon (adam, adamw, rmsprop; lamb: default 1e-6, adagrad: "
           "1e-10)">,
    Option<"alpha", "alpha", "double", "0.99",
           "RMSprop smoothing constant">,
    Option<"lrDecay", "lr-decay", "double", "0.0", "Adagrad lr decay">,
    Option<"centered", "centered", "bool", "false",
           "Centered RMSprop (normalise by the gradient's variance)">,
    Option<"ema", "ema", "double", "0.0",
           "Keep an exponential moving average of every trained parameter "
           "with this decay in (0, 1) (state <param>.ema; 0: none)">,
    Option<"seed", "seed", "uint64_t", "0",
           "Default seed of the program (module attribute otc.seed)">,
    Option<"accumulate", "accumulate", "int64_t", "1",
           "Micro-batches per optimizer step: @accumulate_step adds the "
           "gradients of the first N - 1 (no communication), @train_step "
           "those of the last, averages the sum and updates">,
    Option<"noWeightDecay", "no-weight-decay", "std::string", "\"\"",
           "Parameters without weight decay: comma-separated globs on "
           "initializer names, or bias (names ending in bias, biases of "
           "gemm/conv), norm (scales and biases of normalization layers), "
           "1d (every parameter of rank 0 or 1)">,
    Option<"lrScale", "lr-scale", "std::string", "\"\"",
           "Per-parameter learning-rate factors: comma-separated "
           "PATTERN=F (globs or the shorthands above; the first match "
           "wins)">,
    Option<"freeze", "freeze", "std::string", "\"\"",
           "Parameters not trained: no gradient work only they need, no "
           "gradient or optimizer state, not communicated, exported "
           "unchanged (comma-separated globs or shorthands)">,
  ];
}

def MixedPrecision : Pass<"otc-mixed-precision", "mlir::ModuleOp"> {
  let summary = "Mark the products and convolutions that compute in bf16";
  let description = [{
    With `precision=bf16`, every float32 matrix product (`graph.gemm`,
    `graph.matmul`) and convolution (`graph.conv`, `graph.conv_transpose`
    and both gradients), forward and backward, gets `compute = "bf16"`:
    its kernel rounds its two operands to bfloat16 and sums the products in
    float32 (autocast's lower-precision list on the CPU). Every tensor stays
    float32, and so do the parameters, the optimizer state, norms,
    softmax, reductions and losses.

    ```mlir
    %y = graph.matmul %x, %w {compute = "bf16"} : ...
    ```
  }];
  let options = [
    Option<"precision", "precision", "std::string", "\"fp32\"",
           "fp32, or bf16 for the products and convolutions">,
  ];
}

def FuseActivations : Pass<"otc-fuse-activations", "mlir::ModuleOp"> {
  let summary = "Replace GELU and Mish formulas with graph.gelu / graph.mish";
  let description = [{
    Models exported before opset 20 (GELU) or 18 (Mish) spell the
    activation out: `0.5 * x * (1 + erf(x / sqrt(2)))`, its tanh
    approximation `0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3)))`,
    `x * tanh(softplus(x))`. Each such product, in any order of factors and
    grouping of constants, becomes one op (one kernel, one saved
    activation, one gradient). Intermediate values with other users are
    left alone.

    ```mlir
    %d = graph.div %x, %sqrt2 : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
    %e = graph.erf %d : tensor<4x8xf32>
    %a = graph.add %e, %one : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
    %m = graph.mul %x, %a : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
    %y = graph.mul %m, %half : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
    // becomes
    %y = graph.gelu %x : tensor<4x8xf32>
    ```
  }];
  let dependentDialects = ["::otc::graph::GraphDialect"];
}

def BuildInference : Pass<"otc-build-inference", "mlir::ModuleOp"> {
  let summary = "Turn @forward into an inference-only @eval_step";
  let description = [{
    For programs that only run the model (`otc-compile --inference`, the
    conformance runner): `@forward` becomes `@eval_step`; every graph
    output keeps its ONNX name (`otc.output`) and becomes a persistent
    output buffer. No loss, gradients or optimizer. Dropout stays as the
    model states it (only an explicit training_mode = true imports as
    `graph.dropout`).
  }];
  let dependentDialects = ["::otc::graph::GraphDialect",
                           "::mlir::func::FuncDialect"];
  let options = [
    Option<"seed", "seed", "uint64_t", "0",
           "Default seed of the program (module attribute otc.seed)">,
  ];
}

//===----------------------------------------------------------------------===//
// Distribution
//===----------------------------------------------------------------------===//

def SdpFindComponents : Pass<"otc-sdp-find-components", "mlir::ModuleOp"> {
  let summary = "Report what Subnetwork Data Parallelism can drop in @forward";
  let description = [{
    An analysis: for `mode=block`, every residual branch `f` of an
    `x + f(x)` whose inside nothing else reads and whose parameters nothing
    else uses; for `mode=neuron`, every group of features a gemm, matmul or
    conv produces and another contracts, through per-feature ops only
    (bias, activations, BatchNorm, Dropout, scalar arithmetic, masks), and
    the attention heads of a fused q/k/v projection (through the q/k/v
    split, head reshapes, transposes and the two attention matmuls). Each found
    component gets `sdp.component = "<name>"` and a remark; each rejected
    candidate `sdp.rejected = "<reason>"` and a remark with the reason.
  }];
  let options = [
    Option<"mode", "mode", "std::string", "\"block\"",
           "block (residual branches) or neuron (neuron groups)">,
  ];
}

def Sdp : Pass<"otc-sdp", "mlir::ModuleOp"> {
  let summary = "Split @forward into per-rank subnetworks (SDP)";
  let description = [{
    Finds the components as `otc-sdp-find-components` does (a neuron group
    becomes `world-size` contiguous chunks of its features), gives each
    n = max(1, round(active * world-size)) consecutive owner ranks of the
    cycle of ranks, the c-th of a family of K starting at
    c * world-size / K, so that neighbouring owner sets overlap
    (`assignment=disjoint`: the cycle runs on by n per component, owner
    sets are equal or disjoint when n divides world-size; `random`: the
    cycle runs over a seeded
    permutation of the ranks), and clones @forward into one
    `@forward_rank<r>` per distinct mask, named after the first rank with
    that mask.

    Forward masking: a dropped branch becomes the identity and its
    parameters disappear; dropped features are sliced out of every
    parameter and activation (`dist.sdp_slices` on the argument records the
    kept index ranges per axis). With `rescale`, what is kept is scaled by
    world-size / owners, as inverted dropout, so the full model evaluates
    without rescaling; `auto` does so unless the model has BatchNorm, whose
    statistics the runtime re-estimates on the whole model anyway (and
    rescaled training measured worse there). Backward masking: the
    forward is whole; parameters of blocks the rank does not own are
    `dist.sdp_frozen` (no gradient, no optimizer state; the owners' update
    is broadcast); a parameter of neuron groups is trained in part
    (`dist.sdp_trains`: the part the rank's chunks make, its owners, and
    the grid of all tiles with theirs, from which each tile's first owner
    broadcasts it).
    Component parameters carry their owner ranks (`dist.sdp_owners`), over
    which their gradients are averaged. The module records the world size
    and `dist.sdp` (options, components with owners, the variant of each
    rank). With active = 1 every rank owns everything: plain data
    parallelism.
  }];
  let dependentDialects = ["::otc::graph::GraphDialect",
                           "::otc::dist::DistDialect"];
  let options = [
    Option<"mode", "mode", "std::string", "\"block\"",
           "block (residual branches) or neuron (neuron groups)">,
    Option<"masking", "masking", "std::string", "\"forward\"",
           "forward (drop from the forward) or backward (drop gradients)">,
    Option<"active", "active", "double", "0.5",
           "Fraction of the ranks that own each component">,
    Option<"worldSize", "world-size", "int64_t", "1",
           "Number of data-parallel ranks">,
    Option<"seed", "seed", "uint64_t", "0",
           "Seed of the random assignment">,
    Option<"assignment", "assignment", "std::string", "\"cyclic\"",
           "cyclic (balanced, neighbouring owner sets overlap), disjoint "
           "(owner sets equal or disjoint when the owner count divides the "
           "world size) or random (seeded, still "
           "balanced)">,
    Option<"rescale", "rescale", "std::string", "\"auto\"",
           "Scale kept components by world-size / owners (forward masking): "
           "on, off, or auto (on unless the model has BatchNorm)">,
  ];
}

def InsertAllReduce : Pass<"otc-insert-allreduce", "mlir::ModuleOp"> {
  let summary = "Average gradients over the ranks before the optimizer";
  let description = [{
    Records `dist.world_size` on the module and, when it is above 1, feeds
    every optimizer update's gradient through `dist.all_reduce mean`. SDP:
    over the parameter's (or trained part's) owners; a parameter held in
    tiles with different owners tile by tile (row tiles in place, one
    ranged all-reduce each); with backward masking, the updated values then
    go out from their first owners (`dist.broadcast`).
  }];
  let dependentDialects = ["::otc::dist::DistDialect"];
  let options = [
    Option<"worldSize", "world-size", "int64_t", "1",
           "Number of data-parallel ranks">,
  ];
}

def ClipGradients : Pass<"otc-clip-gradients", "mlir::ModuleOp"> {
  let summary = "Measure (and clip) the averaged gradients; skip a non-finite step";
  let description = [{
    Runs after gradient averaging (dense or compressed), so every rank clips
    the same averaged gradient identically. In @train_step, one
    `graph.clip_gradients` takes the gradient of every optimizer update
    right before the first update, and the updates read its clipped
    results (torch.nn.utils.clip_grad_norm_ with norm 2, or
    clip_grad_value_); without either option it only measures. The norm
    before clipping becomes the step's output "grad_norm", which the
    runtime reports in the metrics, and a step whose norm is not finite (a
    NaN or infinity in any rank's gradient reaches every rank's average)
    is skipped on every rank before its first update. SDP
    (@train_step_rank<r>): the norm is the whole model's, each rank's
    squares of what it trains divided by each part's (tile's) owner count
    and summed over the world by one scalar all-reduce.
  }];
  let options = [
    Option<"maxNorm", "max-norm", "double", "0.0",
           "Largest global 2-norm of the gradients (0: no norm clipping)">,
    Option<"maxValue", "max-value", "double", "0.0",
           "Largest absolute gradient element (0: no value clipping)">,
  ];
}

def ScheduleCollectives : Pass<"otc-schedule-collectives", "mlir::ModuleOp"> {
  let summary = "Start every collective as early as its operands allow";
  let description = [{
    In every function, moves each all-reduce (`dist.all_reduce`,
    `dist.compressed_all_reduce`) up to just after its operands are
    computed (and after the previous collective). In a backward pass a
    layer's weight gradient, or its bucket, is exchanged while the earlier
    layers' gradients are computed (the runtime returns from a started
    all-reduce at once; the program waits before the first kernel that
    touches its result). The compute keeps its order, so memory lifetimes
    do not grow; collectives keep their relative order, which every rank
    must share. `dist.broadcast`s stay in place (after the updates).
  }];
}

def BucketGradients : Pass<"otc-bucket-gradients", "mlir::ModuleOp"> {
  let summary = "Group gradients into buckets in the order backward makes them";
  let description = [{
    In @train_step, packs the gradients the optimizer reads into
    `dist.bucket`s of at most `bucket-mb` MiB (a larger gradient gets a
    bucket of its own), in the order the backward pass produces them. Each
    bucket is formed as soon as its last gradient exists; `dist.unbucket`s
    come right before the first optimizer update, so every collective on a
    bucket completes before any parameter changes (a step can still be
    skipped as a whole). The memory planner lays each bucket's gradients
    out contiguously, so packing copies nothing.
  }];
  let dependentDialects = ["::otc::dist::DistDialect"];
  let options = [
    Option<"bucketMb", "bucket-mb", "double", "25.0",
           "Largest bucket, in MiB (torch DDP's default is 25)">,
  ];
}

def MomentumCorrection : Pass<"otc-momentum-correction", "mlir::ModuleOp"> {
  let summary = "Compress each rank's momentum instead of its gradient (DGC)";
  let description = [{
    Rewrites every `graph.momentum_update` of @train_step, or of each SDP
    rank's @train_step_rank<r> (before bucketing),
    into a local velocity update `v = momentum * v + g + weight_decay * w`
    whose result is what gets averaged across ranks, followed by a plain
    `graph.sgd_update` with the averaged velocity. Averaging is linear, so
    without compression this is the same update as momentum SGD on the
    averaged gradient; with sparsification and error feedback it keeps the
    momentum from amplifying stale residuals (Deep Gradient Compression's
    momentum correction). The velocity becomes per-rank state
    (`otc.role = "per-rank"`). Nesterov momentum needs factor masking.

    With `factor-masking` (the default) the velocity moves into the
    exchange instead, for DGC's momentum-factor masking: each update becomes
    `graph.sgd_update` of `g + weight_decay * w` marked
    `dist.momentum_in_exchange`, its velocity state leaves the step, and
    otc-insert-compressed-allreduce gives every bucket a velocity that the
    compressed all-reduce accumulates (`u = momentum * u + g`), compresses
    with its tail and zeroes where it sent (see `dist.compressed_all_reduce`).
    A Nesterov update is also marked `dist.nesterov_in_exchange`: the
    exchange then sends the look-ahead `momentum * u + g` and its tail.

    `graph.adam_update` and `graph.adamw_update` (factor masking only) keep
    their first moment in the exchange the same way: each is marked
    `dist.momentum_in_exchange` and gets `first_moment = false`, so it runs
    with beta1 = 0 on the averaged `u = beta1 * u + g` (the exchange decays
    it with the run-time `beta1`); weight decay stays the update's (L2 for
    Adam, decoupled for AdamW), applied after the exchange. With beta1 0 an
    update's `m` is `d` whatever it was: the `exp_avg` states leave the
    step and each update takes its gradient for `m` (otc-bucket-gradients
    gives it the average there too, computed in place). Without factor
    masking they are refused. The states that leave the update steps
    (velocities, exp_avg) leave `@accumulate_step` too (`--accumulate`),
    which only carries them through.
  }];
  let dependentDialects = ["::otc::graph::GraphDialect"];
  let options = [
    Option<"factorMasking", "factor-masking", "bool", "true",
           "Keep the velocity in the compressed all-reduce and zero it where "
           "it was sent (DGC's momentum-factor masking)">,
  ];
}

def InsertCompressedAllReduce
    : Pass<"otc-insert-compressed-allreduce", "mlir::ModuleOp"> {
  let summary = "Average every gradient bucket with a compressed all-reduce";
  let description = [{
    Records `dist.world_size` and feeds each `dist.bucket` through a
    `dist.compressed_all_reduce`. With error feedback (lossy methods only)
    @train_step gains one residual per bucket as optimizer-like state
    (`otc.state = "bucket<i>.residual"`), so checkpoints keep it. When the
    function's updates are marked `dist.momentum_in_exchange`
    (otc-momentum-correction with factor masking), every bucket also gets
    this rank's velocity (`otc.state = "bucket<i>.velocity"`,
    `otc.role = "per-rank"`), decayed by `momentum` for SGD updates and by
    `beta1` for Adam's (`velocity_decay`); marked and unmarked updates in
    one function, or both kinds, are refused.

    `exchange=auto` picks each bucket's exchange by the bytes a rank sends
    per step (its owner group's size for an SDP bucket): `reduce-scatter`
    when its (S + 4 + S') (W - 1) bytes are fewer than `all-gather`'s
    P (W - 1), P being the bucket's payload, S its largest shard's and S'
    that rounded up to 4 bytes (so from three ranks on), `all-gather`
    otherwise; methods `none` and `powersgd` take `all-reduce`.

    Method `powersgd` gives every bucket the matrices PowerSGD compresses
    (each gradient of rank 2 or more as [shape[0], rest] whose rank-r
    factors are smaller than it, as torch's powerSGD_hook picks them) and,
    when there are any, their Q as per-rank state
    (`otc.state = "bucket<i>.powersgd_q"`). Given
    explicitly, `all-gather` and `reduce-scatter` apply to `none` too
    (its payload is the fp32 gradient).
  }];
  let dependentDialects = ["::otc::dist::DistDialect"];
  let options = [
    Option<"worldSize", "world-size", "int64_t", "1",
           "Number of data-parallel ranks">,
    Option<"method", "method", "std::string", "\"topk-int8\"",
           "none, fp16, bf16, int8, topk, topk-int8, randomk or powersgd">,
    Option<"ratio", "ratio", "double", "0.1",
           "Kept fraction per block (top-k and random-k methods)">,
    Option<"ratioMin", "ratio-min", "double", "0.01",
           "Lower bound of the adaptive ratio">,
    Option<"blockSize", "block-size", "int64_t", "256",
           "Elements per compression block">,
    Option<"errorFeedback", "error-feedback", "bool", "true",
           "Keep each rank's compression error and add it back next step">,
    Option<"adaptive", "adaptive", "bool", "false",
           "Let the ratio follow the gradient norm (see the README)">,
    Option<"warmupSteps", "warmup-steps", "int64_t", "0",
           "First steps sent dense">,
    Option<"powersgdRank", "powersgd-rank", "int64_t", "4",
           "Rank of PowerSGD's approximation (method powersgd)">,
    Option<"exchange", "exchange", "std::string", "\"auto\"",
           "auto, all-gather or reduce-scatter: how the ranks combine their "
           "payloads (auto: the one that sends fewer bytes; method none "
           "then takes a plain fp32 all-reduce)">,
  ];
}

//===----------------------------------------------------------------------===//
// Lowering
//===----------------------------------------------------------------------===//

def SplitSdpPrograms : Pass<"otc-split-sdp-programs", "mlir::ModuleOp"> {
  let summary = "One nested module per SDP program";
  let description = [{
    The ranks of an SDP plan run different steps, whose parameters differ
    in shape: each distinct rank mask's `@train_step_rank<r>` moves into a
    nested module `@variant<i>` as `@train_step` (variants numbered in the
    order of their first rank), `@eval_step` and `@calibrate_step` into
    `@whole_model`; each carries the module's attributes. The exec passes
    then lower and plan each program on its own. A no-op for other modules.
  }];
}

def LowerToExec : Pass<"otc-lower-to-exec", "mlir::ModuleOp"> {
  let summary = "Lower graph and dist ops to exec kernels on buffers";
  let description = [{
        Tensors become memrefs; each op becomes `exec.kernel` calls writing
    `exec.alloc`-ed buffers; optimizer updates and all-reduces work in place
    when their operand has no later use. Convolutions get a scratch buffer
    sized by the CPU kernel library; the CUDA kernels need none
    (`target=cuda`).
  }];
  let options = [
    Option<"target", "target", "std::string", "\"cpu\"",
           "Kernel library the program calls: cpu or cuda">,
  ];
  let dependentDialects = ["::otc::exec::ExecDialect",
                           "::mlir::memref::MemRefDialect"];
}

def FoldTransposes : Pass<"otc-fold-transposes", "mlir::ModuleOp"> {
  let summary = "Fold transposes into the float32 products that read or write them";
  let description = [{
    A `transpose` kernel that feeds `matmul` kernels becomes their `permA` /
    `permB` (the product reads the transpose's input through the
    permutation), and one that is the only reader of a product's result its
    `permY` (the product writes through it), where the strided product has
    a BLAS form (one contiguous dimension per matrix) and the transpose's
    input is not written after it. Attention's head transposes go this way.
  }];
}

def PlanMemory : Pass<"otc-plan-memory", "mlir::ModuleOp"> {
  let summary = "Place every buffer at a static offset in one arena";
  let description = [{
    Parameters, optimizer state, gradients, inputs and outputs get fixed
    offsets shared by all step functions; temporaries share the rest by
    liveness (greedy best fit, largest first). Each function then takes the
    arena as its only argument; the module records the layout
    (`otc.buffers`), the arena size and the memory breakdown (`otc.memory`).
  }];
}

def PlaceWaits : Pass<"otc-place-waits", "mlir::ModuleOp"> {
  let summary = "Place the waits for collectives and the checks before updates";
  let description = [{
    After `otc-plan-memory`, in every step function: an
    `exec.wait_collectives` before the first op that touches the arena bytes
    of a started collective (an all-reduce of a range touches only that
    range), before the first optimizer update and before the return, so
    that the program goes on with what does not depend on a collective
    while it runs; before the first update an `exec.check_errors` and, in
    SDP programs, an `exec.agree_finite`.
  }];
}

def GroupUpdates : Pass<"otc-group-updates", "mlir::ModuleOp"> {
  let summary = "One optimizer call for consecutive updates of the same kind";
  let description = [{
    After `otc-place-waits`: consecutive float32 `sgd_update`,
    `momentum_update`, `adam_update` or `adamw_update` kernels with the same
    attributes (only views between them) become one kernel over all their
    parameters (ins: the gradients; outs: each parameter then its state),
    which the kernel library runs as one vector split across threads: the
    many small updates of a model no longer run one after another on one
    thread. The result is the same bits.
  }];
}

def VerifyPlan : Pass<"otc-verify-plan", "mlir::ModuleOp"> {
  let summary = "Check a memory plan: no live buffers share bytes";
  let description = [{
    Checks a planned module (after `otc-plan-memory`) from its views alone:
    every view and persistent buffer lies inside the arena; persistent
    buffers do not overlap; a temporary touches no persistent buffer's
    bytes (gradients inside their bucket excepted); two views that share
    bytes are never live at once (a view is live from its first use to its
    last, a persistent buffer always); a convolution's workspace is as large
    as the kernel library needs. Each violation is an error naming the
    values, the op where both are live and, in a note, the other value's
    last use. `otc-compile` runs it in debug builds, with `--verify-plan`,
    or when `OTC_VERIFY_PLAN=1` (as the test suite sets).

    ```mlir
    // error: 'exec.kernel' op uses %3 (bytes [0, 64)) while %1 (bytes
    // [0, 64)), which shares bytes [0, 64), is still live
    ```
  }];
}

#endif // OTC_PASSES
