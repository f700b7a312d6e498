"""Threads benchmark: numeric factorization seconds at 1 thread and at N threads.

Usage::

    python benchmarks/threads.py [--quick] [--runs N] [--threads 1 2] [--json PATH]

Analyses each problem once (``pastixpy.analyze``; LDLᵀ and LU take the analysis
of a first factorization, made after their 2x2 pairing or row matching), then
times
``pastixpy.factorize(A, analysis=an, threads=t)`` and reports the median of
``--runs`` values of ``F.stats["seconds"]["factorize"]`` per thread count (and
the fastest run, less disturbed on a shared machine), runs of the thread
counts interleaved so that drift in the machine's load hits them alike. CPU
seconds of the whole ``factorize`` call (user + system, all threads) are
reported too: idle workers spin, so they show how much of the machine the
process had rather than how busy the workers were. Problems: 3D
Laplacians 50³ and 60³ (LLᵀ), a 3D saddle point (LDLᵀ) and 3D
convection-diffusion (LU); ``--quick`` uses smaller ones.
"""

import argparse
import json
import resource
import statistics
import warnings

import pastixpy
from pastixpy.gallery import convection_diffusion3d, laplacian, saddle_point


def problems(quick):
    if quick:
        return [
            ("laplacian 30³", "llt", laplacian((30, 30, 30))),
            ("saddle_point 16³", "ldlt", saddle_point((16, 16, 16))),
            ("convection_diffusion 30³", "lu", convection_diffusion3d(30)),
        ]
    return [
        ("laplacian 50³", "llt", laplacian((50, 50, 50))),
        ("laplacian 60³", "llt", laplacian((60, 60, 60))),
        ("saddle_point 24³", "ldlt", saddle_point((24, 24, 24))),
        ("convection_diffusion 40³", "lu", convection_diffusion3d(40)),
    ]


def cpu_seconds():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true")
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    p.add_argument("--json", metavar="PATH")
    args = p.parse_args(argv)
    rows = []
    print(
        f"{'problem':26s} {'kind':5s} {'threads':>7s} {'median s':>8s} {'min s':>7s} "
        f"{'cpu s':>7s} {'speedup':>7s}"
    )
    for name, kind, A in problems(args.quick):
        if kind == "llt":
            an = pastixpy.analyze(A)
        else:
            an = pastixpy.factorize(A, kind=kind, threads=1).analysis
        wall = {t: [] for t in args.threads}
        cpu = {t: [] for t in args.threads}
        for _ in range(args.runs):
            for t in args.threads:
                c0 = cpu_seconds()
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    F = pastixpy.factorize(A, kind=kind, analysis=an, threads=t)
                cpu[t].append(cpu_seconds() - c0)
                wall[t].append(F.stats["seconds"]["factorize"])
        base = statistics.median(wall[args.threads[0]])
        for t in args.threads:
            sec = statistics.median(wall[t])
            rows.append(
                {
                    "problem": name,
                    "kind": kind,
                    "threads": t,
                    "seconds": sec,
                    "min_seconds": min(wall[t]),
                    "all_seconds": wall[t],
                    "cpu_seconds": statistics.median(cpu[t]),
                    "speedup": base / sec,
                }
            )
            r = rows[-1]
            print(
                f"{name:26s} {kind:5s} {t:7d} {sec:8.2f} {r['min_seconds']:7.2f} "
                f"{r['cpu_seconds']:7.2f} "
                f"{r['speedup']:7.2f}",
                flush=True,
            )
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
