#===- cuda_compile_test.py - otc-compile --target cuda builds programs -----===#
#
# Compiles the example MLP (batch 32, Adam) for CUDA as an executable and as
# a library, model_parity_test's GPT-style decoder (embeddings: gather;
# LayerNorm; causal masking: where) and a residual CNN (convolutions,
# BatchNorm, ReLU, max pooling, global average pooling, a linear head) and a
# UNet (transposed convolution, InstanceNorm, nn.Upsample) as executables,
# an MLP with training-mode dropout, an MLP through TopK, GatherElements and
# ScatterElements, and text classifiers on 2-layer bidirectional LSTM, GRU
# and RNN: all must build here (no GPU needed) and need the CUDA kernel
# library. Then the model zoo (test/zoo: a slice, --zoo all for every model
# this python can build, `make zoo-cuda`): each model compiled for the CPU
# must compile for CUDA and call no CPU kernel; the table says how long
# each took. Nothing is run: programs on a GPU are tested by the runtime's
# `gpu` tests and integration.cuda_train. Skips (exit 77) when otc-compile
# was built without CUDA.
#
#===------------------------------------------------------------------------===#

import os
import re
import subprocess
import sys

import otc_testlib as T

SKIP = 77

# The zoo's models compiled in `make test` (--zoo all: every model this
# python can build; `make zoo-cuda`): the ones --target cuda once refused
# for dropout (MobileNet v3, SqueezeNet, GoogLeNet, MNASNet, ViT) and pad
# (DenseNet), and a recurrent one.
ZOO_SLICE = ("squeezenet1_1,mobilenet_v3_small,mnasnet0_5,googlenet,"
             "densenet121,vit_b_16,lstm_2layer_bidir")


def residual_cnn():
    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.stem = nn.Conv2d(1, 8, 3, 2, 1)
            self.bn1 = nn.BatchNorm2d(8)
            self.pool = nn.MaxPool2d(3, 2, 1)
            self.conv = nn.Conv2d(8, 8, 3, 1, 1, bias=False)
            self.bn2 = nn.BatchNorm2d(8)
            self.fc = nn.Linear(8, 10)

        def forward(self, x):
            y = self.pool(F.relu(self.bn1(self.stem(x))))
            y = F.relu(y + self.bn2(self.conv(y)))
            y = F.adaptive_avg_pool2d(y, 1)  # GlobalAveragePool
            return self.fc(torch.flatten(y, 1))

    torch.manual_seed(0)
    return Net()


def unet():
    """A small UNet: strided convolutions down, a transposed convolution
    and nn.Upsample (nearest and bilinear) up, InstanceNorm, a skip
    connection, a linear head."""
    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.down = nn.Conv2d(1, 8, 3, 2, 1)
            self.norm1 = nn.InstanceNorm2d(8, affine=True)
            self.bottom = nn.Conv2d(8, 8, 3, 2, 1)
            self.up = nn.ConvTranspose2d(8, 8, 3, 2, 1, output_padding=1)
            self.norm2 = nn.InstanceNorm2d(8, affine=True)
            self.nearest = nn.Upsample(scale_factor=2, mode="nearest")
            self.bilinear = nn.Upsample(scale_factor=2, mode="bilinear",
                                        align_corners=False)
            self.head = nn.Conv2d(16, 4, 3, 1, 1)
            self.fc = nn.Linear(4, 10)

        def forward(self, x):
            d = F.relu(self.norm1(self.down(x)))       # 14 x 14
            b = F.relu(self.bottom(d))                  # 7 x 7
            u = F.relu(self.norm2(self.up(b)))          # 14 x 14
            y = torch.cat([self.nearest(u), self.bilinear(d)], 1)  # 28 x 28
            y = F.adaptive_avg_pool2d(F.relu(self.head(y)), 1)
            return self.fc(torch.flatten(y, 1))

    torch.manual_seed(0)
    return Net()


def topk_gather_scatter():
    """An MLP whose hidden layer goes through TopK, GatherElements and
    ScatterElements: training needs gather_elements_grad too."""
    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = nn.Linear(20, 16)
            self.fc2 = nn.Linear(16, 5)

        def forward(self, x):
            h = F.relu(self.fc1(x))
            v, i = torch.topk(h, 4, dim=1)
            g = torch.gather(h, 1, i.flip(1))
            return self.fc2(torch.scatter(h, 1, i, v * g))

    torch.manual_seed(0)
    return Net()


def gpt(path):
    """model_parity_test's GPT-style decoder, exported for training."""
    import torch
    import model_parity_test as M
    model, shape, vocab, opset = M.gpt()
    torch.onnx.export(model.train(), (torch.randint(0, vocab, shape),), path,
                      input_names=["input"], output_names=["logits"],
                      training=torch.onnx.TrainingMode.TRAINING,
                      do_constant_folding=False, opset_version=opset)
    return shape[0]


def needed_libraries(path):
    """DT_NEEDED entries of an ELF file (readelf -d)."""
    r = subprocess.run(["readelf", "-d", path], capture_output=True,
                       text=True)
    return re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", r.stdout)


def check_program(checks, what, path, executable):
    if not checks.check("%s: written" % what, os.path.isfile(path)):
        return
    with open(path, "rb") as f:
        elf = f.read(18)
    e_type = elf[16] if len(elf) > 16 else -1
    if executable:
        interp = subprocess.run(["readelf", "-l", path], capture_output=True,
                                text=True).stdout
        checks.check("%s: an ELF executable" % what,
                     elf[:4] == b"\x7fELF" and os.access(path, os.X_OK) and
                     "program interpreter" in interp, "e_type %d" % e_type)
    else:
        checks.check("%s: an ELF shared object" % what,
                     elf[:4] == b"\x7fELF" and e_type == 3,
                     "e_type %d" % e_type)
    needed = needed_libraries(path)
    checks.check("%s: needs libotc_kernels_cuda" % what,
                 any(n.startswith("libotc_kernels_cuda.so") for n in needed),
                 "NEEDED: %s" % ", ".join(needed))
    nm = subprocess.run(["nm", "-D", "--undefined-only", path],
                        capture_output=True, text=True).stdout
    checks.check("%s: calls otckd_ kernels, no otck_ kernel" % what,
                 "otckd_set_stream" in nm and "otckd_take_status" in nm and
                 bool(re.search(r"\botckd_adam(_multi)?_f32\b", nm)) and
                 not re.search(r"\botck_[a-z]", nm))
    ldd = subprocess.run(["ldd", path], capture_output=True, text=True).stdout
    line = [l for l in ldd.splitlines() if "libotc_kernels_cuda" in l]
    checks.check("%s: ldd finds libotc_kernels_cuda" % what,
                 bool(line) and "not found" not in line[0],
                 line[0].strip() if line else "not listed")


def zoo(ctx, checks, names, libraries=None):
    """Each zoo model compiled (--emit=lib, momentum SGD as the zoo trains
    it) for the CPU and for CUDA: a model that compiles for the CPU must
    compile for CUDA. Prints the table."""
    import numpy as np
    sys.path.insert(0, os.path.join(T.SOURCE_DIR, "test", "zoo"))
    import model_parity_test as M
    import zoo_test as Z
    names = list(Z.MODELS) if names == "all" else names.split(",")
    rows = []
    for name in names:
        if name not in Z.MODELS:
            checks.check("zoo model %s exists" % name, False,
                         "known: %s" % ", ".join(Z.MODELS))
            continue
        lib = Z.library(name)
        if libraries and lib not in libraries:
            continue
        if lib in ("timm", "transformers"):
            try:
                __import__(lib)
            except ImportError:
                print("SKIP: %s needs %s (PyPI: build/pyenv's python)" %
                      (name, lib))
                continue
        rng = np.random.RandomState(0)
        x = Z.input_batch(name, rng)
        path = ctx.path("zoo", name + ".onnx")
        try:
            M.export_training(Z.build(name).train(), x, path, 16)
        except Exception as e:  # the exporter, not OTC
            checks.check("zoo %s: exported" % name, False,
                         "%s: %s" % (type(e).__name__, str(e)[:200]))
            continue
        flags = dict(emit="lib", batch=x.shape[0], loss="cross-entropy",
                     label="labels", optimizer="momentum", momentum=0.9,
                     lr=0.01)
        cpu, cuda = T.compile_many(ctx, [
            (path, ctx.path("zoo", name + "-cpu.so"), flags),
            (path, ctx.path("zoo", name + "-cuda.so"),
             dict(flags, target="cuda"))])
        if not cpu.ok:
            print(cpu.describe())
        ok = checks.check("zoo %s: compiles for CUDA as for the CPU" % name,
                          cuda.ok or not cpu.ok,
                          "%.1f s" % cuda.seconds if cuda.ok else
                          (cuda.stderr.strip().splitlines() or ["?"])[-1])
        if cuda.ok:
            nm = subprocess.run(["nm", "-D", "--undefined-only",
                                 ctx.path("zoo", name + "-cuda.so")],
                                capture_output=True, text=True).stdout
            ok &= checks.check("zoo %s: the CUDA program calls CUDA "
                               "kernels, no CPU kernel" % name,
                               "otckd_take_status" in nm and
                               not re.search(r"\botck_[a-z]", nm))
        rows.append((name, cpu, cuda, ok))
    print("\n| model | CPU compile s | CUDA compile s | CUDA |\n"
          "|---|---|---|---|")
    for name, cpu, cuda, ok in rows:
        print("| %s | %s | %s | %s |" % (
            name, "%.1f" % cpu.seconds if cpu.ok else "fails",
            "%.1f" % cuda.seconds if cuda.ok else "fails",
            "ok" if ok else "FAIL"))


def main():
    args, ctx = T.parse_args(
        "cuda_compile",
        "otc-compile --target cuda builds the MLP (exe and lib), a GPT, a "
        "CNN, a UNet, recurrent classifiers and a slice of the model zoo.",
        extra=lambda p: (
            p.add_argument("--zoo", default=ZOO_SLICE,
                           help="zoo models to compile for the CPU and CUDA "
                           "(comma-separated, 'all', or '' for none; "
                           "default: %s)" % ZOO_SLICE),
            p.add_argument("--zoo-only", default="",
                           help="only the zoo models of these packages "
                           "(comma-separated: torchvision, torch, timm, "
                           "transformers), nothing else")))
    checks = T.Checks("cuda_compile")
    if args.zoo_only:
        zoo(ctx, checks, args.zoo, args.zoo_only.split(","))
        return checks.finish()

    mlp = ctx.path("mlp.onnx")
    T.gen_mlp(mlp)
    flags = dict(batch=32, optimizer="adam", target="cuda")

    src = ctx.path("mlp.cpp")
    r = T.compile_model(ctx, mlp, src, emit="cpp", **flags)
    if r.returncode != 0 and "built without CUDA" in r.stderr:
        print("SKIP: otc-compile was built without CUDA: %s" %
              r.stderr.strip(), flush=True)
        return SKIP
    if T.require_ok(checks, "--emit=cpp --target cuda", r):
        text = open(src).read()
        checks.check("CUDA C++: kernels_cuda.h, stream, OTC_DEVICE_CUDA",
                     '#include "otc/kernels_cuda.h"' in text and
                     "otckd_set_stream(ctx->stream);" in text and
                     re.search(r"OTC_DEVICE_CUDA, nullptr, 1, \d+, kSites};",
                               text) and
                     '\\"device\\":\\"cuda\\"' in text)
        checks.check("CUDA C++: no CPU kernel call",
                     not re.search(r"\botck_[a-z_0-9]+\(", text))

    exe = ctx.path("train")
    r = T.compile_model(ctx, mlp, exe, emit="exe", **flags)
    if T.require_ok(checks, "--emit=exe --target cuda (batch 32, Adam)", r):
        check_program(checks, "executable", exe, True)

    lib = ctx.path("libmlp.so")
    r = T.compile_model(ctx, mlp, lib, emit="lib", **flags)
    if T.require_ok(checks, "--emit=lib --target cuda", r):
        check_program(checks, "library", lib, False)

    # The GPT compiles too: its gathers, LayerNorms and masks have CUDA
    # kernels.
    gpt_onnx = ctx.path("gpt.onnx")
    gpt_batch = gpt(gpt_onnx)
    gpt_exe = ctx.path("gpt")
    r = T.compile_model(ctx, gpt_onnx, gpt_exe, emit="exe", batch=gpt_batch,
                        optimizer="adam", target="cuda")
    if T.require_ok(checks, "GPT: --emit=exe --target cuda (Adam)", r):
        check_program(checks, "GPT executable", gpt_exe, True)
        nm = subprocess.run(["nm", "-D", "--undefined-only", gpt_exe],
                            capture_output=True, text=True).stdout
        wanted = ["otckd_gather", "otckd_gather_grad_f32",
                  "otckd_layer_norm_f32", "otckd_layer_norm_grad_f32",
                  "otckd_where"]
        checks.check("GPT executable: calls the CUDA gather, LayerNorm and "
                     "where kernels",
                     all(re.search(r"\b%s\b" % f, nm) for f in wanted),
                     "missing: %s" % [f for f in wanted
                                      if not re.search(r"\b%s\b" % f, nm)])

    import torch
    cnn = ctx.path("cnn.onnx")
    torch.onnx.export(residual_cnn().train(), (torch.zeros(4, 1, 28, 28),),
                      cnn, input_names=["input"], output_names=["logits"],
                      training=torch.onnx.TrainingMode.TRAINING,
                      do_constant_folding=False, opset_version=15)
    out = ctx.path("cnn")
    r = T.compile_model(ctx, cnn, out, emit="exe", batch=4, optimizer="adam",
                        target="cuda")
    ok = T.require_ok(checks, "residual CNN compiled for CUDA", r)
    if ok:
        check_program(checks, "residual CNN", out, True)
        nm = subprocess.run(["nm", "-D", "--undefined-only", out],
                            capture_output=True, text=True).stdout
        checks.check("residual CNN: calls the conv, BatchNorm, pool and "
                     "reduction twins",
                     all("otckd_%s" % k in nm for k in (
                         "conv_f32", "conv_grad_input_f32",
                         "conv_grad_weight_f32", "batch_norm_train_f32",
                         "batch_norm_grad_f32", "max_pool_f32",
                         "max_pool_grad_f32", "reduce_f32",
                         "reduce_grad_f32")),
                     nm.strip()[-400:])

    # A UNet: transposed convolutions, InstanceNorm and Resize have twins.
    unet_onnx = ctx.path("unet.onnx")
    torch.onnx.export(unet().train(), (torch.zeros(2, 1, 28, 28),),
                      unet_onnx, input_names=["input"],
                      output_names=["logits"],
                      training=torch.onnx.TrainingMode.TRAINING,
                      do_constant_folding=False, opset_version=15)
    out = ctx.path("unet")
    r = T.compile_model(ctx, unet_onnx, out, emit="exe", batch=2,
                        optimizer="adam", target="cuda")
    if T.require_ok(checks, "UNet compiled for CUDA", r):
        check_program(checks, "UNet", out, True)
        nm = subprocess.run(["nm", "-D", "--undefined-only", out],
                            capture_output=True, text=True).stdout
        wanted = ["otckd_conv_transpose_f32", "otckd_instance_norm_f32",
                  "otckd_instance_norm_grad_f32", "otckd_resize_f32",
                  "otckd_resize_grad_f32"]
        checks.check("UNet: calls the ConvTranspose, InstanceNorm and Resize "
                     "twins",
                     all(re.search(r"\b%s\b" % f, nm) for f in wanted),
                     "missing: %s" % [f for f in wanted
                                      if not re.search(r"\b%s\b" % f, nm)])

    # Dropout in training mode: the twin draws the CPU's mask.
    torch.manual_seed(0)
    drop = torch.nn.Sequential(torch.nn.Linear(20, 32), torch.nn.ReLU(),
                               torch.nn.Dropout(0.2), torch.nn.Linear(32, 5))
    drop_onnx = ctx.path("dropout_mlp.onnx")
    torch.onnx.export(drop.train(), (torch.zeros(8, 20),), drop_onnx,
                      input_names=["input"], output_names=["logits"],
                      training=torch.onnx.TrainingMode.TRAINING,
                      do_constant_folding=False, opset_version=15)
    out = ctx.path("dropout_mlp")
    r = T.compile_model(ctx, drop_onnx, out, emit="exe", batch=8,
                        optimizer="adam", target="cuda")
    if T.require_ok(checks, "MLP with dropout compiled for CUDA", r):
        check_program(checks, "MLP with dropout", out, True)
        nm = subprocess.run(["nm", "-D", "--undefined-only", out],
                            capture_output=True, text=True).stdout
        checks.check("MLP with dropout: calls otckd_dropout_f32",
                     re.search(r"\botckd_dropout_f32\b", nm) is not None)

    # TopK, GatherElements and ScatterElements, and their gradients.
    tgs_onnx = ctx.path("topk_gather_scatter.onnx")
    torch.onnx.export(topk_gather_scatter().train(), (torch.zeros(8, 20),),
                      tgs_onnx, input_names=["input"], output_names=["logits"],
                      training=torch.onnx.TrainingMode.TRAINING,
                      do_constant_folding=False, opset_version=15)
    out = ctx.path("topk_gather_scatter")
    r = T.compile_model(ctx, tgs_onnx, out, emit="exe", batch=8,
                        optimizer="adam", target="cuda")
    if T.require_ok(checks, "MLP with topk, gather and scatter compiled for "
                    "CUDA", r):
        check_program(checks, "MLP with topk, gather and scatter", out, True)
        nm = subprocess.run(["nm", "-D", "--undefined-only", out],
                            capture_output=True, text=True).stdout
        wanted = ["otckd_topk_f32", "otckd_gather_elements",
                  "otckd_gather_elements_grad_f32",
                  "otckd_scatter_elements_f32"]
        checks.check("MLP with topk, gather and scatter: calls their twins",
                     all(re.search(r"\b%s\b" % f, nm) for f in wanted),
                     "missing: %s" % [f for f in wanted
                                      if not re.search(r"\b%s\b" % f, nm)])

    # Recurrent layers unroll into ops that all have CUDA twins.
    import recurrent_test as RT
    for name in ("lstm_2layer_bidir_batch_first", "gru_2layer_bidir_batch_first",
                 "rnn_relu_2layer_bidir"):
        cell, kwargs, _ = RT.CONFIGS[name]
        path = ctx.path(name + ".onnx")
        torch.onnx.export(RT.classifier(cell, kwargs, False).train(),
                          (torch.zeros(RT.BATCH, RT.SEQ, dtype=torch.int64),),
                          path, input_names=["ids"], output_names=["logits"],
                          training=torch.onnx.TrainingMode.TRAINING,
                          do_constant_folding=False, opset_version=14)
        out = ctx.path(name)
        r = T.compile_model(ctx, path, out, emit="exe", batch=RT.BATCH,
                            optimizer="adamw", target="cuda")
        if T.require_ok(checks, "%s classifier compiled for CUDA" % name, r):
            check_program(checks, name, out, True)
    if args.zoo:
        zoo(ctx, checks, args.zoo)
    return checks.finish()


if __name__ == "__main__":
    sys.exit(main())
