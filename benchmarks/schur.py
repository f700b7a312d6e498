"""The Schur complement against the factorization's own time, and against S made from
``len(idx)`` solves.

Run: env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE PYTHONPATH=. python benchmarks/schur.py
     [--runs 3] [--threads 1,2] [--problems lap2d-500,lap3d-40]

Each problem is cut by its middle grid line (2D) or plane (3D) into two subdomains; the
interface is ``idx``. In one process, alternating, medians of ``--runs``:

- ``factorize(A)``: the whole factorization, the baseline;
- ``factorize(A, schur=idx)`` then ``F.schur()``: S out of the factorization;
- the same S from solves: ``factorize(A₁₁)``, ``X = A₁₁⁻¹ A₁₂`` (``len(idx)`` right-hand
  sides), ``S = A₂₂ − A₂₁ X`` — what a user without ``schur=`` would do.

The ratio columns are over ``factorize(A)``'s time (the issue asks for the Schur
complement at the cost of the factorization, not of n solves).
"""

import argparse
import statistics
import time

import numpy as np
import scipy.sparse as sp
from threadpoolctl import threadpool_limits

import pastixpy
from pastixpy.gallery import laplacian

PROBLEMS = {"lap2d-500": (500, 500), "lap3d-40": (40, 40, 40), "lap3d-30": (30, 30, 30)}


def interface(shape):
    """The unknowns of the middle grid line (2D) or plane (3D) across the last axis."""
    grid = np.arange(np.prod(shape)).reshape(shape)
    return grid[..., shape[-1] // 2].ravel()


def by_solves(A, idx, threads):
    """S from len(idx) solves with A₁₁'s factorization."""
    n = A.shape[0]
    rest = np.setdiff1d(np.arange(n), idx)
    A = sp.csc_array(A)
    F = pastixpy.factorize(A[rest][:, rest], threads=threads)
    X = F.solve(A[rest][:, idx].toarray())
    return A[idx][:, idx].toarray() - A[idx][:, rest] @ X


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--threads", default="1,2")
    p.add_argument("--problems", default="lap2d-500,lap3d-40")
    args = p.parse_args()
    print(
        "| problem | n | len(idx) | threads | factorize s | schur= + F.schur() s | ratio "
        "| S by solves s | ratio |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for name in args.problems.split(","):
        shape = PROBLEMS[name]
        A = laplacian(shape)
        idx = interface(shape)
        for threads in (int(t) for t in args.threads.split(",")):
            with threadpool_limits(limits=threads):
                times = {"full": [], "schur": [], "solves": []}
                S_ref = None
                for _ in range(args.runs):
                    t = time.perf_counter()
                    pastixpy.factorize(A, threads=threads)
                    times["full"].append(time.perf_counter() - t)
                    t = time.perf_counter()
                    S = pastixpy.factorize(A, schur=idx, threads=threads).schur()
                    times["schur"].append(time.perf_counter() - t)
                    t = time.perf_counter()
                    S_ref = by_solves(A, idx, threads)
                    times["solves"].append(time.perf_counter() - t)
                err = np.abs(S - S_ref).max() / np.abs(S_ref).max()
                assert err < 1e-10, f"S differs from the solves' by {err:.1e}"
                full, schur, solves = (statistics.median(times[k]) for k in times)
                print(
                    f"| {name} | {A.shape[0]} | {idx.size} | {threads} | {full:.3f} | "
                    f"{schur:.3f} | {schur / full:.2f} | {solves:.3f} | {solves / full:.2f} |",
                    flush=True,
                )


if __name__ == "__main__":
    main()
