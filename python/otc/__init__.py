"""OTC, the ONNX Training Compiler, from Python.

    import otc
    program = otc.compile("mlp.onnx", batch=64, loss="cross-entropy",
                          optimizer="momentum", lr=0.05)
    session = program.session()          # MPI under mpirun, else 1 process
    for x, y in loader:                  # NumPy arrays or torch tensors
        loss = session.train_step({"input": x, "labels": y})
    session.export("trained.onnx")

otc.compile runs otc-compile (--emit=lib) and loads the library it builds;
otc.load loads one built before. Program, Session and Error come from the
extension otc._otc, which wraps the runtime's C API (otc/runtime.h).
"""

import os
import shutil
import subprocess
import tempfile

from . import _config
from ._otc import Error, Program, Session, epoch_permutation, lr_schedule_value

__all__ = ["Error", "Program", "Session", "compile", "load",
           "epoch_permutation", "lr_schedule_value", "ShuffleSampler"]


def load(path):
    """Loads a program built with `otc-compile --emit=lib`."""
    return Program.load(os.path.abspath(os.fspath(path)))


def _error(message, code):
    e = Error(message)
    e.code = code
    return e


def _compiler():
    """otc-compile: $OTC_COMPILE, else the one beside this package (build
    tree or install prefix), else the first on PATH."""
    env = os.environ.get("OTC_COMPILE")
    if env:
        return env
    here = os.path.dirname(os.path.abspath(__file__))
    beside = os.path.normpath(os.path.join(here, _config.OTC_COMPILE))
    if os.access(beside, os.X_OK):
        return beside
    found = shutil.which("otc-compile")
    if found:
        return found
    raise _error("otc-compile not found (looked at %s and on PATH; set "
                 "OTC_COMPILE)" % beside, "NOT_FOUND")


def _flags(options):
    """otc-compile flags from keyword arguments: world_size=2 ->
    --world-size=2; True -> the bare flag; None and False -> nothing; a list
    or tuple repeats the flag."""
    flags = []
    for key, value in options.items():
        if value is None or value is False:
            continue
        flag = "--" + key.replace("_", "-")
        if value is True:
            flags.append(flag)
        elif isinstance(value, (list, tuple)):
            flags += ["%s=%s" % (flag, v) for v in value]
        else:
            flags.append("%s=%s" % (flag, value))
    return flags


def compile(model, output=None, *, batch=None, loss=None, optimizer=None,
            lr=None, world_size=None, sdp=None, compress=None, target=None,
            **options):
    """Compiles an ONNX model into a training program and loads it.

    model: a path, or an onnx.ModelProto. otc-compile keeps the model
    beside the program as <output>.model.onnx (a ModelProto is saved
    there), which sessions read the initial weights from and export writes
    over: move the two together. output: the shared library to write
    (default: a temporary folder that lives as long as the Program). The keywords are
    otc-compile's flags (batch=64 -> --batch=64, clip_grad_norm=1.0,
    nesterov=True, ...). Raises otc.Error with otc-compile's message when it
    fails."""
    keep = None
    if output is None:
        keep = tempfile.TemporaryDirectory(prefix="otc-")
        output = os.path.join(keep.name, "program.so")
    output = os.path.abspath(os.fspath(output))
    if hasattr(model, "SerializeToString"):  # an onnx.ModelProto
        import onnx
        path = output + ".model.onnx"
        onnx.save(model, path)
    else:
        path = os.fspath(model)
    flags = _flags(dict(batch=batch, loss=loss, optimizer=optimizer, lr=lr,
                        world_size=world_size, sdp=sdp, compress=compress,
                        target=target, **options))
    cmd = [_compiler(), path, "--emit=lib", "-o", output] + flags
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       universal_newlines=True)
    if r.returncode != 0:
        msg = (r.stderr.strip() or r.stdout.strip() or
               "otc-compile exited with %d" % r.returncode)
        raise _error(msg, "COMPILE_FAILED")
    program = load(output)
    program.compile_log = r.stderr
    program._tmpdir = keep  # removed with the Program (and its sessions)
    return program


class ShuffleSampler:
    """The command line's data order, as a torch.utils.data.DataLoader
    sampler: per epoch the driver's permutation of the N samples
    (epoch_permutation), cut into global batches of world_size * batch of
    which rank `rank` takes its slice; the last partial global batch is
    dropped. Use with DataLoader(..., batch_size=batch, sampler=...). Each
    iteration is the next epoch (or the one set_epoch sets)."""

    def __init__(self, num_samples, batch, seed=0, world_size=1, rank=0):
        if num_samples < 0 or batch < 1 or world_size < 1 or \
                not 0 <= rank < world_size:
            raise ValueError("ShuffleSampler: need num_samples >= 0, batch "
                             ">= 1 and 0 <= rank < world_size")
        self.num_samples, self.batch, self.seed = num_samples, batch, seed
        self.world_size, self.rank = world_size, rank
        self.epoch = 0

    def set_epoch(self, epoch):
        self.epoch = epoch

    def __len__(self):
        g = self.world_size * self.batch
        return (self.num_samples // g) * self.batch

    def __iter__(self):
        perm = epoch_permutation(self.num_samples, self.seed, self.epoch)
        self.epoch += 1
        g = self.world_size * self.batch
        for start in range(0, (self.num_samples // g) * g, g):
            first = start + self.rank * self.batch
            yield from perm[first:first + self.batch].tolist()
