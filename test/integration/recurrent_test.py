#!/usr/bin/python3
#===- recurrent_test.py - LSTM, GRU and RNN against PyTorch -----------------===#
#
# Text classifiers built on torch.nn.LSTM, GRU and RNN (token embedding, the
# recurrent layer, a linear head on its last output and on its final state),
# exported to ONNX and compiled by OTC in several configurations: 1 and 2
# layers, bidirectional, batch_first, a given initial state, RNN with ReLU.
#
# Checked per configuration:
#  - the gradient through time: one SGD step with lr 1, so that each
#    parameter's update is its gradient, against float64 PyTorch: within 4x
#    PyTorch float32's own error or 1e-4 of the tensor's scale;
#  - training: 3 AdamW steps, every loss within rel 1e-4 of PyTorch float32
#    and every trained tensor within rel 1e-3 of it.
#
#===------------------------------------------------------------------------===#

import copy
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import otc_testlib as T  # noqa: E402

VOCAB, SEQ, BATCH, EMBED, HIDDEN, CLASSES = 13, 6, 3, 5, 7, 4
FLOAT32_FACTOR, SCALE_FLOOR = 4.0, 1e-4
STEPS, LOSS_TOL, WEIGHT_TOL = 3, 1e-4, 1e-3

# name: (cell, constructor arguments, whether h0 is a model input)
CONFIGS = {
    "lstm": ("LSTM", {}, False),
    "lstm_2layer_bidir_batch_first": (
        "LSTM", {"num_layers": 2, "bidirectional": True, "batch_first": True},
        False),
    "lstm_h0": ("LSTM", {"batch_first": True}, True),
    "gru": ("GRU", {}, False),
    "gru_2layer_bidir_batch_first": (
        "GRU", {"num_layers": 2, "bidirectional": True, "batch_first": True},
        False),
    "gru_h0": ("GRU", {"bidirectional": True}, True),
    "rnn": ("RNN", {}, False),
    "rnn_relu_2layer_bidir": (
        "RNN", {"num_layers": 2, "bidirectional": True,
                "nonlinearity": "relu"}, False),
}


def classifier(cell, kwargs, with_h0):
    import torch
    import torch.nn as nn

    class TextClassifier(nn.Module):
        def __init__(self):
            super().__init__()
            self.batch_first = kwargs.get("batch_first", False)
            self.embed = nn.Embedding(VOCAB, EMBED)
            self.rnn = getattr(nn, cell)(EMBED, HIDDEN, **kwargs)
            dirs = 2 if kwargs.get("bidirectional") else 1
            layers = kwargs.get("num_layers", 1)
            self.head = nn.Linear(dirs * HIDDEN + layers * dirs * HIDDEN,
                                  CLASSES)

        def forward(self, ids, *h0):
            x = self.embed(ids)
            if not self.batch_first:
                x = x.transpose(0, 1)
            state = None
            if h0:
                # Model inputs are batch-major: h0 is [batch, layers, hidden].
                h = h0[0].transpose(0, 1).contiguous()
                state = (h, torch.tanh(h)) if cell == "LSTM" else h
            y, s = self.rnn(x, state)
            h = s[0] if cell == "LSTM" else s
            last = y[:, -1] if self.batch_first else y[-1]
            final = h.transpose(0, 1).reshape(ids.shape[0], -1)
            return self.head(torch.cat([last, final], dim=1))

    torch.manual_seed(0)
    return TextClassifier()


def main():
    args, ctx = T.parse_args("recurrent", "LSTM/GRU/RNN vs PyTorch.",
                             extra=lambda p: p.add_argument("--filter",
                                                            default=""))
    checks = T.Checks("recurrent")
    import numpy as np
    import torch
    torch.set_num_threads(1)
    for name, (cell, kwargs, with_h0) in CONFIGS.items():
        if args.filter not in name:
            continue
        model = classifier(cell, kwargs, with_h0)
        model.train()
        rng = np.random.RandomState(3)
        ids = rng.randint(0, VOCAB, size=(BATCH, SEQ)).astype(np.int64)
        labels = rng.randint(0, CLASSES, size=(BATCH,)).astype(np.int64)
        dirs = 2 if kwargs.get("bidirectional") else 1
        h0 = (0.5 * rng.standard_normal(
            (BATCH, kwargs.get("num_layers", 1) * dirs, HIDDEN))).astype(
                np.float32) if with_h0 else None
        inputs = (torch.from_numpy(ids),) + (
            (torch.from_numpy(h0),) if with_h0 else ())
        names = ["ids"] + (["h0"] if with_h0 else [])
        onnx_path = ctx.path(name, "model.onnx")
        torch.onnx.export(model, inputs, onnx_path, input_names=names,
                          output_names=["logits"], opset_version=14,
                          training=torch.onnx.TrainingMode.TRAINING,
                          do_constant_folding=False)
        data = {"ids": ctx.path(name, "ids.npy"),
                "labels": ctx.path(name, "labels.npy")}
        np.save(data["ids"], ids)
        np.save(data["labels"], labels)
        if with_h0:
            data["h0"] = ctx.path(name, "h0.npy")
            np.save(data["h0"], h0)
        w0 = {k: v.astype(np.float64)
              for k, v in T.read_onnx_weights(onnx_path).items()}

        def forward(m, dtype):
            extra = (torch.from_numpy(h0).to(dtype),) if with_h0 else ()
            return m(torch.from_numpy(ids), *extra)

        # 1. The gradient: one SGD step with lr 1.
        prog = ctx.path(name, "sgd")
        res = T.compile_model(ctx, onnx_path, prog, loss="cross-entropy",
                              optimizer="sgd", lr=1.0, batch=BATCH)
        if not T.require_ok(checks, "%s: otc-compile" % name, res):
            continue
        sgd_out = ctx.path(name, "sgd.onnx")
        r = T.run(T.train_cmd(prog, data, steps=1, no_shuffle=True,
                              export=sgd_out, threads=args.threads))
        if not T.require_ok(checks, "%s: one SGD step" % name, r):
            continue
        w1 = T.read_onnx_weights(sgd_out)
        grads = {}
        for dtype in (torch.float32, torch.float64):
            m = copy.deepcopy(model).to(dtype)
            loss = torch.nn.functional.cross_entropy(
                forward(m, dtype), torch.from_numpy(labels))
            loss.backward()
            grads[dtype] = {k: p.grad.double().numpy()
                            for k, p in m.named_parameters()}
        bad, worst, missing = [], (0.0, "-"), []
        for k, g64 in grads[torch.float64].items():
            if k not in w1:
                missing.append(k)
                continue
            scale = float(np.abs(g64).max()) or 1.0
            err = float(np.abs(w0[k] - w1[k] - g64).max()) / scale
            err32 = float(np.abs(grads[torch.float32][k] - g64).max()) / scale
            bound = max(FLOAT32_FACTOR * err32, SCALE_FLOOR)
            worst = max(worst, (err / bound, k))
            if err > bound:
                bad.append("%s %.2e > %.2e" % (k, err, bound))
        checks.check("%s: every gradient as close to float64 as PyTorch "
                     "float32 (x%.0f) or within %.0e of its scale" % (
                         name, FLOAT32_FACTOR, SCALE_FLOOR),
                     not bad and not missing,
                     ("missing %s; " % missing if missing else "") +
                     ("; ".join(bad[:4]) if bad else
                      "closest to its bound: %s at %.2f of it" % (
                          worst[1], worst[0])))

        # 2. Training: 3 AdamW steps.
        prog = ctx.path(name, "adamw")
        res = T.compile_model(ctx, onnx_path, prog, loss="cross-entropy",
                              optimizer="adamw", lr=1e-2, weight_decay=0.01,
                              eps=1e-6, batch=BATCH)
        if not T.require_ok(checks, "%s: otc-compile (adamw)" % name, res):
            continue
        out = ctx.path(name, "adamw.onnx")
        metrics = ctx.path(name, "metrics.jsonl")
        r = T.run(T.train_cmd(prog, data, steps=STEPS, no_shuffle=True,
                              export=out, metrics=metrics, log_every=1,
                              threads=args.threads))
        if not T.require_ok(checks, "%s: %d AdamW steps" % (name, STEPS), r):
            continue
        m = copy.deepcopy(model)
        opt = torch.optim.AdamW(m.parameters(), lr=1e-2, weight_decay=0.01,
                                eps=1e-6)
        want = []
        for _ in range(STEPS):
            opt.zero_grad()
            loss = torch.nn.functional.cross_entropy(
                forward(m, torch.float32), torch.from_numpy(labels))
            loss.backward()
            opt.step()
            want.append(float(loss))
        got = T.losses_by_step(metrics)
        got = [got[s] for s in sorted(got)]
        checks.check("%s: every AdamW loss within rel %.0e of PyTorch" % (
            name, LOSS_TOL), len(got) == STEPS and all(
                abs(a - b) <= LOSS_TOL * abs(b) for a, b in zip(got, want)),
            "otc %s torch %s" % (["%.6f" % v for v in got],
                                 ["%.6f" % v for v in want]))
        trained = T.read_onnx_weights(out)
        T.compare_weights(checks, "%s: every trained tensor" % name, trained,
                          {k: v.detach().numpy()
                           for k, v in m.named_parameters()}, WEIGHT_TOL)
    return checks.finish()


if __name__ == "__main__":
    sys.exit(main())
