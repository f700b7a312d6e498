"""Whole spsolve, pastixpy against scipy, on a Laplacian (default 3D 40³).

Run: env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python benchmarks/spsolve_ratio.py [SHAPE] [RUNS]

SHAPE is a grid: ``40`` (a cube, 40³), ``30x30`` (2D) or ``20x20x40``. Both solvers
get the same matrix (CSC) and b, and default options. Times are medians of RUNS
calls (default 3); scipy runs once on problems where it takes seconds (more than
10,000 unknowns: about 40 s at 40³) and RUNS times otherwise, the two solvers
alternating so that drift in the machine's load hits them alike. Small problems
measure the Python overhead: use many runs (``30x30 300``).
"""

import statistics
import sys
import time

import numpy as np
import scipy.sparse.linalg as sla

import pastixpy
from pastixpy.gallery import laplacian


def seconds(f):
    t = time.perf_counter()
    out = f()
    return time.perf_counter() - t, out


spec = sys.argv[1] if len(sys.argv) > 1 else "40"
runs = int(sys.argv[2]) if len(sys.argv) > 2 else 3
shape = tuple(int(s) for s in spec.split("x"))
shape = shape * 3 if len(shape) == 1 else shape
A = laplacian(shape).tocsc()
b = np.ones(A.shape[0])
ours, theirs = [], []
scipy_runs = 1 if A.shape[0] > 10_000 else runs
for i in range(runs):
    t, x = seconds(lambda: pastixpy.spsolve(A, b))
    ours.append(t)
    if i < scipy_runs:
        t, y = seconds(lambda: sla.spsolve(A, b))
        theirs.append(t)
t_ours, t_scipy = statistics.median(ours), statistics.median(theirs)
print(
    f"{'x'.join(map(str, shape))} Laplacian ({A.shape[0]} unknowns) spsolve: pastixpy median "
    f"{t_ours * 1e3:.2f} ms, scipy {t_scipy * 1e3:.2f} ms; pastixpy takes "
    f"{t_ours / t_scipy:.2f}x scipy's time ({t_scipy / t_ours:.1f}x faster); "
    f"max |x - x_scipy| {np.abs(x - y).max():.1e}"
)
