"""The selected inverse (F.inv_diag()) against the numeric factorization it reads.

Run: env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE PYTHONPATH=. python benchmarks/selected_inverse.py
     [--runs 3] [--threads 1,2] [--problems lap2d-300,lap3d-30] [--kind llt]

Selected inversion is meant to cost the order of a factorization, not n solves. For
each problem and thread count (the BLAS limit, and ``threads=``), one process
factors A, then alternates ``F.refactorize(A)`` (the numeric phase alone, as
``stats["seconds"]["factorize"]`` times it) and ``F.inv_diag()``; the table shows
their medians and the ratio, and the time of 100 solves for scale.
"""

import argparse
import statistics
import time

import numpy as np
import scipy.sparse as sp
from threadpoolctl import threadpool_limits

import pastixpy
from pastixpy.gallery import laplacian

SIZES = {"lap2d-300": (300, 300), "lap3d-30": (30, 30, 30), "lap3d-45": (45, 45, 45)}
DEFAULT = ("lap2d-300", "lap3d-30")


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--threads", default="1,2")
    p.add_argument("--problems", default=",".join(DEFAULT))
    p.add_argument("--kind", default="llt", choices=["llt", "ldlt", "lu"])
    args = p.parse_args()
    print("| problem | n | kind | threads | factorize s | inv_diag s | ratio | 100 solves s |")
    print("|---|---:|---|---:|---:|---:|---:|---:|")
    for name in args.problems.split(","):
        A = sp.csc_array(laplacian(SIZES[name]))
        n = A.shape[0]
        for threads in (int(t) for t in args.threads.split(",")):
            with threadpool_limits(limits=threads):
                F = pastixpy.factorize(A, kind=args.kind, threads=threads)
                F.inv_diag()  # warm-up
                factor, inverse = [], []
                for _ in range(args.runs):
                    F.refactorize(A)
                    factor.append(F.stats["seconds"]["factorize"])
                    t = time.perf_counter()
                    F.inv_diag()
                    inverse.append(time.perf_counter() - t)
                B = np.ones((n, 100))
                t = time.perf_counter()
                F.solve(B)
                solves = time.perf_counter() - t
            f, s = statistics.median(factor), statistics.median(inverse)
            print(
                f"| {name} | {n:,} | {args.kind} | {threads} | {f:.3f} | {s:.3f} | "
                f"{s / f:.1f} | {solves:.3f} |"
            )


if __name__ == "__main__":
    main()
