"""The small paths' flop budget (``pastixpy.simplicial.MAX_FLOPS``) against the pipeline.

Usage::

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 \\
        PYTHONPATH=. python benchmarks/small_budget.py [--budgets 5e6,1e7,1.5e7] \\
        [--problems lap2d-70,watt_2,cd12,...] [--runs 15]

For each problem, ``spsolve(A, b)`` and ``factorize(A).solve(b)`` run under each budget
in turn, call by call in one process (so that drift in the machine's load hits them
alike), with scipy's ``spsolve`` beside them; the table gives the medians in ms and the
path each budget sent the call to (``simplicial`` or ``supernodal``). Below a matrix's
flops the budget sends it to the pipeline, above to the simplicial kernels: the
crossover is where the two columns meet. Problems: ``lap2d-N`` (2D Laplacian N²),
``helmN`` (2D Helmholtz N², 10 points per wavelength), ``cdN`` (3D convection–diffusion
N³), or a matrix of ``$PASTIXPY_MATRICES`` (default ``../shared/matrices``) by name.
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
from pastixpy.gallery import convection_diffusion3d, helmholtz2d, laplacian

MATRICES = Path(
    os.environ.get("PASTIXPY_MATRICES")
    or Path(__file__).resolve().parents[1].parent / "shared" / "matrices"
)
DEFAULT_PROBLEMS = "lap2d-55,lap2d-70,helm60,helm70,cd11,cd12,watt_2,cryg2500,bcsstk13"


def load(name):
    """The problem ``name`` as a CSC matrix (see the module docstring)."""
    if name.startswith("lap2d-"):
        k = int(name[6:])
        return sp.csc_matrix(laplacian((k, k)))
    if name.startswith("helm"):
        return sp.csc_matrix(helmholtz2d(int(name[4:]), ppw=10))
    if name.startswith("cd"):
        return sp.csc_matrix(convection_diffusion3d(int(name[2:])))
    return sp.csc_matrix(scipy.io.mmread(MATRICES / f"{name}.mtx"))


def measure(A, budgets, runs):
    """Medians (ms) per (entry point, budget), scipy's, and the paths taken."""
    b = np.ones(A.shape[0])
    times, paths = {}, {}
    default = simplicial.MAX_FLOPS
    try:
        for _ in range(runs):
            for budget in budgets:
                simplicial.MAX_FLOPS = budget
                t0 = time.perf_counter()
                pastixpy.spsolve(A, b)
                t1 = time.perf_counter()
                F = pastixpy.factorize(A)
                F.solve(b)
                t2 = time.perf_counter()
                times.setdefault(("spsolve", budget), []).append(t1 - t0)
                times.setdefault(("factorize", budget), []).append(t2 - t1)
                paths[budget] = F.stats["path"]
            t0 = time.perf_counter()
            sla.spsolve(A, b)
            times.setdefault(("scipy", None), []).append(time.perf_counter() - t0)
    finally:
        simplicial.MAX_FLOPS = default
    return {k: 1e3 * statistics.median(v) for k, v in times.items()}, paths


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--budgets", default="5e6,1e7,1.5e7")
    p.add_argument("--problems", default=DEFAULT_PROBLEMS)
    p.add_argument("--runs", type=int, default=15)
    args = p.parse_args()
    budgets = [float(x) for x in args.budgets.split(",")]
    warnings.simplefilter("ignore")
    head = " | ".join(f"spsolve {b:.3g} | factorize {b:.3g} (path)" for b in budgets)
    print(f"| problem | n | {head} | scipy |")
    print("|---|---:|" + "---:|---:|" * len(budgets) + "---:|")
    for name in args.problems.split(","):
        A = load(name)
        med, paths = measure(A, budgets, args.runs)
        cells = " | ".join(
            f"{med[('spsolve', b)]:.2f} | {med[('factorize', b)]:.2f} ({paths[b]})" for b in budgets
        )
        print(f"| {name} | {A.shape[0]:,} | {cells} | {med[('scipy', None)]:.2f} |", flush=True)


if __name__ == "__main__":
    main()
