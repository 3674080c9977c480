#===- twins_test.py - every CPU kernel has its CUDA twin --------------------===#
#
# Fails naming each kernel a CUDA program could not call:
#   1. the kernel table (dialects/exec/ExecKernels.def): a kernel whose cuda
#      column is 0 (otc-compile --target cuda refuses programs that call it);
#   2. the C APIs: an otck_X of include/otc/kernels.h without its otckd_X in
#      kernels_cuda.h, an otck_X of compress.h without its otck_cuda_X in
#      compress_cuda.h (CPU_ONLY lists the host-side entry points);
#   3. with --cuda-lib (a build with CUDA): a declared twin the library does
#      not define.
# MISSING names the kernels whose twins are still to be written; the test
# also fails when one of them has gained its twin, so the list only shrinks.
#
#===------------------------------------------------------------------------===#

import argparse
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

# Host-side entry points with no device counterpart, and why.
CPU_ONLY = {
    "get_num_threads": "the CPU library's thread count",
    "set_num_threads": "the CPU library's thread count",
    "binary_i32": "typed form of binary_int (its twin: otckd_binary_int)",
    "binary_i64": "typed form of binary_int (its twin: otckd_binary_int)",
    "compare_f32": "typed form of compare (its twin: otckd_compare)",
    "compare_i64": "typed form of compare (its twin: otckd_compare)",
    "compress_k": "the payload's size arithmetic, shared by both targets",
    "gemm_bf16_workspace_bytes": "the workspace's size arithmetic, shared",
    "compress_payload_bytes": "the payload's size arithmetic, shared",
    "compress_shard": "the reduce-scatter's shard arithmetic, shared",
    "compress_saving_f32": "the payload's size arithmetic, shared",
    "powersgd_p_floats": "PowerSGD's factor sizes, host arithmetic, shared",
    "powersgd_q_floats": "PowerSGD's factor sizes, host arithmetic, shared",
}

# Table kernels (and their C entry points) without a CUDA twin yet: none.
# A kernel may land here only with its twin under way; the list only shrinks.
MISSING = {}

KERNEL = re.compile(r'OTC_KERNEL\(\s*"([^"]+)",\s*\w+,\s*\d+,\s*\d+,\s*\d+,'
                    r'\s*([01])\s*,')


def table():
    with open(os.path.join(ROOT, "dialects", "exec", "ExecKernels.def")) as f:
        return {name: cuda == "1" for name, cuda in KERNEL.findall(f.read())}


def declared(header, prefix):
    """Names after `prefix` of the functions `header` declares (the name and
    its parenthesis on one line, after the return type or, where
    clang-format broke a long declaration, at the start of the line)."""
    with open(os.path.join(HERE, "include", "otc", header)) as f:
        text = f.read()
    return set(re.findall(r"^(?:[A-Za-z_][\w \*]*?\b)?%s(\w+)\(" % prefix,
                          text, re.M))


def defined(lib):
    out = subprocess.run(["nm", "-D", "--defined-only", lib], check=True,
                         capture_output=True, text=True).stdout
    return {line.split()[-1] for line in out.splitlines() if line.strip()}


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--cuda-lib", help="libotc_kernels_cuda.so to check")
    a = ap.parse_args()
    problems = []
    kernels = table()
    if len(kernels) < 50:
        problems.append("read only %d kernels from ExecKernels.def" %
                        len(kernels))
    missing_entries = {e for v in MISSING.values() for e in v}
    for name, cuda in sorted(kernels.items()):
        if not cuda and name not in MISSING:
            problems.append("kernel %s has no CUDA twin (its cuda column in "
                            "ExecKernels.def is 0)" % name)
        if cuda and name in MISSING:
            problems.append("kernel %s has its CUDA twin now: remove it from "
                            "MISSING" % name)
    for name in sorted(set(MISSING) - set(kernels)):
        problems.append("MISSING names %s, which the kernel table does not "
                        "have" % name)

    pairs = [("kernels.h", "otck_", "kernels_cuda.h", "otckd_"),
             ("compress.h", "otck_", "compress_cuda.h", "otck_cuda_")]
    twins = []
    for cpu_h, cpu_p, gpu_h, gpu_p in pairs:
        cpu, gpu = declared(cpu_h, cpu_p), declared(gpu_h, gpu_p)
        if not cpu:
            problems.append("found no %s functions in %s" % (cpu_p, cpu_h))
        for fn in sorted(cpu):
            if fn in CPU_ONLY:
                continue
            if fn in gpu:
                twins.append(gpu_p + fn)
                if fn in missing_entries:
                    problems.append("%s%s has its twin %s%s now: remove it "
                                    "from MISSING" % (cpu_p, fn, gpu_p, fn))
            elif fn not in missing_entries:
                problems.append("%s%s (%s) has no CUDA twin %s%s in %s" %
                                (cpu_p, fn, cpu_h, gpu_p, fn, gpu_h))
    for fn in sorted(set(CPU_ONLY) - declared("kernels.h", "otck_") -
                     declared("compress.h", "otck_")):
        problems.append("CPU_ONLY names otck_%s, which no header declares" % fn)

    if a.cuda_lib:
        have = defined(a.cuda_lib)
        for fn in twins:
            if fn not in have:
                problems.append("%s is declared but %s does not define it" %
                                (fn, os.path.basename(a.cuda_lib)))
    for p in problems:
        print("FAIL: " + p)
    print("%d kernels, %d with a CUDA twin, %d still missing (%s); %d C entry "
          "points paired%s" % (len(kernels), sum(kernels.values()),
                               len(MISSING), ", ".join(sorted(MISSING)),
                               len(twins), ", checked against the library"
                               if a.cuda_lib else ""))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
