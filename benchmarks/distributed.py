"""The distributed mode against one process: measured runs, and a model up to 64 nodes.

Usage::

    python benchmarks/distributed.py [--problems lap3d-60,elast3d] [--configs 1x1,1x2,2x1,4x1]
        [--runs 3] [--json out.json]
    python benchmarks/distributed.py --model [--problems lap3d-60,lap3d-120,lap3d-200]
        [--nodes 1,2,4,8,16,32,64]

Measured (each run a fresh ``mpiexec -n R`` job, R ranks x T threads, configurations
interleaved, medians of ``--runs``; ``RxT`` names them): the numeric factorization's
seconds (the slowest rank's), factorization + one solve, the backward error, the
largest rank's share of the factor entries and its peak memory against the one-process
run's, and the bytes the ranks sent. Ratios are medians of per-run ratios to ``1x1``.

Model (``--model``, from the analysis alone): for each number of nodes P, the mapping
(proportional mapping) and each rank's schedule give the factor entries of the
largest rank, its fan-in panels, and the bytes sent; the time is a simulation of the
schedules: each rank factors its cblks in order at ``--gflops`` (default 30) of the
mapping's work estimate (``cblk_work``: the seconds are nominal, the speed-ups are what
compares with measured runs), a cblk waiting for the
fan-in sums of other ranks, each message taking latency + bytes / bandwidth
(``--latency``, ``--bandwidth``: 2 µs and 10 GB/s, an InfiniBand-class network;
``--shared`` takes shared-memory values to check the model against the measured runs).

OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE are unset for the runs (as run.py does).
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import scipy.sparse as sp
from problems import Problem, all_problems, select
from run import SLOW_ENV, median, reexec_without_slow_env

HERE = Path(__file__).resolve().parent
MARK = "@@RESULT@@"
MiB = 2**20

_WORKER = r"""
import json, sys, time
import numpy as np, scipy.sparse as sp
import pastixpy
comm = None
if int(sys.argv[3]) > 1:
    from mpi4py import MPI
    comm = MPI.COMM_WORLD
rank = 0 if comm is None else comm.Get_rank()
A = sp.load_npz(sys.argv[1]) if rank == 0 else None
b = None
if rank == 0:
    b = np.random.default_rng(1).standard_normal(A.shape[0]).astype(A.dtype)
    pastixpy.factorize(sp.identity(8, format="csc", dtype=A.dtype))  # first-call costs
threads = int(sys.argv[2])
if comm is not None:
    comm.Barrier()
t0 = time.perf_counter()
F = pastixpy.factorize(A, threads=threads, comm=comm, kind=sys.argv[4])
t1 = time.perf_counter()
x = F.solve(b)
t2 = time.perf_counter()
s = F.stats
local = {k: s.get(k) for k in ("factor_entries_local", "peak_memory_bytes", "sent_bytes",
                               "factor_seconds")}
if comm is None:
    with open(f"/proc/self/status") as fh:
        hwm = next(int(l.split()[1]) * 1024 for l in fh if l.startswith("VmHWM"))
    local = {"factor_entries_local": s["factor_entries"], "peak_memory_bytes": hwm,
             "sent_bytes": 0, "factor_seconds": s["seconds"]["factorize"]}
ranks = [local] if comm is None else comm.gather(local)
if rank == 0:
    r = A @ x - b
    berr = float(np.abs(r).max() / (abs(A).sum(axis=1).max() * np.abs(x).max()
                                     + np.abs(b).max()))
    print("@@RESULT@@", json.dumps({
        "factorize": t1 - t0, "solve": t2 - t1, "numeric": s["seconds"]["factorize"],
        "analysis": s["seconds"]["analysis"], "berr": berr, "entries": s["factor_entries"],
        "flops": s["flops"], "ranks": ranks}))
"""


def _mpiexec():
    beside = Path(sys.executable).parent / "mpiexec"
    return str(beside) if beside.exists() else "mpiexec"


def run_config(matrix, ranks, threads, kind, timeout):
    """One fresh run of ``ranks`` x ``threads``; its result dict (or an error)."""
    env = {k: v for k, v in os.environ.items() if k not in SLOW_ENV}
    env.update(OMP_NUM_THREADS=str(threads), OPENBLAS_NUM_THREADS=str(threads))
    cmd = [sys.executable, "-c", _WORKER, str(matrix), str(threads), str(ranks), kind]
    if ranks > 1:
        cmd = [_mpiexec(), "-n", str(ranks), *cmd]
    try:
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"error": f"timeout over {timeout} s"}
    for line in proc.stdout.splitlines():
        if line.startswith(MARK):
            return json.loads(line[len(MARK) :])
    tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no output"]
    return {"error": f"exit {proc.returncode}: {tail[0][:200]}"}


def measured(problems, configs, runs, timeout):
    """The measured table: one row per problem and configuration."""
    rows = []
    print(
        "| problem | ranks x threads | numeric s | / 1x1 | factor + solve s | / 1x1 "
        "| largest share of entries | largest peak MiB | / 1x1 peak | sent MiB | backward err |\n"
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
        flush=True,
    )
    with tempfile.TemporaryDirectory() as work:
        for problem in problems:
            path = Path(work) / f"{problem.name}.npz"
            A = sp.csc_matrix(problem.build())
            sp.save_npz(path, A)
            kind = "llt" if problem.structure == "spd" else "auto"
            raw = {c: [] for c in configs}
            for _ in range(runs):
                for c in configs:
                    r, t = (int(v) for v in c.split("x"))
                    raw[c].append(run_config(path, r, t, kind, timeout))
            ref = raw[configs[0]]
            for c in configs:
                ok = [x for x in raw[c] if "error" not in x]
                if not ok:
                    print(f"| {problem.label} | {c} | {raw[c][0]['error']} |")
                    continue
                pairs = [
                    (x, y)
                    for x, y in zip(raw[c], ref, strict=True)
                    if "error" not in x and "error" not in y
                ]

                def ratio(key, pairs=pairs):
                    return median([key(x) / key(y) for x, y in pairs]) if pairs else None

                def largest(x, field):
                    return max(q[field] or 0 for q in x["ranks"])

                rec = {
                    "problem": problem.name,
                    "config": c,
                    "numeric_s": median([x["numeric"] for x in ok]),
                    "numeric_ratio": ratio(lambda x: x["numeric"]),
                    "total_s": median([x["factorize"] + x["solve"] for x in ok]),
                    "total_ratio": ratio(lambda x: x["factorize"] + x["solve"]),
                    "share": median(
                        [largest(x, "factor_entries_local") / x["entries"] for x in ok]
                    ),
                    "peak_mib": median([largest(x, "peak_memory_bytes") for x in ok]) / MiB,
                    "peak_ratio": ratio(lambda x: largest(x, "peak_memory_bytes")),
                    "sent_mib": median([sum(q["sent_bytes"] for q in x["ranks"]) for x in ok])
                    / MiB,
                    "berr": max(x["berr"] for x in ok),
                    "gflops": median([x["flops"] / x["numeric"] / 1e9 for x in ok]),
                }
                rows.append(rec)
                print(
                    f"| {problem.label} | {c} | {rec['numeric_s']:.2f} "
                    f"| {_f(rec['numeric_ratio'])} | {rec['total_s']:.2f} "
                    f"| {_f(rec['total_ratio'])} | {rec['share']:.3f} | {rec['peak_mib']:.0f} "
                    f"| {_f(rec['peak_ratio'])} | {rec['sent_mib']:.1f} | {rec['berr']:.1e} |",
                    flush=True,
                )
    return rows


def _f(x):
    return "—" if x is None else f"{x:.2f}"


# ---------------------------------------------------------------------- the model


def simulate(layout, owner, gflops, latency, bandwidth, itemsize=8):
    """Modelled seconds of a distributed factorization (see the module docstring): each
    rank runs its cblks in order, a cblk starting once its rank is free and the fan-in
    sums it waits for have arrived."""
    from pastixpy.distributed import Schedule
    from pastixpy.distributed.mapping import cblk_work

    work = cblk_work(layout)
    ranks = int(owner.max()) + 1
    schedules = [Schedule.build(layout, owner, r) for r in range(ranks)]
    # When each rank's fan-in sums to each cblk leave (the end of the step that
    # completes them), and when each cblk is done.
    sums_ready = {}
    rank_free = np.zeros(ranks)
    done = np.zeros(layout.ncblk)
    pending = [list(s.steps) for s in schedules]
    progressed = True
    while progressed:
        progressed = False
        for r, steps in enumerate(pending):
            while steps:
                step = steps[0]
                waits = [(k, src) for k, srcs in step.receive.items() for src in srcs]
                if any((k, src) not in sums_ready for k, src in waits):
                    break
                start = max([rank_free[r]] + [sums_ready[w] for w in waits])
                t = start
                for k in step.cblks:
                    t += work[k] / (gflops * 1e9)
                    done[k] = t
                for f in step.send:
                    size = layout.panel_sizes[f] * itemsize
                    sums_ready[(f, r)] = t + latency + size / bandwidth
                rank_free[r] = t
                steps.pop(0)
                progressed = True
    if any(pending):
        raise RuntimeError("the schedules wait for each other (a bug in the schedule)")
    return float(rank_free.max())


def model(problems, nodes, gflops, latency, bandwidth):
    """The model's table: per problem and number of nodes."""
    import pastixpy
    from pastixpy.distributed import Schedule, proportional_mapping
    from pastixpy.numeric import PanelLayout

    rows = []
    print(
        "| problem | nodes | largest share of entries | largest rank's entries (M) "
        "| its fan-in panels (M entries, at most) | sent (M entries, all ranks) "
        "| modelled s | speed-up |\n|---|---:|---:|---:|---:|---:|---:|---:|",
        flush=True,
    )
    for problem in problems:
        A = problem.build()
        an = pastixpy.analyze(A)
        layout = PanelLayout.from_symbol(an.symbol)
        one = None
        for p in nodes:
            owner = proportional_mapping(layout, p)
            sizes = layout.panel_sizes
            entries = np.bincount(owner, weights=sizes, minlength=p)
            fanin = np.zeros(p)
            for r in range(p):
                s = Schedule.build(layout, owner, r)
                fanin[r] = sizes[s.fanin].sum()
            big = int(np.argmax(entries))
            sent = float(fanin.sum())
            seconds = simulate(layout, owner, gflops, latency, bandwidth)
            one = one or seconds
            rec = {
                "problem": problem.name,
                "nodes": p,
                "share": float(entries.max() / entries.sum()),
                "entries_m": float(entries[big] / 1e6),
                "fanin_m": float(fanin[big] / 1e6),
                "sent_m": sent / 1e6,
                "seconds": seconds,
                "speedup": one / seconds,
            }
            rows.append(rec)
            print(
                f"| {problem.label} | {p} | {rec['share']:.3f} | {rec['entries_m']:.1f} "
                f"| {rec['fanin_m']:.1f} | {rec['sent_m']:.1f} | {seconds:.2f} "
                f"| {rec['speedup']:.1f} |",
                flush=True,
            )
    return rows


def _problems(names):
    """run.py's problems by name, or the gallery's as NAME-SIZE (``lap3d-120``)."""
    from pastixpy.gallery import PROBLEMS

    found, _ = all_problems()
    known = {p.name for p in found}
    chosen = []
    for name in names:
        base, _, size = name.rpartition("-")
        if name not in known and base in PROBLEMS and size.isdigit():
            p = PROBLEMS[base]
            chosen.append(
                Problem(
                    name,
                    f"{p.description.split(',')[0]} {size}",
                    p.structure,
                    lambda p=p, size=size: p(int(size)),
                    3 if "3d" in base else 2,
                )
            )
        else:
            chosen += select(found, [name])
    return chosen


def main():
    reexec_without_slow_env()
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--problems", default="lap3d-60,elast3d")
    ap.add_argument("--configs", default="1x1,1x2,2x1,4x1")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--timeout", type=int, default=1800)
    ap.add_argument("--model", action="store_true")
    ap.add_argument("--nodes", default="1,2,4,8,16,32,64")
    ap.add_argument("--gflops", type=float, default=30.0, help="one rank's rate (model)")
    ap.add_argument("--latency", type=float, default=2e-6)
    ap.add_argument("--bandwidth", type=float, default=10e9)
    ap.add_argument("--shared", action="store_true", help="shared-memory network (model)")
    ap.add_argument("--json")
    args = ap.parse_args()
    problems = _problems([p for p in args.problems.split(",") if p])
    if args.model:
        latency, bandwidth = (2e-5, 5e9) if args.shared else (args.latency, args.bandwidth)
        nodes = [int(p) for p in args.nodes.split(",")]
        rows = model(problems, nodes, args.gflops, latency, bandwidth)
    else:
        rows = measured(
            problems, [c.strip() for c in args.configs.split(",")], args.runs, args.timeout
        )
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    sys.exit(main())
