"""Refactorization + one solve against CHOLMOD's: new values on an analysed pattern.

Run: env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE PYTHONPATH=. python benchmarks/refactorize.py
     [--runs 7] [--threads 1,2] [--problems lap3d-40,lap2d-500]

A time-stepping or Newton loop factors matrices of one pattern again and again: the
analysis is paid once, and each step costs a numeric factorization and a solve. Both
solvers analyse A once; then, in one process, they alternate
``F.refactorize(A_k); F.solve(b)`` (pastixpy) and ``f.cholesky_inplace(A_k); f(b)``
(CHOLMOD, scikit-sparse, supernodal), A_k = A + k·I (the same pattern, new values),
and the table shows medians and pastixpy's over CHOLMOD's, per thread count (the BLAS
limit for both, and pastixpy's ``threads=``).
"""

import argparse
import statistics
import time

import numpy as np
import scipy.sparse as sp
from threadpoolctl import threadpool_limits

import pastixpy
from pastixpy.gallery import PROBLEMS

SIZES = {"lap3d-40": ("lap3d", 40), "lap2d-500": ("lap2d", 500)}


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=7)
    p.add_argument("--threads", default="1,2")
    p.add_argument("--problems", default=",".join(SIZES))
    args = p.parse_args()
    from sksparse.cholmod import analyze

    print("| problem | n | threads | pastixpy s | CHOLMOD s | ratio | pastixpy: factor, solve s |")
    print("|---|---:|---:|---:|---:|---:|---|")
    for name in args.problems.split(","):
        key, size = SIZES[name]
        A = sp.csc_matrix(PROBLEMS[key](size))
        n = A.shape[0]
        b = np.ones(n)
        eye = sp.identity(n, format="csc")
        for threads in (int(t) for t in args.threads.split(",")):
            with threadpool_limits(limits=threads):
                F = pastixpy.factorize(A, threads=threads)
                f = analyze(A)
                f.cholesky_inplace(A)
                ours, theirs, parts = [], [], []
                for k in range(args.runs + 1):
                    Ak = (A + (k + 1) * 1e-3 * eye).tocsc()
                    t = time.perf_counter()
                    F.refactorize(Ak)
                    t1 = time.perf_counter()
                    x = F.solve(b)
                    t2 = time.perf_counter()
                    f.cholesky_inplace(Ak)
                    y = f(b)
                    t3 = time.perf_counter()
                    assert np.allclose(x, y, rtol=1e-8)
                    if k:  # the first round warms both up
                        ours.append(t2 - t)
                        theirs.append(t3 - t2)
                        parts.append((t1 - t, t2 - t1))
            mine, chol = statistics.median(ours), statistics.median(theirs)
            fac = statistics.median(p[0] for p in parts)
            sol = statistics.median(p[1] for p in parts)
            print(
                f"| {name} | {n:,} | {threads} | {mine:.3f} | {chol:.3f} | {mine / chol:.2f} "
                f"| {fac:.3f}, {sol:.3f} |"
            )


if __name__ == "__main__":
    main()
