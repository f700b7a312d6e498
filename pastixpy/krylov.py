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

import math
import time
import warnings
from dataclasses import dataclass, field
from numbers import Integral, Real

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as sla

from .errors import InvalidInputError, OptionError, StagnationWarning
from .norms import norm2

__all__ = ["Watch", "fgmres", "gmres_right", "check_rhs"]

#: Basis vectors are stored in blocks of this many rows, so that the orthogonalization
#: runs as matrix-vector products without a preallocated (restart × n) array.
BLOCK = 16

#: A window of iterations that reduces the residual by less than this fraction made no
#: progress (unpreconditioned GMRES on the gallery's Helmholtz problems, whose plateaus
#: are long, still gains 8% over 10 iterations at its slowest).
NO_PROGRESS = 1e-3


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


@dataclass
class _Result:
    """What :func:`_gmres` returns: the iterate, scipy's ``info``, the iterations, the
    relative residual after each one, why it stopped (``"converged"``, ``"stagnated"``,
    ``"maxiter"``, ``"time"`` or ``"breakdown"``: a NaN or Inf from A or M, or A M z = 0
    from the start), the true relative residual ``‖b − A x‖ / ‖b‖`` reached, and the
    watch's summary (empty without a watch)."""

    x: np.ndarray
    info: int
    iterations: int
    history: list
    stop: str
    residual: float
    summary: dict = field(default_factory=dict)


class Watch:
    """Watches a GMRES run's convergence and its time, and says when to stop it early.

    After each iteration it measures ``rate``, the mean factor by which the relative
    residual fell per iteration over the last ``window`` iterations (fewer at the
    start), and projects the iterations and seconds still needed to reach the
    tolerance at that rate. It stops the run:

    * ``"time"``: ``max_seconds`` have passed; or, once ``window`` iterations are made,
      the projected total time exceeds ``max_seconds``;
    * ``"stagnated"``: once ``window`` iterations are made, the window reduced the
      residual by less than 0.1% (``NO_PROGRESS``); or the projected total iterations
      exceed ``maxiter``; or ``rate`` is worse than ``max_rate`` and the tolerance is
      more than another window away at it.

    GMRES has plateaus, where the recent rate says little of the next iterations: the
    projections use the better of the recent rate and the mean rate since the start,
    so a run whose average progress would still reach the tolerance in time goes on
    (on the gallery's problems, the shifted Laplacian's runs never projected more than
    their actual count, unpreconditioned GMRES at most 2.5 times it). ``max_rate`` is
    for methods that promise a fast rate, as a multilevel cycle does.

    Parameters
    ----------
    window : int
        Iterations the recent rate is measured over (>= 2).
    max_rate : float, optional
        Worst acceptable mean reduction factor per iteration, in (0, 1); None for none.
    max_seconds : float, optional
        Time limit of the run; None for none.
    stagnation : bool
        False to test the time only (``window`` then serves the statistics' rate).
    """

    def __init__(self, window=10, max_rate=None, max_seconds=None, stagnation=True):
        self.window, self.max_rate, self.max_seconds = window, max_rate, max_seconds
        self.stagnation = stagnation
        self.start(1.0, 1.0, 1)

    @property
    def stops(self):
        """Whether this watch may stop a run (False: it only measures)."""
        return self.stagnation or self.max_seconds is not None

    def start(self, initial, target, maxiter):
        """Start the clock of a run whose relative residual is ``initial`` at iteration 0
        and must reach ``target``, in at most ``maxiter`` iterations."""
        self.residuals = [initial]
        self.target, self.maxiter = target, maxiter
        self.why = None
        self.t0 = time.perf_counter()

    def elapsed(self):
        return time.perf_counter() - self.t0

    def rate(self, span=None):
        """Mean reduction factor per iteration over the last ``span`` iterations (the
        window by default; all of them if fewer), None before the first."""
        its = len(self.residuals) - 1
        span = min(self.window if span is None else span, its)
        if span < 1:
            return None
        old, new = self.residuals[-1 - span], self.residuals[-1]
        return 0.0 if old == 0.0 else (new / old) ** (1.0 / span)

    def remaining(self, rate):
        """Iterations still needed at ``rate`` per iteration (inf when it is >= 1)."""
        now = self.residuals[-1]
        if now <= self.target:
            return 0.0
        if rate is None or rate >= 1.0:
            return math.inf
        if rate == 0.0:
            return 1.0
        return math.log(self.target / now) / math.log(rate)

    def check(self, relres):
        """Record the relative residual of one more iteration; the reason to stop
        (``"stagnated"`` or ``"time"``, with the rule that fired in :attr:`why`), or None
        to go on."""
        self.residuals.append(relres)
        if not self.stops or relres <= self.target:
            return None
        its = len(self.residuals) - 1
        elapsed = self.elapsed()
        if self.max_seconds is not None and elapsed > self.max_seconds:
            self.why = f"it ran past max_seconds={self.max_seconds:g}"
            return "time"
        if its < self.window:
            return None
        recent = self.rate()
        if self.stagnation and recent**self.window > 1.0 - NO_PROGRESS:
            self.why = (
                f"it made no progress (less than {NO_PROGRESS:.1%} over the last "
                f"{self.window} iterations)"
            )
            return "stagnated"
        # The better of the recent rate and the average since the start: a plateau
        # after good progress does not stop a run that its average would finish.
        hopeful = min(recent, self.rate(its))
        more = self.remaining(hopeful)
        if self.stagnation and its + more > self.maxiter:
            self.why = (
                f"even at its best mean rate ({hopeful:.3g} per iteration) it would need "
                f"more than maxiter={self.maxiter} iterations"
            )
            return "stagnated"
        if self.max_seconds is not None and elapsed * (1.0 + more / its) > self.max_seconds:
            self.why = (
                f"even at its best mean rate ({hopeful:.3g} per iteration) it would run "
                f"past max_seconds={self.max_seconds:g}"
            )
            return "time"
        if (
            self.stagnation
            and self.max_rate is not None
            and recent > self.max_rate
            and self.remaining(recent) > self.window
        ):
            self.why = f"its reduction per iteration is worse than rate={self.max_rate:g}"
            return "stagnated"
        return None

    def summary(self):
        """``rate`` (recent), ``window`` (the iterations it is measured over),
        ``projected_iterations`` and ``projected_seconds`` (more, at that rate, to reach
        the tolerance; 0 once reached, inf without progress), and ``why`` (the rule that
        stopped the run, or None)."""
        its = len(self.residuals) - 1
        recent = self.rate()
        more = self.remaining(recent)
        per_iteration = self.elapsed() / its if its else math.nan
        return {
            "rate": None if recent is None else float(recent),
            "window": min(self.window, its),
            "projected_iterations": float(more),
            "projected_seconds": float(more * per_iteration) if more else 0.0,
            "why": self.why,
        }


def parse_stagnation(stagnation, default_rate, argname="stagnation"):
    """``stagnation`` as ``(window, max_rate)``, or None: an int is the window (with
    ``default_rate``), a dict gives ``window`` and/or ``rate``, None disables."""
    if stagnation is None:
        return None
    if isinstance(stagnation, Integral) and not isinstance(stagnation, bool):
        window, rate = stagnation, default_rate
    elif isinstance(stagnation, dict):
        unknown = set(stagnation) - {"window", "rate"}
        if unknown:
            raise OptionError(
                f"{argname} takes 'window' and 'rate', got unknown key(s) {sorted(unknown)}"
            )
        window = stagnation.get("window", 10)
        rate = stagnation.get("rate", default_rate)
    else:
        raise OptionError(
            f"{argname} must be None (no watch), an integer window >= 2, or a dict with "
            f"'window' and 'rate', got {stagnation!r}"
        )
    if isinstance(window, bool) or not isinstance(window, Integral) or window < 2:
        raise OptionError(f"{argname} window must be an integer >= 2, got {window!r}")
    if rate is not None and (
        isinstance(rate, bool) or not isinstance(rate, Real) or not 0 < rate < 1
    ):
        raise OptionError(f"{argname} rate must be None or a number in (0, 1), got {rate!r}")
    return int(window), None if rate is None else float(rate)


def check_max_seconds(max_seconds):
    """None, or a positive finite number of seconds."""
    if max_seconds is not None and (
        isinstance(max_seconds, bool)
        or not isinstance(max_seconds, Real)
        or not 0 < max_seconds < math.inf
    ):
        raise OptionError(f"max_seconds must be None or a positive number, got {max_seconds!r}")
    return None if max_seconds is None else float(max_seconds)


def make_watch(stagnation, max_seconds, default_rate=None):
    """A :class:`Watch` from a solve's ``stagnation`` and ``max_seconds`` arguments
    (validated); with both None, one that only measures (``stops=False``)."""
    parsed = parse_stagnation(stagnation, default_rate)
    max_seconds = check_max_seconds(max_seconds)
    if parsed is None:
        # No stagnation test: the window only serves the statistics' rate, and the time
        # limit (if any) is tested at every iteration whatever the window.
        return Watch(10, None, max_seconds, stagnation=False)
    return Watch(parsed[0], parsed[1], max_seconds)


def stop_message(what, result, rtol, maxiter, advice):
    """The warning of a run that stopped short of its tolerance: what it saw, what the
    recent rate projects, and what to try."""
    s = result.summary
    why = s.get("why") or {
        "stagnated": "a restart cycle gained nothing",
        "maxiter": f"it reached maxiter={maxiter}",
        "time": "it ran out of time",
        "breakdown": "it broke down (a NaN or Inf from the matrix or the preconditioner)",
    }.get(result.stop, result.stop)
    text = (
        f"{what} stopped ({result.stop}) after {result.iterations} of at most {maxiter} "
        f"iterations, because {why}: relative residual {result.residual:.2e} for rtol "
        f"{rtol:.0e}"
    )
    if s.get("rate") is not None:
        span = "iteration" if s["window"] == 1 else f"{s['window']} iterations"
        text += f"; over the last {span} it fell by a factor {s['rate']:.3g} per iteration"
        more = s["projected_iterations"]
        if math.isinf(more):
            text += ", so at that rate it would never reach rtol"
        elif more > 0:
            count = math.ceil(more)
            text += (
                f", so at that rate rtol needs about {count} more "
                f"iteration{'s' if count > 1 else ''} (about {s['projected_seconds']:.3g} s)"
            )
    return f"{text}. {advice}".rstrip()


def solve_stats(result, seconds):
    """A solve's ``stats["solve"]``: ``iterations``, ``seconds``, ``residuals``,
    ``converged``, ``stop``, ``residual`` and the watch's summary (``rate``, ``window``,
    ``projected_iterations``, ``projected_seconds``)."""
    return {
        "iterations": result.iterations,
        "seconds": seconds,
        "residuals": result.history,
        "converged": result.info == 0,
        "stop": result.stop,
        "residual": result.residual,
        **result.summary,
    }


def warn_stop(what, result, rtol, maxiter, advice, stacklevel=3):
    """Warn (:class:`~pastixpy.errors.StagnationWarning`) where a run did not converge."""
    if result.stop != "converged":
        warnings.warn(
            stop_message(what, result, rtol, maxiter, advice),
            StagnationWarning,
            stacklevel=stacklevel,
        )


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
    stagnation=None,
    max_seconds=None,
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
    stagnation : int or dict, optional
        Watch the convergence (see :class:`Watch`) and stop early, with a
        :class:`~pastixpy.errors.StagnationWarning`, where at the recent reduction per
        iteration rtol would need more than ``maxiter`` iterations: an int is the window
        of iterations the rate is measured over, a dict gives ``window`` and ``rate``
        (the worst acceptable mean reduction factor per iteration). None (default): no
        watch. Plateaus make the projection pessimistic (unpreconditioned GMRES on the
        gallery's Helmholtz problems projects up to 2.5 times its iterations): give
        ``maxiter`` that room.
    max_seconds : float, optional
        Stop, with the same warning, once this many seconds have passed or once the
        recent rate projects more; None (default) for no limit.

    Returns
    -------
    x : ndarray
        The last iterate (the best one found, also when stopped early).
    info : int
        0 when converged, else the number of iterations made (scipy's convention),
        whether they ran to ``maxiter`` or were stopped early.

    Examples
    --------
    >>> import scipy.sparse as sp
    >>> A = sp.diags_array([np.arange(1.0, 101.0)], offsets=[0])
    >>> x, info = fgmres(A, np.ones(100), rtol=1e-10)
    >>> info, bool(np.allclose(A @ x, 1))
    (0, True)
    """
    watch = make_watch(stagnation, max_seconds)
    result = _gmres(
        A, b, x0, M, rtol, atol, restart, maxiter, callback, callback_type, flexible, watch
    )
    if watch.stops:
        warn_stop("fgmres", result, rtol, _default_maxiter(maxiter, result), "", stacklevel=3)
    return result.x, result.info


def _default_maxiter(maxiter, result):
    return min(10 * len(result.x), 1000) if maxiter is None else maxiter


def gmres_right(A, b, x0=None, **kwargs):
    """Right-preconditioned GMRES with a fixed preconditioner: :func:`fgmres` with
    ``flexible=False`` (the Arnoldi basis only)."""
    return fgmres(A, b, x0, flexible=False, **kwargs)


def _gmres(
    A, b, x0, M, rtol, atol, restart, maxiter, callback, callback_type, flexible, watch=None
):
    """The GMRES iteration, watched by ``watch`` (a :class:`Watch`, or None); returns a
    :class:`_Result`."""
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
        return _Result(np.zeros(n, dtype), 0, 0, history, "converged", 0.0)
    target = max(rtol * bnorm, atol)
    eps = float(np.finfo(dtype).eps)
    r = b - matvec(x) if x.any() else b.astype(dtype)
    beta = float(norm2(r))
    if watch is not None:
        watch.start(beta / bnorm, target / bnorm, maxiter)
    iterations = 0
    stop = None

    def done(x, reason):
        info = 0 if reason == "converged" else iterations
        summary = watch.summary() if watch is not None else {}
        return _Result(x, info, iterations, history, reason, beta / bnorm, summary)

    while True:
        if beta <= target:
            return done(x, "converged")
        if stop is not None:
            return done(x, stop)
        if iterations >= maxiter:
            return done(x, "maxiter")
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
            if watch is not None:
                stop = watch.check(rel)
            # On a stop, form the iterate this cycle has reached, then return it.
            if abs(g[j]) <= target or hnext == 0.0 or stop is not None:
                break
            V.append(w / hnext)
        if j == 0:
            return done(x, "breakdown")
        R, rhs = H[:j, :j], g[:j]
        if not (np.isfinite(R).all() and np.isfinite(rhs).all()):
            return done(x, "breakdown")  # a NaN or Inf from A or M
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
            return done(x, "stagnated")
