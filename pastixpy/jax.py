"""Differentiable sparse solves and log-determinants for JAX, on pastixpy's factorizations.

:func:`spsolve` (x = A⁻¹ b), :func:`slogdet` and :func:`logdet` take a sparse matrix from
``jax.experimental.sparse`` (``BCOO``, ``BCSR``) or as ``(data, pattern)``, run under
``jax.jit`` and ``jax.vmap``, and are differentiable in reverse mode (``jax.grad``,
``jax.vjp``) with respect to the right-hand side and to the matrix's stored values. The
numerical work runs on the host through ``jax.pure_callback``: :func:`pastixpy.factorize`,
then the factorization's solves, determinant and selected inverse.

The backward pass reuses the forward pass's factorization: a callback cannot hand a
Python object to another, so factorizations are kept in a small least-recently-used
cache keyed by a digest of (n, options, pattern, values); :func:`cache_info`,
:func:`cache_clear` and :func:`set_cache_size` manage it (docs/jax.md).

Installed with the ``jax`` extra (``pip install 'pastixpy[jax]'``); ``import pastixpy``
never imports JAX.
"""

import hashlib
import threading
from collections import OrderedDict, namedtuple

import numpy as np
import scipy.sparse as sp

try:
    import jax
    import jax.numpy as jnp
    from jax.experimental import sparse as jsparse
except ImportError as exc:  # the optional dependency: say how to get it
    raise ImportError(
        "pastixpy.jax needs JAX, which is not installed: pip install 'pastixpy[jax]' "
        "(or pip install jax)"
    ) from exc

from .api import factorize
from .errors import InvalidInputError, OptionError, PastixError
from .options import Options

__all__ = [
    "CacheInfo",
    "cache_clear",
    "cache_info",
    "logdet",
    "set_cache_size",
    "slogdet",
    "spsolve",
]

#: Factorizations the cache holds by default (each holds its factors: set a smaller
#: size with :func:`set_cache_size` for large matrices).
DEFAULT_CACHE_SIZE = 4

#: :func:`pastixpy.factorize` options that have no meaning here: a distributed
#: factorization (its solves are collective) and a Schur complement (its factors leave
#: a block unfactored).
REFUSED_OPTIONS = ("comm", "schur")

CacheInfo = namedtuple("CacheInfo", ["hits", "misses", "maxsize", "currsize"])
CacheInfo.__doc__ = """The factorization cache's counters, as ``functools.lru_cache``'s:
``hits`` (a callback found the factorization it needed), ``misses`` (it factored),
``maxsize`` and ``currsize`` (factorizations held)."""


# ---------------------------------------------------------------------- the cache


class _FactorCache:
    """Factorizations by digest, least recently used first out; thread-safe."""

    def __init__(self, maxsize):
        self.maxsize = maxsize
        self.entries = OrderedDict()
        self.hits = self.misses = 0
        self.lock = threading.Lock()

    def get(self, key, make):
        with self.lock:
            F = self.entries.get(key)
            if F is not None:
                self.entries.move_to_end(key)
                self.hits += 1
                return F
            self.misses += 1
        # Factored outside the lock: another thread's hits need not wait for it.
        F = make()
        with self.lock:
            if self.maxsize > 0:
                self.entries[key] = F
                self.entries.move_to_end(key)
                self._trim()
        return F

    def _trim(self):
        while len(self.entries) > self.maxsize:
            self.entries.popitem(last=False)

    def resize(self, maxsize):
        with self.lock:
            self.maxsize = maxsize
            self._trim()

    def clear(self):
        with self.lock:
            self.entries.clear()
            self.hits = self.misses = 0

    def info(self):
        with self.lock:
            return CacheInfo(self.hits, self.misses, self.maxsize, len(self.entries))


_CACHE = _FactorCache(DEFAULT_CACHE_SIZE)


def cache_info():
    """The factorization cache's counters and size.

    Every host callback of :func:`spsolve`, :func:`slogdet` and :func:`logdet` asks the
    cache for the factorization of its matrix: a hit reuses one (the backward pass
    reuses the forward pass's), a miss factors and keeps the result.

    Returns
    -------
    CacheInfo
        ``(hits, misses, maxsize, currsize)``.

    Examples
    --------
    >>> import jax
    >>> import jax.numpy as jnp
    >>> from jax.experimental import sparse
    >>> from pastixpy import jax as pj
    >>> pj.cache_clear()
    >>> A = sparse.BCOO.fromdense(jnp.array([[4.0, 1.0], [2.0, 3.0]]))
    >>> g = jax.grad(lambda b: pj.spsolve(A, b).sum())(jnp.ones(2))
    >>> pj.cache_info()  # the forward pass factored, the backward pass reused it
    CacheInfo(hits=1, misses=1, maxsize=4, currsize=1)
    """
    return _CACHE.info()


def cache_clear():
    """Drop every cached factorization and reset the counters.

    Examples
    --------
    >>> from pastixpy import jax as pj
    >>> pj.cache_clear()
    >>> pj.cache_info().currsize
    0
    """
    _CACHE.clear()


def set_cache_size(maxsize):
    """Hold at most ``maxsize`` factorizations (least recently used dropped first).

    Parameters
    ----------
    maxsize : int
        0 keeps none: every callback factors anew, the backward pass included.
        The default is :data:`DEFAULT_CACHE_SIZE`.

    Raises
    ------
    InvalidInputError
        ``maxsize`` is not a non-negative integer.

    Examples
    --------
    >>> from pastixpy import jax as pj
    >>> pj.set_cache_size(2)
    >>> pj.cache_info().maxsize
    2
    >>> pj.set_cache_size(pj.DEFAULT_CACHE_SIZE)
    """
    if isinstance(maxsize, bool) or not isinstance(maxsize, (int, np.integer)) or maxsize < 0:
        raise InvalidInputError(f"maxsize must be a non-negative integer, got {maxsize!r}")
    _CACHE.resize(int(maxsize))


def _digest(n, options, data, rows, cols):
    """The cache key: what makes two matrices and their factorizations the same."""
    h = hashlib.blake2b(digest_size=32)
    h.update(repr((n, data.dtype.str, sorted(options.items()))).encode())
    for a in (rows.astype(np.int64), cols.astype(np.int64), data):
        h.update(np.ascontiguousarray(a).tobytes())
    return h.digest()


def _factorization(n, options, data, rows, cols):
    """The factorization of the matrix (data, rows, cols): the cache's or a new one."""
    key = _digest(n, options, data, rows, cols)
    return _CACHE.get(key, lambda: factorize(_host_matrix(n, data, rows, cols), **options))


# ---------------------------------------------------------------------- the matrix


def _host_matrix(n, data, rows, cols):
    """The n x n scipy matrix of the triplets; duplicates summed, padding dropped."""
    rows = rows.astype(np.int64)
    cols = cols.astype(np.int64)
    keep = _check_indices(n, rows, cols)
    return sp.csc_array((data[keep], (rows[keep], cols[keep])), shape=(n, n))


def _check_indices(n, rows, cols):
    """Which entries are stored (not JAX's padding, both indices equal to n); refuses
    any other index outside [0, n)."""
    pad = (rows == n) & (cols == n)
    bad = ~pad & ((rows < 0) | (rows >= n) | (cols < 0) | (cols >= n))
    if bad.any():
        k = int(np.flatnonzero(bad)[0])
        raise InvalidInputError(
            f"A's indices are out of range: entry {k} is at ({int(rows[k])}, {int(cols[k])}) "
            f"in a {n}x{n} matrix (only (n, n), JAX's padding, may lie outside [0, n))"
        )
    return ~pad


def _concrete(x):
    """x as a numpy array, or None where it is traced (under jit)."""
    try:
        return np.asarray(x)
    except (jax.errors.TracerArrayConversionError, jax.errors.ConcretizationTypeError):
        return None


def _triplets(A):
    """(data, rows, cols, n) of A: a BCOO, a BCSR or ``(data, pattern)``."""
    if isinstance(A, (jsparse.BCOO, jsparse.BCSR)):
        if A.n_batch or A.n_dense:
            raise InvalidInputError(
                f"A has {A.n_batch} batch and {A.n_dense} dense dimensions; only a 2-D "
                "matrix of scalar entries is solved (map over a batch with jax.vmap)"
            )
        _check_square(A.shape)
        n = A.shape[0]
        if isinstance(A, jsparse.BCOO):
            rows, cols = A.indices[:, 0], A.indices[:, 1]
        else:
            positions = jnp.arange(A.data.shape[0], dtype=A.indptr.dtype)
            # Entries past indptr[n] (BCSR's padding) get row n.
            rows = jnp.searchsorted(A.indptr, positions, side="right") - 1
            cols = A.indices
        return A.data, rows, cols, n
    if isinstance(A, tuple) and len(A) == 2 and sp.issparse(A[1]):
        data, pattern = A
        _check_square(pattern.shape)
        coo = sp.coo_array(pattern)
        data = jnp.asarray(data)
        if data.shape != coo.row.shape:
            raise InvalidInputError(
                f"data has shape {data.shape}; the pattern stores {coo.row.size} entries, "
                f"so data must have shape ({coo.row.size},)"
            )
        return data, jnp.asarray(coo.row), jnp.asarray(coo.col), pattern.shape[0]
    raise InvalidInputError(
        f"A is a {type(A).__name__}; pass a jax.experimental.sparse BCOO or BCSR matrix, "
        "or (data, pattern) with pattern a scipy sparse matrix"
    )


def _check_square(shape):
    if len(shape) != 2 or shape[0] != shape[1]:
        raise InvalidInputError(f"A must be a square matrix, got shape {tuple(shape)}")
    if shape[0] == 0:
        raise InvalidInputError("A is empty (0x0): there is nothing to solve")


def _prepare(caller, A, options):
    """Validated (data, rows, cols, n, options) of a call to ``caller``."""
    data, rows, cols, n = _triplets(A)
    if not (jnp.issubdtype(rows.dtype, jnp.integer) and jnp.issubdtype(cols.dtype, jnp.integer)):
        raise InvalidInputError(f"A's indices have dtype {rows.dtype}; they must be integers")
    r, c = _concrete(rows), _concrete(cols)
    if r is not None and c is not None:
        _check_indices(n, r.astype(np.int64), c.astype(np.int64))
    return data, rows, cols, n, _check_options(caller, options)


def _check_options(caller, options):
    """The keyword arguments of :func:`pastixpy.factorize`, checked now rather than in
    a callback (whose errors JAX reports as its own runtime error)."""
    for name in REFUSED_OPTIONS:
        if options.get(name) is not None:
            raise OptionError(
                f"{name}= is not available in pastixpy.jax (a distributed or Schur "
                "factorization); call pastixpy.factorize for it"
            )
    Options.from_keywords(
        f"pastixpy.jax.{caller}", {k: v for k, v in options.items() if k != "analysis"}
    )
    return options


def _working_dtype(*dtypes):
    """The dtype of the solve: the inputs' promoted, at least single precision."""
    dt = jnp.result_type(*dtypes)
    if not jnp.issubdtype(dt, jnp.inexact):
        dt = jnp.result_type(float)
    if jnp.dtype(dt).itemsize < (8 if jnp.issubdtype(dt, jnp.complexfloating) else 4):
        # float16 and bfloat16: the kernels compute in single precision at least.
        dt = jnp.complex64 if jnp.issubdtype(dt, jnp.complexfloating) else jnp.float32
    return jnp.dtype(dt)


# ---------------------------------------------------------------------- host callbacks


def _batches(data, rows, cols):
    """Leading (vmap) dimensions of the matrix parts: their shape, and the matrices
    flattened over them as (data, rows, cols) rows."""
    lead = np.broadcast_shapes(data.shape[:-1], rows.shape[:-1], cols.shape[:-1])
    nse = data.shape[-1]
    flat = [np.broadcast_to(a, (*lead, nse)).reshape(-1, nse) for a in (data, rows, cols)]
    return lead, flat


def _host_solve(n, options, trans, core_ndim, dtype):
    """The callback of a solve (``trans="N"``) or of its transpose (``"T"``).

    Called with JAX's vmap leading dimensions (``vmap_method="expand_dims"``): one
    matrix and many right-hand sides are one multi-column solve; a batch of matrices
    is solved one matrix at a time.
    """

    def callback(data, rows, cols, b, *_after):
        (a_lead, (D, R, C)) = _batches(data, rows, cols)
        core = b.shape[b.ndim - core_ndim :]
        lead = np.broadcast_shapes(a_lead, b.shape[: b.ndim - core_ndim])
        B = np.broadcast_to(b, (*lead, *core)).reshape(-1, n, *core[1:])
        if D.shape[0] == 1:
            F = _factorization(n, options, D[0], R[0], C[0])
            # (m, n, k) -> (n, m k): every right-hand side in one solve.
            X = F.solve(np.moveaxis(B, 1, 0).reshape(n, -1), trans=trans)
            X = np.moveaxis(X.reshape(n, *B.shape[:1], *core[1:]), 0, 1)
        else:
            m = int(np.prod(lead, dtype=np.int64))
            idx = np.broadcast_to(np.arange(D.shape[0]).reshape(a_lead), lead).reshape(-1)
            X = np.empty(B.shape, dtype=dtype)
            for i in range(m):
                F = _factorization(n, options, D[idx[i]], R[idx[i]], C[idx[i]])
                X[i] = F.solve(B[i], trans=trans)
        return np.asarray(X, dtype=dtype).reshape(*lead, *core)

    return callback


def _host_slogdet(n, options, positive, dtype):
    """The callback of (sign, log|det A|); ``positive``: log det of a positive definite
    matrix (:meth:`pastixpy.Factorization.logdet`), whose sign is 1."""
    real = jnp.finfo(dtype).dtype

    def callback(data, rows, cols):
        lead, (D, R, C) = _batches(data, rows, cols)
        sign = np.empty(D.shape[0], dtype=dtype)
        logabs = np.empty(D.shape[0], dtype=real)
        for i in range(D.shape[0]):
            F = _factorization(n, options, D[i], R[i], C[i])
            sign[i], logabs[i] = (1, F.logdet()) if positive else F.slogdet()
        return sign.reshape(lead), logabs.reshape(lead)

    return callback


def _host_inverse_entries(n, options, dtype):
    """The callback of (A⁻¹)[col_k, row_k] for each stored entry k of A (0 at padding),
    from the selected inverse: the factor's pattern holds Aᵀ's (the analysis orders
    the pattern of A + Aᵀ; with LU's row matching, that of the matched matrix, which
    maps back to Aᵀ's)."""

    def callback(data, rows, cols, *_after):
        lead, (D, R, C) = _batches(data, rows, cols)
        G = np.zeros(D.shape, dtype=dtype)
        for i in range(D.shape[0]):
            F = _factorization(n, options, D[i], R[i], C[i])
            Z = F.inv_selected()
            r, c = R[i].astype(np.int64), C[i].astype(np.int64)
            keep = _check_indices(n, r, c)
            G[i, keep] = _entries(Z, c[keep], r[keep])
        return G.reshape(*lead, D.shape[1])

    return callback


def _entries(Z, rows, cols):
    """Z[rows, cols] of a canonical CSC matrix, each of which must be stored."""
    n = Z.shape[0]
    stored = np.repeat(np.arange(n, dtype=np.int64), np.diff(Z.indptr)) * n + Z.indices
    wanted = cols * n + rows
    pos = np.minimum(np.searchsorted(stored, wanted), stored.size - 1)
    if not np.array_equal(stored[pos], wanted):
        k = int(np.flatnonzero(stored[pos] != wanted)[0])
        raise PastixError(
            f"the selected inverse lacks A⁻¹[{int(rows[k])}, {int(cols[k])}], which the "
            "factor's pattern should hold (a bug: please report it)"
        )
    return Z.data[pos]


def _callback(fn, out, *args):
    return jax.pure_callback(fn, out, *args, vmap_method="expand_dims")


# ---------------------------------------------------------------------- spsolve


def spsolve(A, b, **options):
    """Solve A x = b, differentiably with respect to b and to A's stored values.

    The solve runs on the host: :func:`pastixpy.factorize` (or the cached factorization
    of the same matrix), then ``F.solve``. Reverse-mode derivatives (``jax.grad``,
    ``jax.vjp``) solve with Aᵀ on the same factorization, found in the cache
    (:func:`cache_info`); ``jax.jit`` and ``jax.vmap`` work (one matrix and a batch of
    right-hand sides make one multi-column solve). Forward mode (``jax.jvp``,
    ``jax.jacfwd``) is not available.

    Parameters
    ----------
    A : jax.experimental.sparse.BCOO or BCSR, or (data, pattern)
        A square n x n matrix: a ``BCOO`` or ``BCSR`` without batch or dense
        dimensions, or a tuple ``(data, pattern)``, ``pattern`` a scipy sparse matrix
        whose stored entries, in the order of ``pattern.tocoo()``, are where the
        values ``data`` (shape ``(nnz,)``, a JAX array) go; ``pattern``'s own values
        are not read. Duplicate entries are summed, and entries at (n, n) (JAX's
        padding) are left out.
    b : array_like, shape (n,) or (n, k)
    **options
        Keyword arguments of :func:`pastixpy.factorize` (``kind="llt"``,
        ``ordering="metis"``, ``refine=...``, ``threads=...``), except ``comm`` and
        ``schur``.

    Returns
    -------
    x : jax.Array, shape of b
        Of the dtype A's values and b promote to, at least float32 (float64 and
        complex128 need ``jax_enable_x64``).

    Raises
    ------
    InvalidInputError
        A is not square or not a supported type, ``data`` does not match
        ``pattern``, an index is out of range, b's shape does not fit A.
    OptionError
        An option's value is not valid, or ``comm``/``schur`` is given.
    TypeError
        An unknown option.

    Notes
    -----
    With x = A⁻¹ b and the cotangent x̄, the backward pass is (JAX's convention for
    complex numbers: transposes, not conjugate transposes)

        b̄ = A⁻ᵀ x̄,    Ā_data[k] = -Σ_j b̄[row_k, j] x[col_k, j].

    A duplicate entry gets the gradient of the entry it is summed into. Errors found on
    the host (a singular matrix, non-finite values, an out-of-range index under
    ``jax.jit``) reach the caller as JAX's runtime error, with pastixpy's message.

    Examples
    --------
    >>> import jax
    >>> import jax.numpy as jnp
    >>> from jax.experimental import sparse
    >>> from pastixpy.jax import spsolve
    >>> M = jnp.array([[4.0, 1.0, 0.0], [2.0, 5.0, 1.0], [0.0, 1.0, 3.0]])
    >>> A = sparse.BCOO.fromdense(M)
    >>> b = jnp.array([1.0, 2.0, 3.0])
    >>> x = jax.jit(spsolve)(A, b)
    >>> bool(jnp.allclose(M @ x, b, atol=1e-5))
    True

    The gradient of a loss with respect to the matrix's stored values:

    >>> def loss(data):
    ...     return jnp.sum(spsolve(sparse.BCOO((data, A.indices), shape=A.shape), b) ** 2)
    >>> jax.grad(loss)(A.data).shape
    (7,)
    """
    data, rows, cols, n, options = _prepare("spsolve", A, options)
    b = jnp.asarray(b)
    if b.ndim not in (1, 2) or b.shape[0] != n:
        raise InvalidInputError(
            f"b has shape {b.shape}; expected ({n},) or ({n}, k) for a {n}x{n} matrix A"
        )
    if not (jnp.issubdtype(b.dtype, jnp.number) or b.dtype == bool):
        raise InvalidInputError(f"b has dtype {b.dtype}; it must be numeric")
    dtype = _working_dtype(data.dtype, b.dtype)
    solve = _solve_function(n, options, b.ndim, dtype)
    return solve(data.astype(dtype), rows, cols, b.astype(dtype))


def _solve_function(n, options, core_ndim, dtype):
    """x = A⁻¹ b as a JAX function of (data, rows, cols, b), with its reverse rule."""
    forward = _host_solve(n, options, "N", core_ndim, dtype)
    transpose = _host_solve(n, options, "T", core_ndim, dtype)

    @jax.custom_vjp
    def solve(data, rows, cols, b):
        return _callback(forward, jax.ShapeDtypeStruct(b.shape, dtype), data, rows, cols, b)

    def solve_fwd(data, rows, cols, b):
        x = solve(data, rows, cols, b)
        return x, (data, rows, cols, x)

    def solve_bwd(residuals, x_bar):
        data, rows, cols, x = residuals
        # x passed along only to order this callback after the forward one, whose
        # factorization it finds in the cache.
        b_bar = _callback(
            transpose, jax.ShapeDtypeStruct(x_bar.shape, dtype), data, rows, cols, x_bar, x
        )
        # Padding (index n) reads 0: its gradient is 0.
        products = b_bar.at[rows].get(mode="fill", fill_value=0) * x.at[cols].get(
            mode="fill", fill_value=0
        )
        data_bar = -(products if products.ndim == 1 else products.sum(axis=1))
        return data_bar, None, None, b_bar

    solve.defvjp(solve_fwd, solve_bwd)
    return solve


# ---------------------------------------------------------------------- determinants


def slogdet(A, **options):
    """Sign and natural log of ``|det A|``, like ``jnp.linalg.slogdet``, differentiable with
    respect to A's stored values.

    From the factorization (:meth:`pastixpy.Factorization.slogdet`); the gradient of
    ``log|det A|`` comes from the selected inverse (:meth:`pastixpy.Factorization.inv_selected`)
    of the same factorization, found in the cache.

    Parameters
    ----------
    A : jax.experimental.sparse.BCOO or BCSR, or (data, pattern)
        As for :func:`spsolve`.
    **options
        As for :func:`spsolve`.

    Returns
    -------
    sign : jax.Array, scalar
        ±1 for a real matrix, ``det A / |det A|`` for a complex one; of A's dtype.
    logabsdet : jax.Array, scalar
        ``log|det A|``, real (float32 or float64).

    Raises
    ------
    InvalidInputError, OptionError
        As for :func:`spsolve`.

    Notes
    -----
    d ``log|det A|`` = Re tr(A⁻¹ dA), so the gradient of ``log|det A|`` with respect to the
    stored value A_data[k] at (i, j) is (A⁻¹)[j, i], and JAX's convention makes it so
    for complex A too (unconjugated). A complex sign s has d s = i s Im tr(A⁻¹ dA); with
    the cotangents (s̄, l̄) of (sign, logabsdet),

        Ā_data[k] = (A⁻¹)[j, i] (l̄ + i Im(s s̄)).

    A real sign is piecewise constant: its gradient is 0. The entries (A⁻¹)[j, i] are
    those of the factored matrix's inverse, without refinement (accurate to the working
    precision times A's condition number).

    Examples
    --------
    >>> import jax
    >>> import jax.numpy as jnp
    >>> from jax.experimental import sparse
    >>> from pastixpy.jax import slogdet
    >>> M = jnp.array([[1.0, 2.0], [3.0, 4.0]])
    >>> A = sparse.BCOO.fromdense(M)
    >>> sign, logabs = slogdet(A)
    >>> float(sign), round(float(logabs), 5)  # det = -2
    (-1.0, 0.69315)
    >>> grad = jax.grad(lambda d: slogdet(sparse.BCOO((d, A.indices), shape=(2, 2)))[1])
    >>> bool(jnp.allclose(grad(A.data), jnp.linalg.inv(M).T.ravel()))
    True
    """
    return _determinant("slogdet", A, options, positive=False)


def logdet(A, **options):
    """log det A of a positive definite matrix, differentiable with respect to A's
    stored values: :meth:`pastixpy.Factorization.logdet` (a Gaussian's log-likelihood,
    with ``kind="llt"``).

    Parameters
    ----------
    A : jax.experimental.sparse.BCOO or BCSR, or (data, pattern)
        A symmetric (Hermitian) positive definite matrix, both triangles stored; as for
        :func:`spsolve`.
    **options
        As for :func:`spsolve`.

    Returns
    -------
    jax.Array, scalar
        log det A, real.

    Raises
    ------
    InvalidInputError, OptionError
        As for :func:`spsolve`. A matrix that is not positive definite fails on the
        host (:meth:`pastixpy.Factorization.logdet` raises): use :func:`slogdet`.

    Notes
    -----
    The gradient with respect to the stored value at (i, j) is (A⁻¹)[j, i], as for
    :func:`slogdet`'s log|det A|: each stored entry is its own variable, so a symmetric
    perturbation (A_ij and A_ji together) gets the sum of the two.

    Examples
    --------
    >>> import jax
    >>> import jax.numpy as jnp
    >>> from jax.experimental import sparse
    >>> from pastixpy.jax import logdet
    >>> M = jnp.array([[4.0, 1.0], [1.0, 3.0]])
    >>> A = sparse.BCOO.fromdense(M)
    >>> round(float(logdet(A, kind="llt")), 5)  # log 11
    2.3979
    """
    return _determinant("logdet", A, options, positive=True)[1]


def _determinant(caller, A, options, positive):
    data, rows, cols, n, options = _prepare(caller, A, options)
    dtype = _working_dtype(data.dtype)
    fn = _slogdet_function(n, options, positive, dtype)
    return fn(data.astype(dtype), rows, cols)


def _slogdet_function(n, options, positive, dtype):
    """(sign, log|det A|) as a JAX function of (data, rows, cols), with its reverse rule."""
    forward = _host_slogdet(n, options, positive, dtype)
    inverse = _host_inverse_entries(n, options, dtype)
    real = jnp.finfo(dtype).dtype
    out = (jax.ShapeDtypeStruct((), dtype), jax.ShapeDtypeStruct((), real))

    @jax.custom_vjp
    def slogdet_(data, rows, cols):
        return _callback(forward, out, data, rows, cols)

    def slogdet_fwd(data, rows, cols):
        sign, logabs = slogdet_(data, rows, cols)
        return (sign, logabs), (data, rows, cols, sign)

    def slogdet_bwd(residuals, cotangents):
        data, rows, cols, sign = residuals
        sign_bar, logabs_bar = cotangents
        # sign passed along only to order this callback after the forward one.
        g = _callback(inverse, jax.ShapeDtypeStruct(data.shape, dtype), data, rows, cols, sign)
        weight = logabs_bar.astype(dtype)
        if jnp.issubdtype(dtype, jnp.complexfloating):
            weight = weight + 1j * jnp.imag(sign * sign_bar)
        return g * weight, None, None

    slogdet_.defvjp(slogdet_fwd, slogdet_bwd)
    return slogdet_
