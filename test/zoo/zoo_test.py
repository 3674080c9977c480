#!/usr/bin/python3
#===- zoo_test.py - the model zoo, two steps against float64 --------------===#
#
# Each architecture is built with random weights and 10 classes (from
# torchvision's and timm's constructors, transformers' configurations, or
# torch.nn's LSTM/GRU/RNN; dropout and stochastic depth off, since their
# random masks cannot match), exported by torch.onnx in training mode,
# compiled by OTC and trained 2 momentum-SGD steps (0.9, lr 0.01) on a
# random batch (2x3x64x64 images, 2x8 token ids or 2x8x16 mel features).
# Checked against float64 PyTorch as model_parity_test checks its deep
# ResNets and fuzz_diff its random models: each step's loss, each
# parameter's update at steps 1 and 2 (the second goes through the momentum
# buffer) and the BatchNorm statistics after each step, within 4x PyTorch
# float32's own error (over the model and two copies moved by one ulp) or
# 1e-4 of the tensor's scale, with the ReLU inputs and max-pooling windows
# that float64 puts within 1e-3 of a tie decided at each step as each
# float32 program decided them at its own weights of that step. Each
# program's float64 reference for step 2 starts from that program's own
# state after step 1 (weights, statistics, the momentum buffers its update
# implies). Prints the table the README shows: model, ONNX operators,
# compile seconds, parity (the closest tensor's fraction of its bound over
# both steps), step ms.
#
#   zoo_test.py                 every model its python can build
#   zoo_test.py --filter NAMES  the models named (comma-separated)
#   zoo_test.py --library LIBS  the models of these packages (torchvision,
#                               torch, timm, transformers)
#   --exporter legacy           torch.onnx's TorchScript exporter, opset 16
#                               (torch 1.13 with Debian's python, torch 2.x's
#                               dynamo=False with build/pyenv's)
#   pyenv/bin/python zoo_test.py --exporter dynamo
#                               written by torch 2.x's dynamo=True exporter
#                               (opset 18; --train-batchnorm, since it writes
#                               BatchNorm in inference mode)
#
#===------------------------------------------------------------------------===#

import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "integration"))
import model_parity_test as M  # noqa: E402
import otc_testlib as T  # noqa: E402

SHAPE = (2, 3, 64, 64)
# Momentum-SGD steps trained and compared.
STEPS = 2

# name: torchvision constructor and its arguments (num_classes=10 added),
# or (segmentation constructor, arguments) for the segmentation heads.
MODELS = {
    "resnet50": ("resnet50", {}),
    "resnext50_32x4d": ("resnext50_32x4d", {}),
    "wide_resnet50_2": ("wide_resnet50_2", {}),
    "regnet_y_400mf": ("regnet_y_400mf", {}),
    "regnet_x_400mf": ("regnet_x_400mf", {}),
    "densenet121": ("densenet121", {}),
    "mobilenet_v2": ("mobilenet_v2", {}),
    "mobilenet_v3_small": ("mobilenet_v3_small", {}),
    "shufflenet_v2_x1_0": ("shufflenet_v2_x1_0", {}),
    "squeezenet1_1": ("squeezenet1_1", {}),
    "mnasnet0_5": ("mnasnet0_5", {}),
    "googlenet": ("googlenet", {"aux_logits": False, "init_weights": True}),
    "efficientnet_b0": ("efficientnet_b0", {}),
    "convnext_tiny": ("convnext_tiny", {}),
    "swin_t": ("swin_t", {}),
    "vit_b_16": ("vit_b_16", {"image_size": 64}),
    "fcn_resnet50": ("segmentation.fcn_resnet50", {}),
    "deeplabv3_mobilenet_v3_large": (
        "segmentation.deeplabv3_mobilenet_v3_large", {}),
    # timm (PyPI, build/pyenv): timm.create_model(name, num_classes=10).
    "timm_convnext_atto": ("timm.convnext_atto", {}),
    "timm_efficientnet_b0": ("timm.efficientnet_b0", {}),
    "timm_vit_tiny_patch16": ("timm.vit_tiny_patch16_224", {"img_size": 64}),
    "timm_resnet18d": ("timm.resnet18d", {}),
    # transformers (PyPI, build/pyenv): small configurations, 10 labels,
    # classifying 2 sequences of 8 token ids (attention mask all ones).
    "hf_bert": ("transformers.Bert", {
        "hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 2,
        "intermediate_size": 64}),
    "hf_gpt2": ("transformers.GPT2", {
        "n_embd": 32, "n_layer": 2, "n_head": 2, "pad_token_id": 0}),
    "hf_llama_gqa": ("transformers.Llama", {
        "hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2,
        "num_attention_heads": 4, "num_key_value_heads": 2,
        "pad_token_id": 0}),
    # transformers models without a sequence-classification head of their
    # own: the T5 encoder's mean over tokens into a Linear head; ViT on the
    # zoo's images; Whisper's encoder (WhisperForAudioClassification) on
    # 2 clips of 8 mel bins x 16 frames.
    "hf_t5_encoder": ("transformers.T5Encoder", {
        "d_model": 32, "d_kv": 16, "d_ff": 64, "num_layers": 2,
        "num_heads": 2, "relative_attention_num_buckets": 8,
        "relative_attention_max_distance": 16}),
    "hf_vit": ("transformers.ViT", {
        "image_size": SHAPE[2], "patch_size": 16, "hidden_size": 32,
        "num_hidden_layers": 2, "num_attention_heads": 2,
        "intermediate_size": 64}),
    "hf_whisper_encoder": ("transformers.Whisper", {
        "num_mel_bins": 8, "max_source_positions": 8, "d_model": 32,
        "encoder_layers": 2, "encoder_attention_heads": 2,
        "encoder_ffn_dim": 64, "classifier_proj_size": 16}),
    # torch.nn recurrent text classifiers (as integration/recurrent_test.py
    # builds them): embedding, the recurrent layer, a Linear head on its
    # last output and its final state.
    "lstm_2layer_bidir": ("torch.LSTM", {
        "num_layers": 2, "bidirectional": True}),
    "gru_batch_first": ("torch.GRU", {"batch_first": True}),
    "rnn_tanh": ("torch.RNN", {}),
}
# Token ids of the text models, and their vocabulary.
TEXT_SHAPE, VOCAB = (2, 8), 64
# Whisper's log-mel features: batch x mel bins x frames (2 x the encoder's
# max_source_positions: its convolutions halve the frames).
AUDIO_SHAPE = (2, 8, 16)


def recurrent_classifier(cell, kwargs):
    """Token ids -> an embedding -> torch.nn.`cell`(**kwargs) -> a Linear
    head on its last output and its final state -> 10 class logits."""
    import torch
    import torch.nn as nn
    embed, hidden = 16, 16

    class TextClassifier(nn.Module):
        def __init__(self):
            super().__init__()
            self.batch_first = kwargs.get("batch_first", False)
            self.embed = nn.Embedding(VOCAB, embed)
            self.rnn = getattr(nn, cell)(embed, hidden, **kwargs)
            dirs = 2 if kwargs.get("bidirectional") else 1
            layers = kwargs.get("num_layers", 1)
            self.head = nn.Linear((1 + layers) * dirs * hidden, 10)

        def forward(self, ids):
            x = self.embed(ids)
            if not self.batch_first:
                x = x.transpose(0, 1)
            y, s = self.rnn(x)
            h = s[0] if cell == "LSTM" else s
            last = y[:, -1] if self.batch_first else y[-1]
            final = h.transpose(0, 1).reshape(ids.shape[0], -1)
            return self.head(torch.cat([last, final], dim=1))
    return TextClassifier()


def transformers_model(family, kwargs):
    """A transformers model with 10 labels: input (token ids, images or
    mel features) -> class logits."""
    import torch
    import torch.nn as nn
    import transformers
    if family == "T5Encoder":
        config = transformers.T5Config(vocab_size=VOCAB, use_cache=False,
                                       dropout_rate=0.0, **kwargs)
        net = transformers.T5EncoderModel(config)
    elif family in ("ViT", "Whisper"):
        config = getattr(transformers, family + "Config")(num_labels=10,
                                                          **kwargs)
        net = getattr(transformers, family + (
            "ForImageClassification" if family == "ViT" else
            "ForAudioClassification"))(config)
    else:
        config = getattr(transformers, family + "Config")(
            vocab_size=VOCAB, num_labels=10, use_cache=False,
            max_position_embeddings=32, **kwargs)
        net = getattr(transformers, family + "ForSequenceClassification")(
            config)

    class Logits(nn.Module):
        """input -> class logits (the T5 encoder's: a Linear head on the
        mean over tokens)."""

        def __init__(self):
            super().__init__()
            self.hf = net
            if family == "T5Encoder":
                self.head = nn.Linear(config.d_model, 10)

        def forward(self, x):
            if family == "T5Encoder":
                return self.head(self.hf(input_ids=x).last_hidden_state
                                 .mean(dim=1))
            if family in ("ViT", "Whisper"):
                return self.hf(x).logits
            # With the (all-ones) attention mask a training batch carries:
            # without one transformers looks for packed sequences with
            # torch.diff, which the TorchScript exporter cannot write.
            return self.hf(input_ids=x,
                           attention_mask=torch.ones_like(x)).logits
    return Logits()


def input_batch(name, rng):
    """The model's batch: token ids, mel features or images."""
    import numpy as np
    ctor = MODELS[name][0]
    if ctor.startswith("torch.") or (ctor.startswith("transformers.") and
                                     ctor not in ("transformers.ViT",
                                                  "transformers.Whisper")):
        return rng.randint(1, VOCAB, size=TEXT_SHAPE).astype(np.int64)
    shape = AUDIO_SHAPE if ctor == "transformers.Whisper" else SHAPE
    return rng.standard_normal(shape).astype(np.float32)


def build(name):
    import torch
    import torch.nn as nn
    import torchvision
    ctor, kwargs = MODELS[name]
    torch.manual_seed(0)
    if ctor.startswith("timm."):
        import timm
        model = timm.create_model(ctor.split(".", 1)[1], num_classes=10,
                                  pretrained=False, **kwargs)
    elif ctor.startswith("transformers."):
        model = transformers_model(ctor.split(".", 1)[1], kwargs)
    elif ctor.startswith("torch."):
        model = recurrent_classifier(ctor.split(".", 1)[1], kwargs)
    elif ctor.startswith("segmentation."):
        seg = getattr(torchvision.models.segmentation,
                      ctor.split(".", 1)[1])(num_classes=10,
                                             weights_backbone=None,
                                             aux_loss=False)

        class PerImage(nn.Module):
            """Class scores per image: the mean over the segmentation map."""

            def __init__(self):
                super().__init__()
                self.seg = seg

            def forward(self, x):
                return self.seg(x)["out"].mean(dim=(2, 3))
        model = PerImage()
    else:
        model = getattr(torchvision.models, ctor)(num_classes=10, **kwargs)
    # Dropout's and stochastic depth's masks are random in both programs:
    # off.
    for parent in model.modules():
        for child_name, child in parent.named_children():
            if isinstance(child, nn.Dropout):
                child.p = 0.0  # (transformers reads .p)
            elif isinstance(child, torchvision.ops.StochasticDepth):
                child.p = 0.0
    # OTC trains every float initializer: a frozen parameter (Whisper's
    # sinusoidal position table) trains in the reference too.
    for p in model.parameters():
        p.requires_grad_(True)
    return model


def library(name):
    """The package that builds the model: timm, transformers, torch (the
    recurrent classifiers) or torchvision."""
    prefix = MODELS[name][0].split(".")[0]
    return prefix if prefix in ("timm", "transformers", "torch") \
        else "torchvision"


def onnx_ops(path):
    import onnx
    return len({n.op_type for n in onnx.load(path).graph.node})


def main():
    # Each exporter's files in a folder of its own (both may run at once).
    pre = argparse.ArgumentParser(add_help=False)
    pre.add_argument("--exporter", default="legacy")
    exporter = pre.parse_known_args()[0].exporter
    args, ctx = T.parse_args(
        "zoo" if exporter == "legacy" else "zoo_" + exporter,
        "The model zoo's architectures, %d steps against float64." % STEPS,
        extra=lambda p: (
            p.add_argument("--filter", default="",
                           help="comma-separated model names"),
            p.add_argument("--library", default="",
                           help="only the models of these (comma-separated) "
                           "packages: torchvision, torch, timm, "
                           "transformers"),
            p.add_argument("--exporter", choices=["legacy", "dynamo"],
                           default="legacy",
                           help="torch.onnx.export's TorchScript exporter "
                           "(opset 16) or torch 2.x's dynamo=True one (opset "
                           "18; needs build/pyenv's python)")))
    checks = T.Checks("zoo")
    import numpy as np
    import torch
    torch.set_num_threads(1)
    names = [n for n in args.filter.split(",") if n] or list(MODELS)
    libraries = [n for n in args.library.split(",") if n]
    names = [n for n in names if n not in MODELS or not libraries or
             library(n) in libraries]
    unknown = [n for n in names if n not in MODELS]
    if unknown:
        print("FAIL: unknown models %s (known: %s)" % (unknown, list(MODELS)))
        return 1
    rows = []
    for name in names:
        rng = np.random.RandomState(0)
        lib = library(name)
        if lib in ("timm", "transformers"):
            try:
                __import__(lib)
            except ImportError:
                print("SKIP: %s needs %s (PyPI: build/pyenv's python)" %
                      (name, lib))
                continue
        x = input_batch(name, rng)
        y = rng.randint(0, 10, size=x.shape[:1]).astype(np.int64)
        try:
            row = M.check_updates(
                name, build(name), x, y, ctx, checks, args.threads,
                opset=16 if args.exporter == "legacy" else 18,
                exporter=args.exporter, steps=STEPS)
        except Exception as e:  # the exporter or the reference, not OTC
            checks.check("%s: exported and compared" % name, False,
                         "%s: %s" % (type(e).__name__, str(e)[:300]))
            row = None
        ops = onnx_ops(ctx.path(name, "model.onnx")) \
            if os.path.exists(ctx.path(name, "model.onnx")) else 0
        rows.append((name, ops, row))
    print("\nexporter: %s\n| model | ONNX ops | compile s | parity "
          "(closest tensor over both steps, of its bound) | step ms |\n"
          "|---|---|---|---|---|" % args.exporter)
    for name, ops, row in rows:
        if row is None:
            print("| %s | %d | – | does not train (see the FAIL above) | – |"
                  % (name, ops))
        else:
            print("| %s | %d | %.1f | %s %.2f | %.0f |" % (
                name, ops, row["compile_s"], "ok" if row["ok"] else "FAIL",
                row["worst"], 1000 * row["step_s"]))
    return checks.finish()


if __name__ == "__main__":
    sys.exit(main())
