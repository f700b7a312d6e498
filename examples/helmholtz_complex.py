"""A complex symmetric Helmholtz problem (absorbing boundary): LDLᵀ in complex128 and complex64.

Run: python examples/helmholtz_complex.py
"""

import numpy as np

import pastixpy
from pastixpy.gallery import helmholtz2d

for dtype in (np.complex128, np.complex64):
    A = helmholtz2d(200, ppw=10, dtype=dtype)
    b = np.zeros(A.shape[0], dtype=dtype)
    b[A.shape[0] // 2 + 100] = 1.0  # a point source in the middle
    F = pastixpy.factorize(A)
    u = F.solve(b)
    s = F.stats
    print(
        f"{np.dtype(dtype).name:10s} kind {F.kind}: factor {s['seconds']['factorize']:.2f} s, "
        f"{s['factor_bytes'] / 2**20:.1f} MiB, backward error "
        f"{F.stats['backward_error']:.1e}, |u|max {np.abs(u).max():.3e}"
    )
