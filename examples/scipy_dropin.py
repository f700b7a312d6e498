"""pastixpy in place of scipy.sparse.linalg: spsolve, factorized, a preconditioner for
gmres, and scipy's behaviour on a singular matrix (see docs/scipy.md).

Run: python examples/scipy_dropin.py
"""

import time
import warnings

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as sla

import pastixpy
from pastixpy.gallery import convection_diffusion3d, laplacian


def timed(f, runs=20):
    f()  # first call apart: imports and caches
    t = time.perf_counter()
    for _ in range(runs):
        out = f()
    return out, (time.perf_counter() - t) / runs


# 1. spsolve: same arguments, same result, on a small problem (the simplicial path)
#    and a larger one (the supernodal pipeline).
for A in (laplacian((30, 30)), laplacian((20, 20, 20))):
    A = sp.csc_array(A)
    b = np.ones(A.shape[0])
    x, ours = timed(lambda A=A, b=b: pastixpy.spsolve(A, b, permc_spec="COLAMD"), 5)
    y, theirs = timed(lambda A=A, b=b: sla.spsolve(A, b, permc_spec="COLAMD"), 5)
    print(
        f"n = {A.shape[0]:6d}: pastixpy {ours * 1e3:7.2f} ms, scipy {theirs * 1e3:7.2f} ms, "
        f"max |x - y| = {np.abs(x - y).max():.1e}"
    )

# 2. factorized: a solve function, factored once.
solve = pastixpy.factorized(laplacian((50, 50)))
print("factorized:", solve(np.ones(2500))[:3])

# 3. A factorization of a nearby matrix as gmres's preconditioner (M=F).
A = sp.csc_array(convection_diffusion3d(16))
F = pastixpy.factorize(A + 0.05 * sp.eye_array(A.shape[0], format="csc"))
b = np.ones(A.shape[0])
iterations = []
x, info = sla.gmres(A, b, M=F, rtol=1e-10, callback=iterations.append)
print(f"gmres with M=F: info {info}, {len(iterations)} iterations")

# 4. A singular matrix: scipy's warning and NaNs from spsolve, a RuntimeError from
#    factorized.
S = sp.csc_array(np.array([[1.0, 2.0], [2.0, 4.0]]))
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    print("singular spsolve:", pastixpy.spsolve(S, [1.0, 3.0]), caught[0].category.__name__)
try:
    pastixpy.factorized(S)(np.array([1.0, 3.0]))
except RuntimeError as exc:
    print("singular factorized:", type(exc).__name__, "-", str(exc)[:70], "...")
