"""Whole spsolve, pastixpy against scipy, on a 3D Laplacian (default 40³).

Run: env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python benchmarks/spsolve_ratio.py [SIZE] [RUNS]
pastixpy's time is the median of RUNS; scipy runs once (it takes about 40 s at 40³).
"""

import sys
import time

import numpy as np
import scipy.sparse.linalg as sla

import pastixpy
from pastixpy.gallery import laplacian

size = int(sys.argv[1]) if len(sys.argv) > 1 else 40
runs = int(sys.argv[2]) if len(sys.argv) > 2 else 3
A = laplacian((size,) * 3).tocsc()
b = np.ones(A.shape[0])
times = []
for _ in range(runs):
    t = time.perf_counter()
    x = pastixpy.spsolve(A, b)
    times.append(time.perf_counter() - t)
t = time.perf_counter()
y = sla.spsolve(A, b)
t_scipy = time.perf_counter() - t
t_ours = float(np.median(times))
print(
    f"{size}³ spsolve: pastixpy median {t_ours:.2f} s, scipy {t_scipy:.1f} s, "
    f"ratio {t_scipy / t_ours:.1f}x, max |x - x_scipy| {np.abs(x - y).max():.1e}"
)
