#!/usr/bin/python3
#===- faults_test.py - What ranks do when a peer or the disk fails --------===#
#
# Faults injected into running programs (an MLP, the CPU build), each bounded
# in time; every case prints a row of the fault table (what the ranks
# printed, seconds from the fault to the job's exit, whether the newest
# checkpoint still resumes):
#   stall       SIGSTOP rank 1 of 2 (--collective-timeout 2): rank 0 names
#               the collective, the step and rank 1 as stopped; exit != 0.
#   kill        SIGKILL rank 1 of 2 under a plain mpirun: the job ends,
#               non-zero, within seconds; the newest checkpoint resumes.
#   kill-peer   the same under `mpirun --enable-recovery`, where the launcher
#               leaves the survivors running: rank 0 reports that rank 1
#               exited in the collective it waited in, and ends the job
#               (that mpirun exits 0 whatever its ranks return).
#   ckpt-kill   SIGKILL at random moments of a run that checkpoints every
#               step: after each kill the newest checkpoint resumes, and the
#               resumed run's weights equal bit for bit the straight run's.
#   disk-full   the checkpoint folder on a small tmpfs that fills up: a clear
#               error naming the file, exit != 0, the last checkpoint that
#               was written still resumes (skipped, saying why, where tmpfs
#               cannot be mounted).
# NaN on one rank is integration.nonfinite; a corrupt newest checkpoint with
# --resume is bad_input's corrupt-checkpoint.
#
#   /usr/bin/python3 test/integration/faults_test.py --build-dir build
#
#===------------------------------------------------------------------------===#

import os
import random
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import otc_testlib as T  # noqa: E402

import numpy as np  # noqa: E402

BATCH, FEATURES, CLASSES, N = 16, 64, 10, 4096
TABLE = []


def start(cmd):
    """cmd in the background, as T.run would start it."""
    env = dict(os.environ)
    env.update(T.MPI_ENV)
    env["TMPDIR"] = T.private_tmpdir()
    print("$ " + T.cmdline(cmd) + " &", flush=True)
    return subprocess.Popen([str(c) for c in cmd], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, env=env,
                            start_new_session=True)


def finish(p, timeout):
    """(output, exit code or None when it had to be killed, seconds)."""
    t0 = time.time()
    try:
        out, _ = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, _ = p.communicate()
        return out.decode("utf-8", "replace"), None, time.time() - t0
    return out.decode("utf-8", "replace"), p.returncode, time.time() - t0


def rank_pid(launcher, rank, timeout=30):
    """The pid of `rank` among the processes under `launcher` (mpirun)."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        for pid in os.listdir("/proc"):
            if not pid.isdigit():
                continue
            try:
                with open("/proc/%s/stat" % pid) as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
                if ppid != launcher:
                    continue
                with open("/proc/%s/environ" % pid, "rb") as f:
                    env = f.read().split(b"\0")
            except (OSError, IndexError, ValueError):
                continue
            if b"OMPI_COMM_WORLD_RANK=%d" % rank in env:
                return int(pid)
        time.sleep(0.05)
    return None


def wait_for_steps(metrics, steps, timeout=60):
    """Until the metrics file holds `steps` lines (training is under way)."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            with open(metrics) as f:
                if sum(1 for _ in f) >= steps:
                    return True
        except OSError:
            pass
        time.sleep(0.05)
    return False


def row(case, printed, seconds, intact):
    TABLE.append((case, printed, seconds, intact))


def newest_resumes(ctx, program, data, ckdir, ranks=1):
    """Whether --resume from `ckdir` takes one more step."""
    names = [f for f in os.listdir(ckdir) if f.endswith(".otcc")]
    if not names:
        return False, "no checkpoint"
    newest = max(int(f.split("-")[1].split(".")[0]) for f in names)
    r = T.run(T.train_cmd(program, data, ranks=ranks, steps=newest + 1,
                          checkpoint_dir=ckdir, resume=True, quiet=True),
              timeout=120)
    return r.ok, "ckpt-%d resumes" % newest if r.ok else r.describe(800)


def case_stall(ctx, checks, program, data):
    metrics = ctx.path("stall", "m.jsonl")
    p = start(T.train_cmd(program, data, ranks=2, steps=10 ** 7,
                          collective_timeout=2, metrics=metrics, log_every=1))
    pid = rank_pid(p.pid, 1)
    started = pid is not None and wait_for_steps(metrics, 5)
    if not started:
        out, rc, _ = finish(p, 5)
        checks.check("stall: the run started", False, out[-1500:])
        return
    os.kill(pid, signal.SIGSTOP)
    t0 = time.time()
    try:
        out, rc, _ = finish(p, 60)
    finally:
        for s in (signal.SIGCONT, signal.SIGKILL):
            try:
                os.kill(pid, s)
            except ProcessLookupError:
                pass
    seconds = time.time() - t0
    line = next((l for l in out.splitlines() if "collective timeout" in l), "")
    checks.check("stall: exits non-zero (exit %s after %.1f s)" % (rc, seconds),
                 rc not in (0, None), "" if rc else out[-1500:])
    checks.check("stall: rank 0 names the collective, its step and rank 1 "
                 "as stopped", "[rank 0] error:" in line and
                 (" in step " in line or " after step " in line) and
                 "did not arrive: rank 1 (pid %d on " % pid in line and
                 ": stopped)" in line, line or out[-1500:])
    checks.check("stall: within the timeout plus the probe's grace",
                 seconds < 20, "%.1f s" % seconds)
    row("stall rank 1 (SIGSTOP), --collective-timeout 2",
        line.split("error: ", 1)[-1], seconds, "n/a")


def case_kill(ctx, checks, program, data, recovery):
    tag = "kill-peer" if recovery else "kill"
    ckdir = ctx.dir(tag, "ck")
    metrics = ctx.path(tag, "m.jsonl")
    cmd = T.train_cmd(program, data, ranks=2, steps=10 ** 7,
                      checkpoint_dir=ckdir, checkpoint_every=20,
                      metrics=metrics, log_every=1)
    if recovery:
        cmd = cmd[:1] + ["--enable-recovery"] + cmd[1:]
    p = start(cmd)
    pid = rank_pid(p.pid, 1)
    if pid is None or not wait_for_steps(metrics, 45):
        out, rc, _ = finish(p, 5)
        checks.check("%s: the run started" % tag, False, out[-1500:])
        return
    os.kill(pid, signal.SIGKILL)
    t0 = time.time()
    out, rc, _ = finish(p, 60)
    seconds = time.time() - t0
    # Open MPI 4.1's mpirun --enable-recovery exits 0 whatever its ranks
    # return: there only the job's end and rank 0's report are checked.
    checks.check("%s: the job ends%s (exit %s after %.1f s)" %
                 (tag, "" if recovery else ", non-zero", rc, seconds),
                 rc is not None and (recovery or rc != 0),
                 "" if rc is not None else out[-1500:])
    checks.check("%s: within 15 s" % tag, seconds < 15, "%.1f s" % seconds)
    ours = next((l for l in out.splitlines() if "exited while rank" in l), "")
    if recovery:
        checks.check("kill-peer: rank 0 reports that rank 1 exited in the "
                     "collective it waited in",
                     "[rank 0] error:" in ours and
                     "rank 1 (pid %d on " % pid in ours and
                     "exited while rank 0 waited in collective " in ours,
                     ours or out[-1500:])
        printed = ours.split("error: ", 1)[-1]
    else:
        launcher = "exited on signal 9" in out
        checks.check("kill: the job names the killed rank (the launcher or "
                     "rank 0)", launcher or "rank 1 (pid %d" % pid in ours,
                     ours or out[-1500:])
        printed = ours.split("error: ", 1)[-1] if ours else \
            "mpirun: process rank 1 exited on signal 9"
    ok, how = newest_resumes(ctx, program, data, ckdir, ranks=2)
    checks.check("%s: the newest checkpoint resumes" % tag, ok, how)
    row("SIGKILL rank 1" + (" (mpirun --enable-recovery)" if recovery else ""),
        printed, seconds, how if ok else "NO")


def case_checkpoint_kill(ctx, checks, program, data, kills=6):
    ckdir = ctx.dir("ckpt-kill", "ck")
    rng = random.Random(7)
    final = None
    resumed_ok = in_write = 0
    for i in range(kills):
        metrics = ctx.path("ckpt-kill", "m%d.jsonl" % i)
        p = start(T.train_cmd(program, data, steps=10 ** 7,
                              checkpoint_dir=ckdir, checkpoint_every=1,
                              resume=True, metrics=metrics, log_every=1,
                              quiet=True))
        # Once training is under way (not while the program starts up).
        wait_for_steps(metrics, 3)
        time.sleep(rng.uniform(0.0, 0.3))
        os.killpg(p.pid, signal.SIGKILL)
        finish(p, 10)
        in_write += any(f.endswith(".tmp") for f in os.listdir(ckdir))
        ok, how = newest_resumes(ctx, program, data, ckdir)
        resumed_ok += ok
        if not ok:
            print("after kill %d: %s" % (i + 1, how), flush=True)
    checks.check("ckpt-kill: after each of %d kills the newest checkpoint "
                 "resumes" % kills, resumed_ok == kills,
                 "%d of %d" % (resumed_ok, kills))
    # Most of such a run is checkpoint writes (with their fsync).
    checks.check("ckpt-kill: kills landed inside a checkpoint write (a "
                 "temporary was left)", in_write > 0,
                 "%d of %d" % (in_write, kills))
    temporaries = [f for f in os.listdir(ckdir) if f.endswith(".tmp")]
    names = [f for f in os.listdir(ckdir) if f.endswith(".otcc")]
    newest = max(int(f.split("-")[1].split(".")[0]) for f in names)
    final = newest + 5
    a, b = ctx.path("ckpt-kill", "resumed.onnx"), ctx.path("ckpt-kill",
                                                           "straight.onnx")
    r1 = T.run(T.train_cmd(program, data, steps=final, checkpoint_dir=ckdir,
                           resume=True, export=a, quiet=True), timeout=120)
    r2 = T.run(T.train_cmd(program, data, steps=final, export=b, quiet=True),
               timeout=120)
    if T.require_ok(checks, "ckpt-kill: resume to step %d" % final, r1) and \
            T.require_ok(checks, "ckpt-kill: the straight run", r2):
        wa, wb = T.read_onnx_weights(a), T.read_onnx_weights(b)
        same = wa.keys() == wb.keys() and all(
            np.array_equal(wa[k], wb[k]) for k in wa)
        checks.check("ckpt-kill: the resumed weights equal the straight "
                     "run's bit for bit (step %d)" % final, same)
    checks.check("ckpt-kill: no temporary left after the resumed runs",
                 not [f for f in os.listdir(ckdir) if f.endswith(".tmp")],
                 str(temporaries))
    row("SIGKILL x%d at random moments, a checkpoint every step" % kills,
        "(nothing: SIGKILL; %d of %d inside a write)" % (in_write, kills),
        0.0, "%d of %d resumed; resumed == straight at step %d" %
        (resumed_ok, kills, final))


def case_disk_full(ctx, checks, program, data):
    # Room for one checkpoint and a half: the second write runs out.
    probe = ctx.dir("disk-full", "probe")
    r = T.run(T.train_cmd(program, data, steps=1, checkpoint_dir=probe,
                          quiet=True), timeout=120)
    if not T.require_ok(checks, "disk-full: a checkpoint's size", r):
        return
    kib = os.path.getsize(os.path.join(probe, "ckpt-1.otcc")) * 3 // 2048
    mnt = ctx.dir("disk-full", "mnt")
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=%dk" % kib,
                        "tmpfs", mnt], capture_output=True, text=True)
    if r.returncode != 0:
        print("SKIP disk-full: cannot mount a tmpfs here (%s)" %
              (r.stderr.strip() or "mount exit %d" % r.returncode))
        row("checkpoint folder on a full tmpfs", "skipped: no tmpfs mount",
            0.0, "n/a")
        return
    try:
        t0 = time.time()
        r = T.run(T.train_cmd(program, data, steps=200, checkpoint_dir=mnt,
                              checkpoint_every=10, quiet=True), timeout=120)
        seconds = time.time() - t0
        line = next((l for l in r.output.splitlines() if "error:" in l), "")
        checks.check("disk-full: exits non-zero with an error naming the "
                     "checkpoint and the full disk", r.returncode not in
                     (0, None) and "No space left on device" in line and
                     "ckpt-" in line, r.describe(1500))
        checks.check("disk-full: no temporary left behind",
                     not [f for f in os.listdir(mnt) if f.endswith(".tmp")],
                     str(os.listdir(mnt)))
        # Room for one more step's checkpoint: free the disk first.
        ok, how = False, "no checkpoint"
        names = [f for f in os.listdir(mnt) if f.endswith(".otcc")]
        if names:
            copy = ctx.dir("disk-full", "copy")
            for f in names:
                with open(os.path.join(mnt, f), "rb") as src, \
                        open(os.path.join(copy, f), "wb") as dst:
                    dst.write(src.read())
            ok, how = newest_resumes(ctx, program, data, copy)
        checks.check("disk-full: the last checkpoint written resumes", ok, how)
        row("checkpoint folder on a %d KiB tmpfs" % kib,
            line.split("error: ", 1)[-1], seconds, how if ok else "NO")
    finally:
        subprocess.run(["umount", mnt])


def main():
    args, ctx = T.parse_args("faults", "Faults injected into running "
                             "programs: stalled, killed ranks, kills during "
                             "checkpoint writes, a full disk.")
    checks = T.Checks("faults")
    onnx_path = ctx.path("mlp.onnx")
    T.gen_mlp(onnx_path, seed=3, hidden=(64, 32), features=FEATURES,
              classes=CLASSES)
    rng = np.random.RandomState(3)
    data = {"input": ctx.path("x.npy"), "labels": ctx.path("y.npy")}
    np.save(data["input"], rng.standard_normal((N, FEATURES)).astype(
        np.float32))
    np.save(data["labels"], rng.randint(0, CLASSES, N).astype(np.int64))
    two, one = ctx.path("train-2"), ctx.path("train-1")
    r = T.compile_many(ctx, [
        (onnx_path, two, dict(batch=BATCH, world_size=2, label="labels",
                              optimizer="momentum", lr=0.01)),
        (onnx_path, one, dict(batch=BATCH, label="labels",
                              optimizer="momentum", lr=0.01))])
    if not (T.require_ok(checks, "otc-compile (2 ranks)", r[0]) and
            T.require_ok(checks, "otc-compile (1 rank)", r[1])):
        checks.finish()
    case_stall(ctx, checks, two, data)
    case_kill(ctx, checks, two, data, recovery=False)
    case_kill(ctx, checks, two, data, recovery=True)
    case_checkpoint_kill(ctx, checks, one, data)
    case_disk_full(ctx, checks, one, data)
    print("\nfault table:")
    for case, printed, seconds, intact in TABLE:
        print("| %s | %s | %.1f s | %s |" % (case, printed, seconds, intact))
    checks.finish()


if __name__ == "__main__":
    main()
