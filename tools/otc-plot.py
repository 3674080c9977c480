#!/usr/bin/python3
#===- otc-plot - Training curves from a program's metrics ------------------===#
#
# usage: otc-plot METRICS.jsonl [-o curves.png] [--size WxH] [--dpi D]
#
# Draws, from the JSON lines a training program writes with --metrics, one
# panel per quantity that the file holds, against the optimizer step:
#   loss (training, per logged step; skipped steps marked), eval accuracy
#   and eval loss (per evaluation), samples/s, lr, gradient norm, bytes sent.
# Prints one line per panel ("loss: 100 points, steps 1-100, 0.31-2.30") so
# that a script can check what was drawn. Matplotlib from Debian
# (python3-matplotlib), without a display.
#
#===------------------------------------------------------------------------===#

import argparse
import json
import math
import os
import sys

PANELS = [  # (name, key, title, from evaluation lines, logarithmic y)
    ("loss", "loss", "training loss", False, False),
    ("accuracy", "accuracy", "eval accuracy", True, False),
    ("eval_loss", "loss", "eval loss", True, False),
    ("samples_per_s", "samples_per_s", "samples/s", False, False),
    ("lr", "lr", "learning rate", False, False),
    ("grad_norm", "grad_norm", "gradient norm", False, True),
    ("bytes_sent", "bytes_sent", "bytes sent per step", False, False),
]


def fail(message):
    print("otc-plot: error: %s" % message, file=sys.stderr)
    sys.exit(1)


def read(path):
    """(step lines, evaluation lines) of a metrics file."""
    try:
        f = open(path)
    except OSError as e:
        fail("cannot read '%s': %s" % (path, e.strerror))
    steps, evals = [], []
    with f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except ValueError as e:
                fail("'%s' line %d is not JSON: %s" % (path, n, e))
            if not isinstance(rec, dict) or not isinstance(
                    rec.get("step"), int):
                fail("'%s' line %d has no integer \"step\": not a metrics "
                     "file of a training program" % (path, n))
            (evals if rec.get("eval") else steps).append(rec)
    if not steps and not evals:
        fail("'%s' holds no metrics" % path)
    return steps, evals


def series(lines, key):
    pts = [(r["step"], r[key]) for r in lines
           if isinstance(r.get(key), (int, float)) and
           not isinstance(r.get(key), bool) and math.isfinite(r[key])]
    return pts


def main():
    p = argparse.ArgumentParser(
        prog="otc-plot", description="Training curves (PNG) from the "
        "metrics (JSON lines) a training program writes with --metrics.")
    p.add_argument("metrics", help="the --metrics file")
    p.add_argument("-o", "--output", default=None,
                   help="PNG to write (default: METRICS with .png)")
    p.add_argument("--size", default="1200x800",
                   help="image size in pixels, WxH (default 1200x800)")
    p.add_argument("--dpi", type=int, default=100)
    a = p.parse_args()
    try:
        w, h = (int(v) for v in a.size.lower().split("x"))
        if w < 100 or h < 100 or w > 20000 or h > 20000:
            raise ValueError
    except ValueError:
        fail("--size must be WxH with 100 <= W, H <= 20000, got '%s'" %
             a.size)
    if a.dpi < 10 or a.dpi > 1000:
        fail("--dpi must be in [10, 1000], got %d" % a.dpi)
    out = a.output or os.path.splitext(a.metrics)[0] + ".png"
    steps, evals = read(a.metrics)
    panels = []
    for name, key, title, from_eval, log in PANELS:
        pts = series(evals if from_eval else steps, key)
        if pts:
            panels.append((name, title, pts, log))
    if not panels:
        fail("'%s' holds none of %s" % (a.metrics,
                                        ", ".join(n for n, *_ in PANELS)))
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        fail("matplotlib is missing (Debian: apt-get install "
             "python3-matplotlib)")
    cols = 2 if len(panels) > 1 else 1
    rows = (len(panels) + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(w / a.dpi, h / a.dpi),
                             dpi=a.dpi, squeeze=False)
    skipped = [r["step"] for r in steps if r.get("skipped")]
    for ax, (name, title, pts, log) in zip(axes.flat, panels):
        xs, ys = zip(*pts)
        ax.plot(xs, ys, marker="o" if len(xs) < 30 else None, linewidth=1)
        if name == "loss" and skipped:
            for s in skipped:
                ax.axvline(s, color="red", alpha=0.3, linewidth=0.8)
            title += " (red: skipped steps)"
        if log and min(ys) > 0:
            ax.set_yscale("log")
        ax.set_title(title)
        ax.set_xlabel("step")
        ax.grid(True, alpha=0.3)
        print("%s: %d points, steps %d-%d, %.4g-%.4g" %
              (name, len(xs), min(xs), max(xs), min(ys), max(ys)))
    for ax in list(axes.flat)[len(panels):]:
        ax.set_visible(False)
    fig.suptitle(os.path.basename(a.metrics))
    fig.tight_layout()
    try:
        fig.savefig(out, dpi=a.dpi)
    except OSError as e:
        fail("cannot write '%s': %s" % (out, e.strerror))
    print("wrote %s (%dx%d)" % (out, w, h))


if __name__ == "__main__":
    main()
