"""The 1-norm condition number of a factored matrix: F.condest() against the dense
κ₁ on small grids, then how κ₁ of the 2D Laplacian grows as the mesh is refined
(about h⁻², four times per halving of h) at the cost of a few solves.

Run: python examples/condition_number.py
"""

import time

import numpy as np

import pastixpy
from pastixpy.gallery import laplacian

print("grid      n        condest      dense κ₁     ratio")
for m in (10, 20, 30):
    A = laplacian((m, m))
    F = pastixpy.factorize(A)
    est = F.condest()
    D = A.toarray()
    dense = np.abs(D).sum(0).max() * np.abs(np.linalg.inv(D)).sum(0).max()
    print(f"{m:3d}²  {A.shape[0]:6d}   {est:11.4e}   {dense:11.4e}   {est / dense:.3f}")
    assert dense / 3 <= est <= dense * (1 + 1e-8)

print("\ngrid      n        condest    growth   seconds (factorize, condest)")
previous = None
for m in (50, 100, 200, 400):
    A = laplacian((m, m))
    t0 = time.perf_counter()
    F = pastixpy.factorize(A)
    t1 = time.perf_counter()
    est = F.condest()
    t2 = time.perf_counter()
    growth = "" if previous is None else f"{est / previous:6.2f}x"
    print(f"{m:3d}²  {A.shape[0]:7d}   {est:10.3e}  {growth:>7s}   {t1 - t0:.3f}, {t2 - t1:.3f}")
    previous = est
