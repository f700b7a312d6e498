"""METIS's split nested dissection (ordering option ``parallel``) against one METIS run.

Run: PYTHONPATH=. python benchmarks/ordering_split.py [lap3d-40 lap3d-60 elast3d convdiff]
     [--runs 5] [--threads 2]

For each problem, ``factorize(A, threads=…)`` alternates ``ordering=("auto",
{"parallel": False})`` and ``("auto", {"parallel": True})``; the table shows the
medians of the ordering's seconds (``stats["ordering_seconds"]``), the analysis's and
the numeric phase's (``stats["seconds"]``), the whole call's, and each one's flops and
factor entries. The split pays only with a second core free: note the load.
"""

import argparse
import os
import statistics
import time

import pastixpy
from pastixpy.gallery import PROBLEMS, laplacian

BUILD = {
    "lap3d-40": lambda: laplacian((40, 40, 40)),
    "lap3d-60": lambda: laplacian((60, 60, 60)),
    "elast3d": lambda: PROBLEMS["elast3d"]((37, 37, 37)),
    "convdiff": lambda: PROBLEMS["convdiff3d"](60),
}
SETTINGS = {"metis": False, "split": True}


def measure(A, parallel, threads):
    """One factorization: ordering, analysis, numeric and total seconds, flops, entries."""
    t = time.perf_counter()
    F = pastixpy.factorize(A, threads=threads, ordering=("auto", {"parallel": parallel}))
    total = time.perf_counter() - t
    s = F.stats
    order = sum(s["ordering_seconds"].values())
    seconds = (order, s["seconds"]["analysis"], s["seconds"]["factorize"], total)
    return seconds, s["flops"], s["factor_entries"]


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("problems", nargs="*", default=list(BUILD), choices=list(BUILD))
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--threads", type=int, default=2)
    args = p.parse_args()
    pastixpy.factorize(laplacian((8, 8)), threads=args.threads)  # first calls done
    print(f"load average {os.getloadavg()[0]:.1f}, threads={args.threads}")
    print("problem    ordering  order s  analysis s  numeric s  total s  flops      entries")
    for name in args.problems:
        A = BUILD[name]()
        rows = {label: [] for label in SETTINGS}
        for _ in range(args.runs):
            for label, parallel in SETTINGS.items():
                rows[label].append(measure(A, parallel, args.threads))
        for label, runs in rows.items():
            med = [statistics.median(r[0][i] for r in runs) for i in range(4)]
            print(
                f"{name:10s} {label:8s} {med[0]:7.3f}  {med[1]:10.3f}  {med[2]:9.3f}  "
                f"{med[3]:7.3f}  {runs[0][1]:.3e}  {runs[0][2]:,}"
            )
    print(f"load average {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
