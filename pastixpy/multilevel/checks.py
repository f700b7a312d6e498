"""Input checks shared by the multilevel solver and its baselines."""

import numpy as np
import scipy.sparse as sp

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


def is_symmetric(A, tol=SYMMETRY_TOL):
    """Whether A equals its transpose (not its conjugate transpose) up to ``tol`` relatively."""
    D = abs(A - A.T)
    scale = abs(A).max() if A.nnz else 0.0
    return D.nnz == 0 or D.max() <= tol * scale
