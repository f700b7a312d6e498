"""Input checks shared by the multilevel solver, its baselines and its Krylov methods."""

import numpy as np
import scipy.sparse as sp

from ..errors import InvalidInputError
from ..matrix import canonical_csc

#: Relative size of A − Aᵀ under which a matrix counts as (complex) symmetric.
SYMMETRY_TOL = 1e-12


def check_matrix(A, argname="A"):
    """Validate a square matrix and return it as CSR in double precision.

    Parameters
    ----------
    A : scipy sparse matrix or array, or dense array_like
        Any format; float32 / complex64 values are promoted to double.
    argname : str
        Name used in error messages.

    Returns
    -------
    scipy.sparse.csr_array
        Sorted indices, duplicates summed, float64 or complex128 values.

    Raises
    ------
    InvalidInputError
        Not square, empty, not numeric, or a NaN/Inf value (its position is named).
    """
    C = canonical_csc(A, argname=argname, copy=False)
    dtype = np.complex128 if C.dtype.kind == "c" else np.float64
    R = sp.csr_array(C, dtype=dtype)
    R.sum_duplicates()
    R.sort_indices()
    return R


def check_rhs(b, n, argname="b"):
    """A right-hand side as a 1-D array of length n, finite, in at least double precision."""
    if sp.issparse(b):
        b = b.toarray()
    b = np.asarray(b)
    if b.ndim == 2 and b.shape[1] == 1:
        b = b[:, 0]
    if b.ndim != 1 or b.shape[0] != n:
        raise InvalidInputError(
            f"{argname} must be a vector of length {n} (the order of A), got shape {b.shape}"
        )
    if b.dtype.kind not in "biufc":
        raise InvalidInputError(f"{argname} has dtype {b.dtype}: give real or complex values")
    if not np.isfinite(b).all():
        raise InvalidInputError(
            f"{argname} has a NaN or Inf at position {int(np.flatnonzero(~np.isfinite(b))[0])}"
        )
    return b.astype(np.promote_types(b.dtype, np.float64), copy=False)


def is_symmetric(A, tol=SYMMETRY_TOL):
    """Whether A equals its transpose (not its conjugate transpose) up to ``tol`` relatively."""
    D = abs(A - A.T)
    scale = abs(A).max() if A.nnz else 0.0
    return D.nnz == 0 or D.max() <= tol * scale
