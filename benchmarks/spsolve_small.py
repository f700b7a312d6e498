"""spsolve against scipy's on small and moderate problems, where fixed costs decide.

Run: env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE PYTHONPATH=. python benchmarks/spsolve_small.py
     [--runs 7] [--only NAME,...] [--profile NAME]

The problems: every matrix of ../shared/matrices that scipy solves (singular ones
left out), the 2D Laplacian 30×30, and 2D FEM-like problems of 10⁴–10⁵ unknowns
(Laplacians 100² and 250², Q1-like 9-point Helmholtz 150², a Stokes-like saddle point
70², convection-diffusion from the registry). In one process, the two solvers
alternate call by call on the same matrix (as given, CSC) and b, after one warm-up
call each; the table shows medians and pastixpy's time over scipy's (``spsolve``, and
``factorize(A).solve(b)``, a handle kept: small unsymmetric matrices take the same
simplicial LU there, ``stats["path"]``), the path spsolve
took (``simplicial`` and its strategy, see pastixpy/simplicial.py, or ``pipeline``) and,
for the pipeline, where its time went (``stats["seconds"]`` of a factorization).
``--profile NAME`` prints a cProfile of pastixpy's calls on one problem.
"""

import argparse
import os
import statistics
import time
import warnings
from pathlib import Path

import numpy as np
import scipy.io
import scipy.sparse as sp
import scipy.sparse.linalg as sla

import pastixpy
from pastixpy import simplicial
from pastixpy.gallery import PROBLEMS
from pastixpy.matrix import canonical_csc

#: The shared matrices: ``$PASTIXPY_MATRICES``, or ``../shared/matrices`` beside the checkout.
MATRICES = Path(
    os.environ.get("PASTIXPY_MATRICES")
    or Path(__file__).resolve().parents[1].parent / "shared" / "matrices"
)
#: Singular on purpose: scipy's answer is NaN or an error, no timing to compare.
SINGULAR = {"zenios", "mbeacxc", "neumann", "cryg2500", "reorientation_1"}


def problems():
    out = {}
    for path in sorted(MATRICES.glob("*.mtx")):
        if path.stem not in SINGULAR:
            out[path.stem] = lambda path=path: sp.csc_array(scipy.io.mmread(path))
    out["lap2d-30"] = lambda: PROBLEMS["lap2d"](30)
    out["lap2d-100"] = lambda: PROBLEMS["lap2d"](100)
    out["lap2d-250"] = lambda: PROBLEMS["lap2d"](250)
    out["helmholtz2d-150"] = lambda: PROBLEMS["helmholtz2d"](150)
    out["saddle2d-70"] = lambda: PROBLEMS["saddle2d"](70)
    out["convdiff3d-25"] = lambda: PROBLEMS["convdiff3d"](25)
    return out


def timed(f):
    t = time.perf_counter()
    out = f()
    return time.perf_counter() - t, out


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=7)
    p.add_argument("--only", help="comma-separated problem names")
    p.add_argument("--profile", help="a cProfile of pastixpy's calls on this problem")
    args = p.parse_args()
    table = problems()
    names = args.only.split(",") if args.only else list(table)
    if args.profile:
        import cProfile
        import pstats

        A = table[args.profile]()
        b = np.ones(A.shape[0], dtype=A.dtype)
        pastixpy.spsolve(A, b)
        prof = cProfile.Profile()
        prof.enable()
        for _ in range(args.runs):
            pastixpy.spsolve(A, b)
        prof.disable()
        pstats.Stats(prof).sort_stats("cumulative").print_stats(40)
        return
    print(
        "| problem | n | nnz | pastixpy ms | scipy ms | ratio | factorize().solve ms | ratio "
        "| path | factorize's path | the pipeline's time (ms) |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---|---|---|")
    ratios, handle_ratios = [], []
    for name in names:
        A = table[name]()
        b = np.ones(A.shape[0], dtype=A.dtype)
        ours, theirs, handle = [], [], []
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            pastixpy.spsolve(A, b)
            sla.spsolve(A, b)
            pastixpy.factorize(A).solve(b)
            for _ in range(args.runs):
                t, _ = timed(lambda A=A, b=b: pastixpy.spsolve(A, b))
                ours.append(t)
                t, _ = timed(lambda A=A, b=b: sla.spsolve(A, b))
                theirs.append(t)
                t, _ = timed(lambda A=A, b=b: pastixpy.factorize(A).solve(b))
                handle.append(t)
            path, where = _path(A, b)
            handle_path = pastixpy.factorize(A).stats["path"]
        mine, scipys = statistics.median(ours), statistics.median(theirs)
        kept = statistics.median(handle)
        ratios.append(mine / scipys)
        handle_ratios.append(kept / scipys)
        print(
            f"| {name} | {A.shape[0]:,} | {A.nnz:,} | {mine * 1e3:.2f} | {scipys * 1e3:.2f} | "
            f"{mine / scipys:.2f} | {kept * 1e3:.2f} | {kept / scipys:.2f} | {path} | "
            f"{handle_path} | {where} |"
        )
    print(
        f"\nspsolve: worst ratio {max(ratios):.2f}, median {statistics.median(ratios):.2f}; "
        f"factorize().solve: worst {max(handle_ratios):.2f}, "
        f"median {statistics.median(handle_ratios):.2f}"
    )


def _path(A, b):
    """The path spsolve takes on A (and, for the pipeline, its seconds by step)."""
    C = canonical_csc(A)
    if simplicial.applies(C, pastixpy.options.Options(), None):
        F = simplicial.factor(C)
        if F is not None and simplicial.solve_small(C, b) is not None:
            return f"simplicial, {F.strategy}, {F.flops:.1e} flops", ""
    F = pastixpy.factorize(A)
    F.solve(b)
    where = ", ".join(f"{k} {v * 1e3:.1f}" for k, v in F.stats["seconds"].items())
    return f"pipeline, {F.kind}", where


if __name__ == "__main__":
    main()
