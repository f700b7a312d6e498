"""Right-preconditioned GMRES, flexible (FGMRES) or not, with scipy's calling conventions:
the package's one GMRES, which refinement (:mod:`pastixpy.refine`) and the multilevel
solver (:mod:`pastixpy.multilevel`) both run.

scipy's :func:`scipy.sparse.linalg.gmres` preconditions on the left, so the residual it
tests is the preconditioned one, it needs a fixed linear preconditioner, and it applies
M to b and to the first residual besides once per iteration (two solves more, which is
most of a refinement that converges in two or three iterations). :func:`fgmres`
preconditions on the right, so the residual it minimizes and tests is the true one,
``‖b − A x‖``, applies M once per iteration, and in its flexible form keeps every
preconditioned vector ``z_j = M(v_j)``, so that ``M`` may change from one iteration to
the next (Saad, 1993): a multilevel cycle with inner Krylov iterations (the K-cycle).
"""

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as sla

from .errors import InvalidInputError, OptionError
from .norms import norm2

__all__ = ["fgmres", "gmres_right", "check_rhs"]

#: Basis vectors are stored in blocks of this many rows, so that the orthogonalization
#: runs as matrix-vector products without a preallocated (restart × n) array.
BLOCK = 16


def _operator(A, name, n=None):
    """A matvec function, a dtype and the order (None for a callable) of a sparse matrix,
    LinearOperator, array or callable."""
    if A is None:
        return None, np.dtype(np.float64), n
    if sp.issparse(A) or isinstance(A, np.ndarray):
        if A.ndim != 2 or A.shape[0] != A.shape[1] or (n is not None and A.shape[0] != n):
            raise InvalidInputError(f"{name} must be square of order {n}, got shape {A.shape}")
        return A.__matmul__, A.dtype, A.shape[0]
    if isinstance(A, sla.LinearOperator) or hasattr(A, "matvec"):
        op = sla.aslinearoperator(A)
        if op.shape[0] != op.shape[1] or (n is not None and op.shape[0] != n):
            raise InvalidInputError(f"{name} must be square of order {n}, got shape {op.shape}")
        return op.matvec, op.dtype, op.shape[0]
    if callable(A):
        return A, np.dtype(np.float64), n
    raise InvalidInputError(
        f"{name} must be a sparse matrix, a dense array, a LinearOperator or a callable, "
        f"got {type(A).__name__}"
    )


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


class _Basis:
    """Orthonormal Krylov basis stored in row blocks; orthogonalizes by CGS2."""

    def __init__(self, n, dtype):
        self.n, self.dtype = n, dtype
        self.blocks, self.count = [], 0

    def append(self, v):
        if self.count % BLOCK == 0:
            self.blocks.append(np.empty((BLOCK, self.n), self.dtype))
        self.blocks[-1][self.count % BLOCK] = v
        self.count += 1

    def row(self, i):
        return self.blocks[i // BLOCK][i % BLOCK]

    def project_out(self, w):
        """Remove from w its components on the basis (classical Gram-Schmidt, twice, which
        keeps orthogonality to working precision), returning the coefficients."""
        h = np.zeros(self.count, self.dtype)
        for _ in range(2):
            for b, blk in enumerate(self.blocks):
                rows = blk[: min(BLOCK, self.count - b * BLOCK)]
                c = rows.conj() @ w
                w -= rows.T @ c
                h[b * BLOCK : b * BLOCK + len(c)] += c
        return h

    def combine(self, y):
        """Σ y_i v_i."""
        out = np.zeros(self.n, self.dtype)
        for b, blk in enumerate(self.blocks):
            cy = y[b * BLOCK : (b + 1) * BLOCK]
            if len(cy):
                out += blk[: len(cy)].T @ cy
        return out


def fgmres(
    A,
    b,
    x0=None,
    *,
    M=None,
    rtol=1e-5,
    atol=0.0,
    restart=None,
    maxiter=None,
    callback=None,
    callback_type="pr_norm",
    flexible=True,
):
    """Solve A x = b by right-preconditioned, flexible GMRES.

    Minimizes the true residual ``‖b − A x‖`` over ``x0 + span{z_1, ..., z_j}`` where
    ``z_i = M(v_i)`` are the preconditioned Arnoldi vectors; with ``flexible=True`` the
    ``z_i`` are kept, so ``M`` may be a different operator at each iteration (an inner
    Krylov solve, a K-cycle). Each iteration applies ``M`` once and ``A`` once.

    Parameters
    ----------
    A : sparse matrix, LinearOperator, dense array or callable
        The matrix, or a function computing ``A @ x``.
    b : array_like, shape (n,)
    x0 : array_like, shape (n,), optional
        Initial guess (zero by default).
    M : sparse matrix, LinearOperator or callable, optional
        The right preconditioner, applied as ``M @ v`` (an approximate inverse of A).
    rtol, atol : float
        Stop when ``‖b − A x‖ <= max(rtol ‖b‖, atol)``.
    restart : int, optional
        Iterations between restarts; by default none (one cycle of ``maxiter``).
    maxiter : int, optional
        Total number of iterations, all restart cycles together (default ``10 n``
        capped at 1000). Unlike scipy's gmres, this counts iterations, not cycles.
    callback : callable, optional
        Called as ``callback(rel_res)`` after each iteration with the relative residual
        norm ``‖b − A x_j‖ / ‖b‖`` (``callback_type="pr_norm"``, scipy's name; here it is
        the true residual, as the preconditioning is on the right), or as
        ``callback(x)`` at the end of each restart cycle (``callback_type="x"``).
    callback_type : {"pr_norm", "x"}
    flexible : bool
        Keep the preconditioned vectors (needed when M varies). With False, only the
        Arnoldi basis is kept and M is applied once more per cycle to form x: half the
        memory, for a fixed linear M.

    Returns
    -------
    x : ndarray
    info : int
        0 when converged, else the number of iterations made (scipy's convention).

    Examples
    --------
    >>> import scipy.sparse as sp
    >>> A = sp.diags_array([np.arange(1.0, 101.0)], offsets=[0])
    >>> x, info = fgmres(A, np.ones(100), rtol=1e-10)
    >>> info, bool(np.allclose(A @ x, 1))
    (0, True)
    """
    x, info, _, _ = _gmres(
        A, b, x0, M, rtol, atol, restart, maxiter, callback, callback_type, flexible
    )
    return x, info


def gmres_right(A, b, x0=None, **kwargs):
    """Right-preconditioned GMRES with a fixed preconditioner: :func:`fgmres` with
    ``flexible=False`` (the Arnoldi basis only)."""
    return fgmres(A, b, x0, flexible=False, **kwargs)


def _gmres(A, b, x0, M, rtol, atol, restart, maxiter, callback, callback_type, flexible):
    """The GMRES iteration; returns (x, info, iterations, relative residual history)."""
    b = np.asarray(b)
    matvec, adtype, n = _operator(A, "A")
    if n is None:  # A is a plain function: the order is b's
        n = b.shape[0] if b.ndim else 0
    b = check_rhs(b, n)
    precond, mdtype, _ = _operator(M, "M", n)
    if callback_type not in ("pr_norm", "x"):
        raise OptionError(f"callback_type must be 'pr_norm' or 'x', got {callback_type!r}")
    if callback is not None and not callable(callback):
        raise InvalidInputError(f"callback must be callable, got {callback!r}")
    if not (rtol >= 0 and atol >= 0):
        raise InvalidInputError(f"rtol and atol must be >= 0, got rtol={rtol!r}, atol={atol!r}")
    if maxiter is None:
        maxiter = min(10 * n, 1000)
    if restart is None:
        restart = maxiter
    if int(maxiter) < 1 or int(restart) < 1:
        raise InvalidInputError(f"maxiter and restart must be >= 1, got {maxiter}, {restart}")
    maxiter, restart = int(maxiter), int(restart)
    dtype = np.result_type(b.dtype, adtype, mdtype, np.float64)
    x = np.zeros(n, dtype) if x0 is None else check_rhs(x0, n, "x0").astype(dtype)
    bnorm = float(norm2(b))
    history = []
    if bnorm == 0.0:
        return np.zeros(n, dtype), 0, 0, history
    target = max(rtol * bnorm, atol)
    eps = float(np.finfo(dtype).eps)
    r = b - matvec(x) if x.any() else b.astype(dtype)
    beta = float(norm2(r))
    iterations = 0
    while True:
        if beta <= target:
            return x, 0, iterations, history
        if iterations >= maxiter:
            return x, iterations, iterations, history
        m = min(restart, maxiter - iterations)
        V = _Basis(n, dtype)
        V.append(r / beta)
        Z = [] if flexible else None
        H = np.zeros((m + 1, m), dtype)
        cs = np.zeros(m, dtype)
        sn = np.zeros(m, dtype)
        g = np.zeros(m + 1, dtype)
        g[0] = beta
        j = 0
        while j < m:
            z = V.row(j) if precond is None else precond(V.row(j))
            z = np.asarray(z).reshape(n).astype(dtype, copy=False)
            if flexible:
                Z.append(z)
            w = np.asarray(matvec(z)).reshape(n).astype(dtype, copy=True)
            h0 = float(norm2(w))
            H[: j + 1, j] = V.project_out(w)
            hnext = float(norm2(w))
            if hnext <= eps * h0:
                hnext = 0.0  # the Krylov space is invariant (A M singular on it, or x found)
            for i in range(j):
                t = np.conj(cs[i]) * H[i, j] + np.conj(sn[i]) * H[i + 1, j]
                H[i + 1, j] = -sn[i] * H[i, j] + cs[i] * H[i + 1, j]
                H[i, j] = t
            a = H[j, j]
            rho = float(np.hypot(abs(a), hnext))
            if rho == 0.0:  # A z = 0: the Krylov space cannot grow; solve what we have
                break
            cs[j], sn[j] = a / rho, hnext / rho
            H[j, j] = rho
            g[j + 1] = -sn[j] * g[j]
            g[j] = np.conj(cs[j]) * g[j]
            iterations += 1
            j += 1
            rel = abs(g[j]) / bnorm
            history.append(rel)
            if callback is not None and callback_type == "pr_norm":
                callback(rel)
            if abs(g[j]) <= target or hnext == 0.0:
                break
            V.append(w / hnext)
        if j == 0:
            return x, iterations, iterations, history
        R, rhs = H[:j, :j], g[:j]
        if not (np.isfinite(R).all() and np.isfinite(rhs).all()):
            return x, iterations, iterations, history  # a NaN or Inf from A or M
        # Least squares, not a triangular solve: where A (or M) is singular the last
        # pivots are rounding, which would blow the step up.
        y = np.linalg.lstsq(R, rhs, rcond=None)[0]
        if flexible:
            update = np.zeros(n, dtype)
            for zi, yi in zip(Z[:j], y, strict=True):
                update += yi * zi
        else:
            v = V.combine(y)
            update = v if precond is None else np.asarray(precond(v)).reshape(n)
        x = x + update
        r = b - matvec(x)
        previous, beta = beta, float(norm2(r))
        if callback is not None and callback_type == "x":
            callback(x)
        if beta > target and not beta < previous:
            # A cycle that gained nothing (rounding's floor, or a breakdown of a singular
            # preconditioned operator): another would gain nothing either.
            return x, iterations, iterations, history
