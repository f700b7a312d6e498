"""Solve a 3D Poisson problem three ways: spsolve, factorize + solve, factorized.

Run: python examples/solve_poisson.py
"""

import time

import numpy as np
import scipy.sparse.linalg as sla

import pastixpy
from pastixpy.gallery import laplacian

A = laplacian((30, 30, 30))
b = np.ones(A.shape[0])

t = time.perf_counter()
x = pastixpy.spsolve(A, b)  # drop-in for scipy.sparse.linalg.spsolve
t_ours = time.perf_counter() - t
t = time.perf_counter()
x_ref = sla.spsolve(A.tocsc(), b)
t_scipy = time.perf_counter() - t
print(
    f"spsolve: {t_ours:.2f} s (scipy {t_scipy:.2f} s), |x - x_scipy| = "
    f"{np.abs(x - x_ref).max():.1e}"
)

F = pastixpy.factorize(A)  # keep the factors: many right-hand sides, transposes
B = np.random.default_rng(0).standard_normal((A.shape[0], 8))
X = F.solve(B)
s = F.stats
print(
    f"kind {F.kind}: nnz(L) {s['nnz_L']:,}, {s['flops']:.2e} flops, factor "
    f"{s['seconds']['factorize']:.2f} s, 8 solves {s['seconds']['solve']:.3f} s, "
    f"backward error {s['backward_error']:.1e}"
)

solve = pastixpy.factorized(A)  # drop-in for scipy.sparse.linalg.factorized
print("factorized:", np.allclose(solve(b), x))
