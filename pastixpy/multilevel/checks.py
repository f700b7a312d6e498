"""Input checks shared by the multilevel solver and its baselines."""

import numpy as np
import scipy.sparse as sp

from ..matrix import canonical_csc
from ..preprocess import check_structural_rank

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


def structurally_nonsingular(R):
    """``R`` (CSR, from :func:`check_matrix`) once its structure is known to allow a
    nonzero determinant.

    An empty row or column makes every level's matrix singular, whatever the coarsening:
    the :class:`~pastixpy.errors.SingularMatrixError` names the column here rather than
    a coarse level's numbering later.
    """
    rows = np.repeat(np.arange(R.shape[0]), np.diff(R.indptr))
    if np.count_nonzero(rows == R.indices) < R.shape[0]:  # a full diagonal is a matching
        check_structural_rank(sp.csc_array(R))
    return R


def is_symmetric(A, tol=SYMMETRY_TOL):
    """Whether A equals its transpose (not its conjugate transpose) up to ``tol`` relatively
    (or :data:`SINGLE_ROUNDOFF` units of roundoff, for a single-precision A)."""
    D = abs(A - A.T)
    scale = abs(A).max() if A.nnz else 0.0
    return D.nnz == 0 or D.max() <= symmetry_tol(A.dtype, tol) * scale


#: Units of roundoff of a single-precision matrix's asymmetry that still count as symmetric:
#: a Galerkin product formed in single precision is symmetric up to its rounding errors.
SINGLE_ROUNDOFF = 100


def symmetry_tol(dtype, tol=SYMMETRY_TOL):
    """``tol``, raised to :data:`SINGLE_ROUNDOFF` roundoffs for single-precision values."""
    info = np.finfo(dtype)
    if info.bits < 64:
        return max(tol, SINGLE_ROUNDOFF * float(info.eps))
    return tol
