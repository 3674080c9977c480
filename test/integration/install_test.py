#!/usr/bin/python3
#===- install_test.py - An installed OTC works without its trees ----------===#
#
# `cmake --install` into a temporary prefix P, then, in a mount namespace
# where the source and build trees are hidden (empty folders mounted over
# them):
#   - P/bin/otc-compile compiles the example MLP into an executable and a
#     library; the executable trains and exports an ONNX model that
#     onnx.checker accepts;
#   - examples/embed builds against P with find_package(OTC) (embed-c,
#     embed-cpp) and with pkg-config (embed.c), and each trains the
#     library: loss halves, checkpoint resume repeats the losses, export;
#   - the Python package installed in P compiles, trains and exports.
# Outside the namespace: no file under P names the source or build tree.
# Relocation (build tree's otc-compile): a program moved with its model copy
# to another folder, its source model deleted, trains and exports the same
# weights as before the move, with external data too; without the copy it
# stops with a message naming it; exporting over the copy is refused.
# Skipped (exit 77) where mount namespaces are refused (not root).
#
#===------------------------------------------------------------------------===#

import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import otc_testlib as T  # noqa: E402

SKIP = 77

# Runs in the namespace: mounts an empty folder over each tree, then runs
# the rest of its arguments.
HIDE = r'''
set -e
for d in "$@"; do
  [ "$d" = -- ] && break
  mount -t tmpfs none "$d"
  shift
done
shift
exec "$@"
'''

# What runs with the trees hidden; $1 = P, $2 = the work folder.
INSIDE = r'''
set -e
P="$1"; W="$2"; cd "$W"
echo "source tree hidden: $(ls "$OTC_SOURCE" | wc -l) entries"
"$P/bin/otc-compile" mlp.onnx -o train --batch 32 --loss cross-entropy \
  --label labels --optimizer momentum --lr 0.05 --seed 1
./train --data input=data/input.npy --data labels=data/labels.npy \
  --steps 20 --export trained.onnx --seed 1
"$P/bin/otc-compile" mlp.onnx --emit=lib -o libmlp.so --batch 32 \
  --loss cross-entropy --label labels --optimizer momentum --lr 0.05
cmake -S embed -B embed-build -G Ninja -DCMAKE_PREFIX_PATH="$P" \
  -DCMAKE_BUILD_TYPE=Release > embed-configure.log
cmake --build embed-build > embed-build.log
mkdir -p out-c out-cpp out-pc
embed-build/embed-c libmlp.so out-c
embed-build/embed-cpp libmlp.so out-cpp
export PKG_CONFIG_PATH="$(dirname "$(find "$P" -name otc.pc)")"
cc -std=c11 -O2 embed/embed.c -o embed-pc $(pkg-config --cflags --libs otc) -lm
./embed-pc libmlp.so out-pc
PYTHONPATH="$P/$OTC_PYTHON_DIR" /usr/bin/python3 - <<'PY'
import numpy as np
import otc
prog = otc.compile("mlp.onnx", batch=16, loss="cross-entropy",
                   optimizer="sgd", lr=0.1, label="labels")
import os
assert prog.model_path.endswith(".so.model.onnx") and \
    os.path.exists(prog.model_path), prog.model_path
s = prog.session()
x = np.load("data/input.npy")[:16]
y = np.load("data/labels.npy")[:16]
first = s.train_step({"input": x, "labels": y})
for _ in range(30):
    last = s.train_step({"input": x, "labels": y})
s.export("py.onnx")
print("python: loss %.4f -> %.4f" % (first, last))
assert last < first
PY
'''


def main():
    args, ctx = T.parse_args("install",
                             "An installed OTC works without its trees.")
    checks = T.Checks("install")
    if os.geteuid() != 0 or subprocess.run(
            ["unshare", "-m", "true"], capture_output=True).returncode != 0:
        print("SKIP: mount namespaces need root (unshare -m refused)")
        sys.exit(SKIP)
    source = os.path.realpath(T.SOURCE_DIR)
    build = os.path.realpath(ctx.build_dir)
    # Outside both trees, so the namespace does not hide it.
    top = tempfile.mkdtemp(prefix="otc-install-", dir="/tmp")
    try:
        run_checks(checks, ctx, source, build, top)
    finally:
        shutil.rmtree(top, True)
    checks.finish()


def run_checks(checks, ctx, source, build, top):
    prefix = os.path.join(top, "prefix")
    r = T.run(["cmake", "--install", build, "--prefix", prefix], timeout=300)
    if not T.require_ok(checks, "cmake --install into a temporary prefix", r):
        return
    names = sorted(os.path.relpath(os.path.join(d, f), prefix)
                   for d, _, fs in os.walk(prefix) for f in fs)
    want = ["bin/otc-compile", "bin/otc-opt", "bin/otc-translate",
            "bin/otc-plot", "include/otc/runtime.h", "include/otc/kernels.h"]
    want_any = ["libotc_runtime.so", "libotc_kernels.so", "OTCConfig.cmake",
                "OTCTargets.cmake", "otc.pc", "_otc"]
    missing = [w for w in want if w not in names] + \
        [w for w in want_any if not any(os.path.basename(n).startswith(w)
                                        for n in names)]
    checks.check("the install holds the tools, libraries, headers, CMake "
                 "and pkg-config files and the Python package", not missing,
                 "missing: %s" % missing if missing else
                 "%d files" % len(names))
    internal = [n for n in names if n.endswith(".a")]
    checks.check("no compiler-internal static library is installed",
                 not internal, ", ".join(internal))
    naming = []
    for n in names:
        with open(os.path.join(prefix, n), "rb") as f:
            data = f.read()
        if source.encode() in data or build.encode() in data:
            naming.append(n)
    checks.check("no installed file names the source or build tree",
                 not naming, ", ".join(naming[:5]))

    work = os.path.join(top, "work")
    os.makedirs(work)
    T.gen_mlp(os.path.join(work, "mlp.onnx"), seed=2, hidden=(32,))
    T.make_classification(os.path.join(work, "data"), 256, seed=3)
    shutil.copytree(os.path.join(source, "examples", "embed"),
                    os.path.join(work, "embed"))
    pydir = [os.path.dirname(os.path.dirname(os.path.join(prefix, n)))
             for n in names if os.path.basename(n).startswith("_otc")]
    hide = os.path.join(top, "hide.sh")
    inside = os.path.join(top, "inside.sh")
    with open(hide, "w") as f:
        f.write(HIDE)
    with open(inside, "w") as f:
        f.write(INSIDE)
    trees = [source] + ([] if build.startswith(source + "/") else [build])
    env = {"OTC_SOURCE": source,
           "OTC_PYTHON_DIR": os.path.relpath(pydir[0], prefix) if pydir
           else "missing"}
    r = T.run(["unshare", "-m", "--propagation", "private", "bash", hide] +
              trees + ["--", "bash", inside, prefix, work], timeout=600,
              env=env, cwd=top)
    out = r.output
    print(out[-4000:])
    checks.check("the trees were hidden", "source tree hidden: 0 entries"
                 in out, "")
    checks.check("installed otc-compile, embed-c, embed-cpp, pkg-config and "
                 "Python all ran with the trees hidden", r.ok,
                 "exit %s" % r.returncode)
    checks.check("embed-c (find_package): learned, resumed, exported",
                 out.count("the same 5 losses") == 2 and
                 os.path.exists(os.path.join(work, "out-c", "trained.onnx")),
                 "")
    checks.check("embed-c (pkg-config) exported",
                 os.path.exists(os.path.join(work, "out-pc", "trained.onnx")),
                 "")
    checks.check("embed-cpp: held-out accuracy > 0.9, restored checkpoint "
                 "gives the same logits",
                 "the same step, lr and logits" in out and
                 os.path.exists(os.path.join(work, "out-cpp",
                                             "trained-cpp.onnx")), "")
    checks.check("the Python package from the install trained",
                 "python: loss" in out, "")
    import onnx
    for f in ["trained.onnx", "out-c/trained.onnx", "py.onnx"]:
        p = os.path.join(work, f)
        ok = os.path.exists(p)
        if ok:
            try:
                onnx.checker.check_model(onnx.load(p))
            except Exception as e:  # noqa: BLE001
                ok = False
                print(e)
        checks.check("%s passes onnx.checker" % f, ok, "")
    relocation(checks, ctx, top)


def relocation(checks, ctx, top):
    """A program and its model copy moved elsewhere export what they did."""
    import numpy as np
    import onnx
    from onnx import external_data_helper
    here = os.path.join(top, "reloc-a")
    os.makedirs(here)
    model = os.path.join(top, "reloc-model", "mlp.onnx")
    os.makedirs(os.path.dirname(model))
    T.gen_mlp(model, seed=4, hidden=(16,))
    # External data: the copy must carry it.
    m = onnx.load(model)
    external_data_helper.convert_model_to_external_data(
        m, all_tensors_to_one_file=True, location="mlp.weights",
        size_threshold=0)
    onnx.save(m, model)
    data, _, _ = T.make_classification(os.path.join(top, "reloc-data"), 128,
                                       seed=5)
    prog = os.path.join(here, "train")
    r = T.compile_model(ctx, model, prog, batch=16, loss="cross-entropy",
                        label="labels", optimizer="adam", lr=1e-3, seed=2)
    if not T.require_ok(checks, "otc-compile a model with external data", r):
        return
    checks.check("the program keeps its model copy beside it (with the "
                 "external data)",
                 os.path.exists(prog + ".model.onnx") and
                 os.path.exists(prog + ".model.onnx.data"),
                 str(sorted(os.listdir(here))))

    def train(program, out):
        return T.run(T.train_cmd(program, data, steps=10, seed=2,
                                 export=out), timeout=120)

    before = os.path.join(top, "before.onnx")
    r = train(prog, before)
    T.require_ok(checks, "train and export where it was compiled", r)
    r = train(prog, prog + ".model.onnx")
    checks.check("export over the program's own model copy is refused",
                 not r.ok and not r.crashed and
                 "source model, which every run" in r.output and
                 "samples/s" not in r.output, r.output[-200:])
    moved = os.path.join(top, "elsewhere", "deeper")
    os.makedirs(os.path.dirname(moved))
    shutil.move(here, moved)
    shutil.rmtree(os.path.dirname(model))
    after = os.path.join(top, "after.onnx")
    r = train(os.path.join(moved, "train"), after)
    T.require_ok(checks, "the moved program trains and exports, its source "
                 "model deleted", r)
    if os.path.exists(before) and os.path.exists(after):
        a, b = T.read_onnx_weights(before), T.read_onnx_weights(after)
        same = a.keys() == b.keys() and all(
            np.array_equal(a[k], b[k]) for k in a)
        checks.check("the moved program's export equals the unmoved one's",
                     same, "%d tensors" % len(a))
    os.remove(os.path.join(moved, "train.model.onnx"))
    r = train(os.path.join(moved, "train"), after)
    checks.check("without its model copy the program stops, naming it",
                 not r.ok and not r.crashed and
                 os.path.join(moved, "train.model.onnx") in r.output and
                 "beside the program" in r.output,
                 r.output.strip().splitlines()[-1] if r.output.strip()
                 else "no output")


if __name__ == "__main__":
    main()
