"""Baselines to compare the multilevel method with: the complex shifted-Laplacian
preconditioner inverted by this package's factorization, and the plain factorization.

The shifted Laplacian (Erlangga, Vuik and Oosterlee) is ``M = L − β k(x)² I``, where
``A = L − k(x)² I`` is the Helmholtz matrix and L its Laplacian part (absorbing boundary
terms included), with ``β = 1 − 0.5i`` in the usual sign convention. Its damping must have
the sign of the problem's own (that of the absorbing boundary, which makes the imaginary
parts of A's diagonal of one sign): with the opposite sign the preconditioner moves the
spectrum the wrong way and GMRES needs several times the iterations. By default the sign of
Im β is therefore chosen from A (``match_damping=True``): ``β = Re β − i σ |Im β|``, σ the
sign of the imaginary part of A's trace. :mod:`pastixpy.gallery` discretizes
``du/dn − i k u = 0`` (time dependence e^{−iωt}), whose σ is −1: β = 1 + 0.5i there.
"""

import time

import numpy as np
import scipy.sparse as sp

from ..errors import InvalidInputError, OptionError
from ..krylov import _gmres, check_rhs, make_watch, solve_stats, warn_stop
from .checks import check_matrix

__all__ = ["DirectSolver", "ShiftedLaplacian", "direct_solver", "shifted_laplacian_preconditioner"]

#: What the warning of a preconditioned solve that stopped short suggests.
ADVICE = (
    "See 'When it stagnates' in docs/multilevel.md: the shifted Laplacian needs a number of "
    "iterations that grows with k; give a larger maxiter, or use "
    "pastixpy.multilevel.helmholtz_solver(A), or the direct solver pastixpy.factorize(A)."
)


class _Preconditioned:
    """A factorization used as a right preconditioner for GMRES on A."""

    def __init__(self, A, factorization, setup_seconds):
        self.A = A
        self.factorization = factorization
        self.shape = A.shape
        self.stats = {
            "setup_seconds": setup_seconds,
            "factor_bytes": int(factorization.stats.get("factor_bytes", 0)),
        }
        self._apply = factorization.aspreconditioner().matvec

    def aspreconditioner(self):
        """The factors' inverse as a scipy ``LinearOperator`` (no refinement)."""
        return self.factorization.aspreconditioner()

    def solve(
        self,
        b,
        x0=None,
        rtol=1e-6,
        atol=0.0,
        maxiter=None,
        callback=None,
        callback_type="pr_norm",
        restart=None,
        stagnation=10,
        max_seconds=None,
    ):
        """Right-preconditioned GMRES on A (fixed preconditioner: the Arnoldi basis only,
        one factorization solve per iteration). Returns ``(x, info)`` as scipy does:
        ``info`` is 0 when converged, else the number of iterations made.

        ``maxiter`` defaults to 1000. The solve watches its convergence as
        :meth:`pastixpy.multilevel.MultilevelSolver.solve` does, and stops early with
        ``info > 0`` and a :class:`~pastixpy.errors.StagnationWarning` where the reduction
        per iteration over the last ``stagnation`` iterations (int window, or a dict with
        ``window`` and ``rate``, the worst acceptable mean reduction factor per iteration,
        none by default: this method is slow by nature) projects more than ``maxiter``
        iterations, or more than ``max_seconds`` (None: no limit), to reach rtol;
        ``stagnation=None`` disables the watch. ``stats["solve"]`` has the same fields.
        """
        watch = make_watch(stagnation, max_seconds)
        b = check_rhs(b, self.shape[0])
        maxiter = 1000 if maxiter is None else maxiter
        t = time.perf_counter()
        result = _gmres(
            self.A,
            b,
            x0,
            self._apply,
            rtol,
            atol,
            restart,
            maxiter,
            callback,
            callback_type,
            False,
            watch,
        )
        self.stats["solve"] = solve_stats(result, time.perf_counter() - t)
        warn_stop(f"{type(self).__name__} solve", result, rtol, maxiter, ADVICE)
        return result.x, result.info


class ShiftedLaplacian(_Preconditioned):
    """The shifted-Laplacian preconditioner, made by
    :func:`shifted_laplacian_preconditioner`.

    Attributes
    ----------
    M : csr_array
        The shifted operator ``L − β k² I``.
    shift : complex
        β as used (its imaginary part's sign matched to A's damping).
    factorization : pastixpy.Factorization
        Of M.
    """

    def __init__(self, A, M, shift, factorization, setup_seconds):
        super().__init__(A, factorization, setup_seconds)
        self.M = M
        self.shift = shift
        self.stats["shift"] = shift


class DirectSolver(_Preconditioned):
    """A factored by this package: :meth:`solve` gives the refined solution at once."""

    def solve(self, b, x0=None, rtol=1e-6, **kwargs):
        """The refined direct solution; ``(x, 0)``."""
        b = check_rhs(b, self.shape[0])
        t = time.perf_counter()
        x = self.factorization.solve(b)
        self.stats["solve"] = {
            "iterations": 0,
            "seconds": time.perf_counter() - t,
            "converged": True,
            "stop": "converged",
        }
        return x, 0


def shifted_laplacian_preconditioner(
    A,
    *,
    k=None,
    laplacian=None,
    shift=1 - 0.5j,
    match_damping=True,
    threads=1,
    precision="double",
    compress=None,
):
    """Factor the complex shifted Laplacian of a Helmholtz problem.

    Parameters
    ----------
    A : sparse matrix, or a problem from :func:`pastixpy.gallery.helmholtz_fd`
        The Helmholtz matrix ``L − k² I``. A problem brings its own L and k(x).
    k : float or array_like, optional
        The wavenumber, or k(x) at each unknown; with A alone, ``M = A + (1 − β) k² I``.
    laplacian : sparse matrix, optional
        L itself (boundary terms included); then ``M = L − β k² I``.
    shift : complex
        β, ``1 − 0.5i`` by default.
    match_damping : bool
        Give Im β the sign that adds damping of the sign A already has (see the
        module's description). False takes ``shift`` as it is.
    threads, precision, compress
        Passed to :func:`pastixpy.factorize`.

    Returns
    -------
    ShiftedLaplacian
        With ``aspreconditioner()``, ``solve(b, rtol=, maxiter=, callback=)`` and ``stats``.

    Examples
    --------
    >>> from pastixpy.gallery import helmholtz_fd
    >>> problem = helmholtz_fd(20)
    >>> sl = shifted_laplacian_preconditioner(problem)
    >>> sl.shift
    (1+0.5j)
    >>> x, info = sl.solve(problem.b, rtol=1e-6)
    >>> info
    0
    """
    from ..api import factorize

    t = time.perf_counter()
    if hasattr(A, "laplacian") and hasattr(A, "k") and hasattr(A, "A"):
        if laplacian is None:
            laplacian = A.laplacian
        if k is None:
            k = A.k
        A = A.A
    A = check_matrix(A)
    n = A.shape[0]
    if k is None:
        raise InvalidInputError(
            "the shifted Laplacian needs the wavenumber: pass k= (a number, or k(x) at each "
            "unknown), or a problem made by pastixpy.gallery.helmholtz_fd"
        )
    k2 = np.broadcast_to(np.asarray(k, dtype=np.float64) ** 2, (n,)).copy()
    if not np.isfinite(k2).all():
        raise InvalidInputError("k has NaN or Inf values")
    try:
        beta = complex(shift)
    except TypeError:
        raise OptionError(f"shift must be a number, got {shift!r}") from None
    if match_damping:
        sigma = np.sign(np.sum(A.diagonal().imag)) if np.iscomplexobj(A.data) else 0.0
        if sigma != 0:
            beta = complex(beta.real, -sigma * abs(beta.imag))
    if laplacian is not None:
        L = check_matrix(laplacian, "laplacian")
        if L.shape != A.shape:
            raise InvalidInputError(f"laplacian has shape {L.shape}, A {A.shape}")
        M = L - sp.diags_array(beta * k2)
    else:
        M = A + sp.diags_array((1 - beta) * k2)
    M = sp.csr_array(M)
    F = factorize(
        sp.csc_array(M), threads=threads, refine="none", precision=precision, compress=compress
    )
    return ShiftedLaplacian(A, M, beta, F, time.perf_counter() - t)


def direct_solver(A, *, threads=1, **options):
    """A factored by :func:`pastixpy.factorize` (refined solves), as a baseline with the
    same ``solve``/``aspreconditioner``/``stats`` surface."""
    from ..api import factorize

    t = time.perf_counter()
    A = check_matrix(A)
    F = factorize(sp.csc_array(A), threads=threads, **options)
    return DirectSolver(A, F, time.perf_counter() - t)
