#===- otc_program.py - Run a compiled inference program in-process --------===#
#
# A program built with `otc-compile --inference --emit=lib` is a shared
# library with one C entry table (runtime/include/otc/program_abi.h). This
# module loads it with ctypes, fills its arena (parameters from the ONNX
# file, inputs by name) and runs eval_step, so that tests can read any value
# the model outputs without the runtime or MPI. Used by the conformance
# runner and by the float64 references of the integration tests.
#
#===------------------------------------------------------------------------===#

import ctypes
import json

import numpy as np

# The manifest's dtype names (the compiler's dialects/graph/ElementTypes.h).
# bf16 has no numpy type: its view holds the bits, as uint16.
DTYPES = {
    "f32": np.float32,
    "f64": np.float64,
    "f16": np.float16,
    "bf16": np.uint16,
    "i64": np.int64,
    "i32": np.int32,
    "i16": np.int16,
    "i8": np.int8,
    "u64": np.uint64,
    "u32": np.uint32,
    "u16": np.uint16,
    "u8": np.uint8,
    "bool": np.bool_,
}


class StepContext(ctypes.Structure):
    """otc_step_context_t: a CPU inference step needs none of the
    collectives, so they stay NULL."""
    _fields_ = [
        ("step", ctypes.c_int64),
        ("seed", ctypes.c_uint64),
        ("comm", ctypes.c_void_p),
        ("all_reduce_mean_f32", ctypes.c_void_p),
        ("compressed_all_reduce_mean_f32", ctypes.c_void_p),
        ("group_all_reduce_mean_f32", ctypes.c_void_p),
        ("broadcast_f32", ctypes.c_void_p),
        ("group_compressed_all_reduce_mean_f32", ctypes.c_void_p),
        ("agree_finite", ctypes.c_void_p),
        ("wait_collectives", ctypes.c_void_p),
        ("stream", ctypes.c_void_p),
        ("hyper", ctypes.c_void_p),
        ("profiler", ctypes.c_void_p),
        ("profile", ctypes.c_void_p),
    ]


STEP_FN = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p,
                           ctypes.POINTER(StepContext))


class Entry(ctypes.Structure):
    """otc_program_entry_t."""


Entry._fields_ = [
    ("abi_version", ctypes.c_uint32),
    ("manifest_json", ctypes.c_char_p),
    ("arena_bytes", ctypes.c_uint64),
    ("train_step", ctypes.c_void_p),
    ("eval_step", STEP_FN),
    ("num_variants", ctypes.c_int32),
    ("variants", ctypes.POINTER(ctypes.POINTER(Entry))),
    ("rank_variant", ctypes.POINTER(ctypes.c_int32)),
    ("calibrate_step", ctypes.c_void_p),
    ("device", ctypes.c_int32),
]


def load_entry(lib_path):
    """(the loaded library, its Entry)."""
    lib = ctypes.CDLL(lib_path, mode=ctypes.RTLD_LOCAL)
    lib.otc_program_entry.restype = ctypes.POINTER(Entry)
    return lib, lib.otc_program_entry().contents


class Program:
    """One loaded program and its 64-byte aligned arena."""

    def __init__(self, lib_path):
        self.lib, self.entry = load_entry(lib_path)
        self.manifest = json.loads(self.entry.manifest_json.decode())
        size = self.entry.arena_bytes
        raw = np.zeros(size + 64, dtype=np.uint8)
        base = (-raw.ctypes.data) % 64
        self.arena = raw[base:base + size]
        self._raw = raw  # keeps the buffer alive
        self.inputs = {i["name"]: i for i in self.manifest.get("inputs", [])}
        self.outputs = {o["name"]: o for o in self.manifest.get("outputs", [])}

    def view(self, spec):
        """The arena bytes a manifest entry (offset, shape, dtype) names."""
        dt = np.dtype(DTYPES[spec["dtype"]])
        n = int(np.prod(spec["shape"], dtype=np.int64))
        off = spec["offset"]
        return self.arena[off:off + n * dt.itemsize].view(dt).reshape(
            spec["shape"])

    def load_params(self, initializers):
        """initializers: name -> array, e.g. from the source ONNX file."""
        for p in self.manifest.get("params", []):
            self.view(p)[...] = initializers[p["name"]]

    def eval_step(self, seed=0):
        ctx = StepContext(1, seed)
        return self.entry.eval_step(self.arena.ctypes.data, ctypes.byref(ctx))

    def output(self, name):
        return self.view(self.outputs[name]).copy()
