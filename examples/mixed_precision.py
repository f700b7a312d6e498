"""Mixed precision: single-precision factors (half the memory, about half the time on 3D
problems) refined to double accuracy.

The factors are stored and computed in float32; the matrix, the residuals and the
solution stay in float64, and a solve refines until the backward error reaches double
precision. Where single precision cannot get there, factorize refactors in double and
says so (or raises, with fallback=False).

Run: python examples/mixed_precision.py
"""

import time
import warnings

import numpy as np
import scipy.sparse as sp

import pastixpy
from pastixpy.gallery import laplacian

A = laplacian((40, 40, 40))
b = np.random.default_rng(0).standard_normal(A.shape[0])
an = pastixpy.analyze(A)  # one analysis for both

for precision in ("double", "mixed"):
    t = time.perf_counter()
    F = pastixpy.factorize(A, analysis=an, precision=precision)
    x = F.solve(b)
    s = F.stats
    print(
        f"{precision:>6}: factors {s['factor_dtype']}, {s['factor_bytes'] / 2**20:.0f} MiB, "
        f"factorization {s['seconds']['factorize']:.2f} s, "
        f"refinement {s['refinement']} ({s['refinement_steps']} steps), "
        f"backward error {s['backward_error']:.1e}, total {time.perf_counter() - t:.2f} s"
    )

# A matrix single precision cannot handle: singular values from 1 to 1e-12.
rng = np.random.default_rng(1)
U, _ = np.linalg.qr(rng.standard_normal((100, 100)))
V, _ = np.linalg.qr(rng.standard_normal((100, 100)))
B = (U * np.logspace(0, -12, 100)) @ V.T
with warnings.catch_warnings():
    warnings.simplefilter("always", pastixpy.PastixWarning)
    G = pastixpy.factorize(sp.csc_array(B), precision="mixed")
print(f"ill-conditioned: now {G.stats['precision']} ({G.stats['precision_fallback']})")
try:
    pastixpy.factorize(sp.csc_array(B), precision=("mixed", {"fallback": False}))
except pastixpy.MixedPrecisionError as exc:
    print(f"without fallback: MixedPrecisionError: {str(exc)[:80]}...")
