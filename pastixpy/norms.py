"""Norms that neither overflow nor underflow.

``np.linalg.norm`` of a vector is ``sqrt(x·x)``: the sum of squares overflows to inf for
entries above about 1e154 and underflows to 0 below 1e-154 (1e19 and 1e-19 in single
precision), where the norm itself is far inside the range. A Krylov method that
measures ‖b‖ that way stops at once, "converged", with x = 0. BLAS's ``nrm2`` scales as
it sums (LAPACK's algorithm), so every norm the package takes of a vector goes
through :func:`norm2`.
"""

import numpy as np
from scipy.linalg.blas import get_blas_funcs

__all__ = ["norm2", "column_norms"]

_NRM2 = {}


def norm2(v):
    """‖v‖₂ of an array's entries taken as one vector, without over- or underflow.

    Examples
    --------
    >>> norm2(np.full(4, 1e200)), norm2(np.full(4, 1e-200))
    (2e+200, 2e-200)
    """
    a = np.ravel(v)
    if a.size == 0:
        return 0.0
    if a.dtype.char not in "fdFD":
        a = a.astype(np.float64)
    nrm2 = _NRM2.get(a.dtype.char)
    if nrm2 is None:
        nrm2 = _NRM2[a.dtype.char] = get_blas_funcs("nrm2", (a,))
    return float(nrm2(a))


def column_norms(V):
    """‖V[:, j]‖₂ of each column of a 2-D array, without over- or underflow (each column
    is divided by its largest magnitude before its squares are summed).

    Examples
    --------
    >>> column_norms(np.array([[3e200, 3e-200], [4e200, 4e-200]]))
    array([5.e+200, 5.e-200])
    """
    V = np.asarray(V)
    if V.shape[0] == 0:
        return np.zeros(V.shape[1])
    top = np.abs(V).max(axis=0)
    safe = np.where(top > 0, top, 1.0)
    return top * np.linalg.norm(V / safe, axis=0)
