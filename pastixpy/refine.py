"""Refinement: iterative refinement, then a Krylov method preconditioned by the factors.

It sees the factors only through a ``solve`` callable and the matrix only through an
operator (``matvec``, and ``residual_maxima`` where a faster pass exists): a factor in
another precision, a compressed one or a preconditioner from elsewhere plug in alike.

The backward error of x for A x = b is ‖b − A x‖∞ / (‖A‖∞ ‖x‖∞ + ‖b‖∞), column by
column for several right-hand sides.
"""

import numpy as np
import scipy.sparse.linalg as sla

from .krylov import fgmres

#: Refinement stops at this many units of roundoff of backward error (the precision's
#: floor): steps below it change the last bits only.
FLOOR = 10


class Operator:
    """A matrix seen through its product alone: ``Operator(lambda X: A @ X)``."""

    def __init__(self, matvec):
        self.matvec = matvec

    def residual_maxima(self, x, b):
        return None


def _max_abs(a):
    """Largest magnitude of each column of a 2-D array; NaN where a column holds one."""
    if a.shape[0] == 0:
        return np.zeros(a.shape[1])
    return np.abs(a).max(axis=0)


def backward_error(op, x, b, norm_a):
    """Backward error of every column of x (a 2-D array) for op(A) x = b.

    ``op.residual_maxima(x, b)`` gives the maxima of the residual, x and b in one pass
    when it can (no n x k residual array, whose fresh pages cost more than the
    arithmetic); else the residual is formed with ``op.matvec``.
    """
    found = op.residual_maxima(x, b)
    if found is not None:
        num, norm_x, norm_b = found
    else:
        r = op.matvec(x)
        np.subtract(b, r, out=r)
        num, norm_x, norm_b = _max_abs(r), _max_abs(x), _max_abs(b)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        den = norm_a * norm_x + norm_b
        berr = num / den
        # ‖A‖‖x‖ beyond the largest float (entries scaled by 1e±150): the same
        # ratio with x's norm divided out of both terms first.
        over = np.isinf(den) & (norm_x > 0)
        if over.any():
            berr[over] = (num[over] / norm_x[over]) / (norm_a + norm_b[over] / norm_x[over])
    berr[(den == 0) & (num == 0)] = 0.0  # x = b = 0 exactly
    # A NaN or Inf anywhere (solution, residual) is no solution at all.
    return np.where(np.isfinite(berr), berr, np.inf)


def refine(op, solve, b, x, norm_a, tol, maxiter=10, krylov="gmres", always=True, ir_steps=None):
    """Improve ``x`` until its backward error is at most ``tol`` (if it can).

    Iterative refinement runs while each step at least halves the backward error
    and it is above the floor of the precision (:data:`FLOOR` units of roundoff);
    columns still above ``tol`` then go through GMRES (or CG, ``krylov="cg"``, for SPD matrices)
    preconditioned by ``solve``. With ``always=False`` nothing is done for
    columns already at ``tol``.

    Parameters
    ----------
    op : operator
        ``op.matvec(X)`` = A X on 2-D arrays (and ``op.residual_maxima``, see
        :func:`backward_error`; :class:`Operator` wraps a bare product).
    solve : callable
        ``solve(R)`` ≈ A⁻¹ R on 2-D arrays; it may overwrite R (with its result: the
        residuals are not needed after).
    b, x : ndarray (n, k)
    norm_a : float
        ‖A‖∞.
    tol : float
    maxiter : int
        Iterative refinement steps, and Krylov iterations (times 10) per column.
    krylov : {"gmres", "cg", None}
    always : bool
        Refine columns already at ``tol`` too, down to the precision's floor.
    ir_steps : int, optional
        At most this many steps of iterative refinement before the Krylov method
        (default ``maxiter``; 0 goes straight to it).

    Returns
    -------
    x : ndarray
    berr : ndarray
        Backward error of each column.
    steps : int
        Refinement steps and Krylov iterations done, in all.
    used : str
        What ran: ``"none"``, ``"ir"``, ``"ir+gmres"`` or ``"ir+cg"``.
    """
    floor = FLOOR * np.finfo(x.dtype).eps
    berr = backward_error(op, x, b, norm_a)
    steps = 0
    target = floor if always else tol
    for _ in range(maxiter if ir_steps is None else ir_steps):
        active = berr > target
        if not active.any():
            break
        # All columns active (the usual case): slices, so that no n x k array is copied
        # by fancy indexing; each one costs as much as a pass of the solve's kernels.
        cols = slice(None) if active.all() else np.flatnonzero(active)
        xa, ba = x[:, cols], b[:, cols]
        r = op.matvec(xa)
        np.subtract(ba, r, out=r)
        x_new = solve(r)
        x_new += xa
        berr_new = backward_error(op, x_new, ba, norm_a)
        better = berr_new < berr[cols]
        if better.all() and isinstance(cols, slice):
            x = x_new
        else:
            kept = np.flatnonzero(active)[better]
            x[:, kept] = x_new[:, better]
        steps += 1
        progress = better & (berr_new <= 0.5 * berr[cols])
        berr[cols] = np.where(better, berr_new, berr[cols])
        if not progress.any():
            break
    used = "ir" if steps else "none"
    if krylov is not None and (berr > tol).any():
        x, berr, its = _krylov(op, solve, b, x, norm_a, tol, berr, maxiter * 10, krylov)
        used = krylov if ir_steps == 0 else f"ir+{krylov}"
        steps += its
    return x, berr, steps, used


def _krylov(op, solve, b, x, norm_a, tol, berr, maxiter, method):
    """GMRES/CG on each column whose backward error is above ``tol``."""
    n = b.shape[0]
    dtype = x.dtype
    # The Krylov method's vectors are at least double precision: both operators take
    # them in x's precision (the factors' and the kernels'); solve() always a copy,
    # as it may overwrite its argument.
    A = sla.LinearOperator(
        (n, n),
        matvec=lambda v: op.matvec(v.reshape(n, 1).astype(dtype, copy=False)).ravel(),
        dtype=dtype,
    )
    M = sla.LinearOperator(
        (n, n), matvec=lambda v: solve(v.reshape(n, 1).astype(dtype)).ravel(), dtype=dtype
    )
    iterations = 0
    for j in np.flatnonzero(berr > tol):
        count = [0]

        def tick(_, count=count):
            count[0] += 1

        with np.errstate(over="ignore", invalid="ignore"):
            scale = norm_a * np.abs(x[:, j]).max() + np.abs(b[:, j]).max()
        if np.isnan(scale):
            continue  # x holds a NaN: no Krylov method starts from it (berr stays inf)
        atol = 0.5 * tol * min(scale, np.finfo(np.float64).max)
        if method == "cg":
            xj, _ = sla.cg(
                A, b[:, j], x0=x[:, j], rtol=0.0, atol=atol, maxiter=maxiter, M=M, callback=tick
            )
        else:
            # Right-preconditioned: the true residual is the one minimised, and each
            # iteration costs one solve (scipy's gmres would add two per restart).
            xj, _ = fgmres(
                A,
                b[:, j],
                x[:, j],
                M=M,
                rtol=0.0,
                atol=atol,
                restart=30,
                maxiter=maxiter,
                callback=tick,
            )
        iterations += count[0]
        xj = xj.reshape(n, 1).astype(dtype, copy=False)
        e = backward_error(op, xj, b[:, j : j + 1], norm_a)[0]
        if e < berr[j]:
            x[:, j] = xj[:, 0]
            berr[j] = e
    return x, berr, iterations
