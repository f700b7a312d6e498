"""Input checks and the canonical form of a matrix: CSC, sorted, duplicates summed."""

import functools
import warnings
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from scipy.sparse import SparseEfficiencyWarning

from ._graph import is_canonical_csc, symmetric_adjacency, transpose_asymmetry
from .errors import InvalidInputError

#: Value dtypes the numeric kernels compute in; other numeric inputs are converted.
SUPPORTED_DTYPES = (np.float32, np.float64, np.complex64, np.complex128)


def canonical_csc(A, argname="A", copy=True):
    """Validate a square matrix and return it as a canonical CSC array.

    Canonical means: ``scipy.sparse.csc_array``, row indices sorted within each
    column, duplicates summed, int64 index arrays, values in one of
    :data:`SUPPORTED_DTYPES` (booleans and integers become float64), all finite.
    The input is never modified.

    Parameters
    ----------
    A : scipy sparse matrix or array, or dense array_like
        Dense input is accepted with a ``SparseEfficiencyWarning``.
    argname : str
        Name used in error messages.
    copy : bool
        False: an input that is canonical already is returned as it is (checked, not
        copied), for callers that only read it and keep nothing of it (the analysis
        reads the pattern). A factorization keeps its matrix for the refinement, so it
        takes a copy: the caller may change its own matrix afterwards.

    Returns
    -------
    scipy.sparse.csc_array

    Raises
    ------
    InvalidInputError
        Not 2-D, not square, empty, a non-numeric dtype, an index array that
        cannot be converted to int64, or a NaN/Inf value (the column is named).

    Examples
    --------
    >>> import scipy.sparse as sp
    >>> C = canonical_csc(sp.coo_array(([1.0, 2.0, 3.0], ([0, 1, 0], [0, 1, 0]))))
    >>> C.toarray()
    array([[4., 0.],
           [0., 2.]])
    """
    if not sp.issparse(A):
        try:
            dense = np.asarray(A)
        except Exception as exc:
            raise InvalidInputError(f"{argname} cannot be read as a matrix: {exc}") from exc
        if dense.ndim != 2:
            raise InvalidInputError(f"{argname} must be 2-D, got {dense.ndim}-D input")
        warnings.warn(
            f"{argname} is dense; converting it to a sparse matrix (pass a scipy.sparse "
            "matrix to avoid the copy)",
            SparseEfficiencyWarning,
            stacklevel=3,
        )
        _check_dtype(dense.dtype, argname)
        A = sp.csc_array(dense)
    if A.ndim != 2:
        raise InvalidInputError(f"{argname} must be 2-D, got shape {A.shape}")
    nrows, ncols = A.shape
    if nrows != ncols:
        raise InvalidInputError(
            f"{argname} must be square, got shape {A.shape}; a direct solver needs a square "
            "system (use scipy.sparse.linalg.lsqr for least squares)"
        )
    if nrows == 0:
        raise InvalidInputError(f"{argname} is empty (0x0): there is nothing to factorize")
    if copy and (view := csc_view(A)) is not None:
        # Canonical already (checked as below): a copy of its arrays, without scipy's
        # conversion, sorting and checks, which cost more than a small matrix's solve.
        return _csc_array(view.data.copy(), view.indices.copy(), view.indptr.copy())
    dtype = _check_dtype(A.dtype, argname)
    for index in _index_arrays(A):
        _check_index(index, argname)
    if not copy and _is_canonical(A, dtype):
        C = A
    else:
        C = sp.csc_array(A, dtype=dtype, copy=True)
        C.sum_duplicates()  # also sorts the row indices
        C.indptr = _as_index(C.indptr, argname)
        C.indices = _as_index(C.indices, argname)
    _check_rows(C, argname)
    if not np.isfinite(C.data).all():
        bad = np.flatnonzero(~np.isfinite(C.data))[0]
        col = int(np.searchsorted(C.indptr, bad, side="right") - 1)
        raise InvalidInputError(
            f"{argname} has a NaN or Inf value at row {int(C.indices[bad])}, column {col}: "
            "fix the assembly of the matrix"
        )
    return C


@dataclass(frozen=True)
class CSCView:
    """A canonical square CSC matrix's arrays, read in place: what :func:`csc_view` gives
    for an input already in canonical form. It answers as much of a ``csc_array``'s
    interface as a read-only kernel call needs (``shape``, ``dtype``, ``nnz``, the three
    arrays); :meth:`tocsc` makes the scipy array where more is needed."""

    indptr: np.ndarray
    indices: np.ndarray
    data: np.ndarray

    @property
    def shape(self):
        n = self.indptr.size - 1
        return (n, n)

    @property
    def dtype(self):
        return self.data.dtype

    @property
    def nnz(self):
        return self.data.size

    def tocsc(self):
        """The scipy ``csc_array`` of these arrays (not copied)."""
        return _csc_array(self.data, self.indices, self.indptr)


def _csc_array(data, indices, indptr):
    """The square ``csc_array`` of canonical arrays (int64 indices), taken as they are
    and marked canonical.

    Where this scipy's constructor sets the attributes :func:`_bare_attributes` found,
    they are set directly: the constructor scans both index arrays, narrows them to
    int32 copies (put back here) and checks the format again, passes that cost a small
    matrix's factorization more than its copy; else the constructor makes it."""
    n = indptr.size - 1
    bare = _bare_attributes()
    if bare is None:
        C = sp.csc_array((data, indices, indptr), shape=(n, n), copy=False)
    else:
        C = sp.csc_array.__new__(sp.csc_array)
        C._shape, C.maxprint = (n, n), bare
        C.data = data
    C.indptr, C.indices = indptr, indices  # scipy may narrow them to int32
    C.has_canonical_format = True
    return C


@functools.cache
def _bare_attributes():
    """``maxprint`` of a ``csc_array`` made by scipy's constructor when the instance
    attributes that constructor sets are exactly those :func:`_csc_array` sets itself
    (``_shape``, ``maxprint``, ``data``, ``indices``, ``indptr``), else None: a scipy
    that sets more is given its constructor."""
    one = np.zeros(1, dtype=np.int64)
    probe = sp.csc_array((np.ones(1), one, np.array([0, 1])), shape=(1, 1))
    if set(vars(probe)) != {"_shape", "maxprint", "data", "indices", "indptr"}:
        return None
    return probe.maxprint


#: The value dtypes :func:`csc_view` reads in place.
VIEW_DTYPES = (np.dtype(np.float64), np.dtype(np.complex128))


def csc_view(A):
    """A's arrays as a :class:`CSCView` where A is already what :func:`canonical_csc`
    would make (a square CSC matrix or array, canonical format, float64 or complex128,
    finite, its indices in range), else None: the caller then calls
    :func:`canonical_csc`, which copies, converts and names what is wrong.

    Nothing is copied (int32 indices aside, widened to int64): for callers that only
    read A and keep nothing of it once they return (spsolve's small path), where the
    canonical copy would cost more than solving a tiny system.
    """
    if not sp.issparse(A) or A.format != "csc" or A.dtype not in VIEW_DTYPES:
        return None
    n = A.shape[0]
    indptr, indices = A.indptr, A.indices
    if (
        A.shape[1] != n
        or indptr.dtype not in (np.int32, np.int64)
        or indices.dtype not in (np.int32, np.int64)
        or indptr.ndim != 1
        or indices.ndim != 1
    ):
        return None
    indptr = indptr.astype(np.int64, copy=False)
    indices = indices.astype(np.int64, copy=False)
    if not is_canonical_csc(n, indptr, indices, A.data):  # one pass, in the kernel
        return None
    nnz = int(indptr[n])
    return CSCView(indptr, indices[:nnz], A.data[:nnz])


def _check_rows(C, argname):
    """Refuse row indices outside [0, n): scipy checks them only on request, and an
    array changed in place after its construction keeps what it was given."""
    n = C.shape[0]
    if C.nnz and (C.indices.min() < 0 or C.indices.max() >= n):
        bad = np.flatnonzero((C.indices < 0) | (C.indices >= n))[0]
        col = int(np.searchsorted(C.indptr, bad, side="right") - 1)
        raise InvalidInputError(
            f"{argname} has row index {int(C.indices[bad])} in column {col}, outside "
            f"[0, {n}): the matrix's index arrays are corrupt (check them with "
            f"{argname}.check_format(full_check=True))"
        )


def _check_dtype(dtype, argname):
    """The supported value dtype that a given input dtype converts to, or an error."""
    dtype = np.dtype(dtype)
    if dtype.kind in "biu":
        return np.dtype(np.float64)
    if dtype.kind == "f":
        return np.dtype(np.float32 if dtype.itemsize <= 4 else np.float64)
    if dtype.kind == "c":
        return np.dtype(np.complex64 if dtype.itemsize <= 8 else np.complex128)
    raise InvalidInputError(
        f"{argname} has dtype {dtype}, which is not numeric: give real or complex values"
    )


def _index_arrays(A):
    """The index arrays a sparse input carries, whatever its format."""
    arrays = [getattr(A, name) for name in ("indptr", "indices", "offsets") if hasattr(A, name)]
    return arrays + list(getattr(A, "coords", ()))


def _is_canonical(A, dtype):
    """A csc_array already as canonical_csc makes it (finiteness aside)."""
    return (
        isinstance(A, sp.csc_array)
        and A.dtype == dtype
        and A.indptr.dtype == np.int64
        and A.indices.dtype == np.int64
        and A.has_canonical_format
    )


def _check_index(arr, argname):
    """Refuse an index array that does not convert to int64 exactly (no conversion made)."""
    arr = np.asarray(arr)
    if arr.dtype.kind not in "iu":
        raise InvalidInputError(
            f"{argname} has index arrays of dtype {arr.dtype}; they must be integers"
        )
    if arr.dtype == np.uint64 and arr.size and arr.max() > np.iinfo(np.int64).max:
        raise InvalidInputError(f"{argname} has index values too large for int64")


def _as_index(arr, argname):
    """int64 copy of an index array, refusing what does not convert exactly."""
    _check_index(arr, argname)
    return np.asarray(arr).astype(np.int64, copy=False)


def symmetric_pattern(C):
    """Adjacency (xadj, adjncy) of the pattern of C + Cᵀ without the diagonal, int64, sorted."""
    return symmetric_adjacency(C.shape[0], C.indptr, C.indices)


#: A matrix whose relative asymmetry max|a_ij - a_ji| / max|a_ij| is at most this many
#: units of roundoff of its precision is treated as symmetric (Hermitian): finite
#: element assembly leaves asymmetries of 1e-19 to 1e-16 in double precision. Its lower
#: triangle is factored, and refinement against A itself removes the difference.
SYMMETRY_ROUNDOFF = 1000


@dataclass(frozen=True)
class Symmetry:
    """What a matrix's values are: ``kind`` ``"hermitian"``, ``"symmetric"`` or
    ``"general"``, and the relative asymmetry ``max|a_ij - op(a)_ji| / max|a_ij|``
    against that kind (0 where exact; for ``"general"``, the smallest of the two)."""

    kind: str
    asymmetry: float = 0.0

    @property
    def exact(self):
        return self.asymmetry == 0.0


def symmetry_of(C, roundoff=SYMMETRY_ROUNDOFF):
    """The :class:`Symmetry` of a canonical matrix, symmetric up to ``roundoff`` units of
    its precision's roundoff (:data:`SYMMETRY_ROUNDOFF`; 0: exactly). Explicit zeros do
    not count.

    Examples
    --------
    >>> import scipy.sparse as sp
    >>> s = symmetry_of(sp.csc_array([[2.0, 1.0], [1.0 + 2**-50, 4.0]]))
    >>> s.kind, s.asymmetry == 2**-52
    ('symmetric', True)
    """
    complex_ = np.iscomplexobj(C.data)
    # One pass over C against its transpose: no transposed copy, no temporaries (on a
    # large FEM matrix those were most of the check's time, in page faults).
    if not C.has_canonical_format:
        C = canonical_csc(C)
    ip, ix = (np.asarray(a, dtype=np.int64) for a in (C.indptr, C.indices))
    _, asym_t, asym_h, scale = transpose_asymmetry(C.shape[0], ip, ix, C.data)
    if not complex_:
        asym_h = asym_t
    if scale == 0.0:
        return Symmetry("symmetric" if asym_t == 0 else "general", 0.0)
    asym_t, asym_h = asym_t / scale, asym_h / scale
    tol = roundoff * np.finfo(C.dtype).eps
    if complex_ and asym_h <= tol and asym_h <= asym_t:
        return Symmetry("hermitian", asym_h)
    if asym_t <= tol:
        return Symmetry("symmetric", asym_t)
    return Symmetry("general", min(asym_t, asym_h))


def matrix_symmetry(C):
    """Classify a canonical matrix by its values, exactly: ``"hermitian"``,
    ``"symmetric"`` or ``"general"`` (see :func:`symmetry_of` for symmetry up to rounding).

    Real symmetric matrices are ``"symmetric"``; a complex matrix equal to its
    conjugate transpose (real diagonal) is ``"hermitian"``, one equal to its
    transpose is ``"symmetric"``. Explicit zeros do not count.

    Examples
    --------
    >>> import scipy.sparse as sp
    >>> matrix_symmetry(sp.csc_array([[2.0, 1j], [-1j, 3.0]]))
    'hermitian'
    """
    return symmetry_of(C, roundoff=0).kind


def compact_index(a):
    """An index array as int32 when its values allow, else int64."""
    small = a.size == 0 or (a.min() >= 0 and a.max() < np.iinfo(np.int32).max)
    return a.astype(np.int32 if small else np.int64, copy=False)
