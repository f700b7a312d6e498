"""The user's surface: :func:`helmholtz_solver` → :class:`MultilevelSolver`."""

import time
from dataclasses import dataclass
from numbers import Integral

import numpy as np
import scipy.sparse.linalg as sla

from ..errors import OptionError
from ..krylov import _gmres, check_rhs, make_watch, solve_stats, warn_stop
from .checks import check_matrix, structurally_nonsingular
from .coarse import parse_coarse_solver
from .coarsening import COARSENINGS
from .cycle import Cycle, parse_cycle
from .hierarchy import build_levels, operator_bytes
from .options import parse
from .smoothers import make_f_relaxation, make_smoother
from .transfer import TRANSFERS, parse_test_vectors

__all__ = ["MultilevelSolver", "helmholtz_solver"]

#: Accelerations of :meth:`MultilevelSolver.solve`.
ACCELERATIONS = ("fgmres", "gmres")

#: The worst mean reduction factor per outer iteration that :meth:`MultilevelSolver.solve`
#: accepts by default: a working hierarchy reduces the residual by 10 to 1000 per
#: iteration, so a window of iterations at 0.8 (a third in five) is a failing one.
STAGNATION_RATE = 0.8

#: What the warning of a solve that stopped short suggests.
ADVICE = (
    "See 'When it stagnates' in docs/multilevel.md: check that the problem has an absorbing "
    "boundary or damping; try transfer=('ideal-corrected', {'distance': 2}) or more test "
    "vectors (test_vectors=64); in 2D, the direct solver pastixpy.factorize(A) is faster."
)

#: Precisions of the coarse levels (``precision=``).
PRECISIONS = ("single", "double")


@dataclass
class _Options:
    """helmholtz_solver's options, validated once."""

    smoother: object
    f_relaxation: dict | None
    test_count: int
    test_steps: int
    test_coarse_steps: int
    coarsening: str | None
    coarsening_params: dict
    coarsening_callable: object
    transfer: str | None
    transfer_params: dict
    transfer_callable: object
    cycle: str
    cycle_params: dict
    max_levels: int
    max_coarse: int
    max_ratio: float
    coarse_params: dict
    threads: int
    precision: str = "double"


def helmholtz_solver(
    A,
    *,
    smoother=("chebyshev", {"degree": 4, "ratio": 30.0, "sweeps": 2}),
    f_relaxation=("jacobi", {"sweeps": 1}),
    test_vectors=("relaxed", {"count": 48, "steps": 6, "coarse_steps": 2}),
    coarsening=("cr", {"theta": 0.6, "gamma": 0.85, "max_ratio": 0.6}),
    transfer=("ideal-corrected", {"steps": 3, "mu": 1e-2, "distance": 2, "max_entries": 8}),
    cycle=("K", {"inner": 3}),
    max_levels=10,
    max_coarse=400,
    coarse_solver=("pastix", {"drop": 0.02}),
    precision="single",
    seed=0,
    threads=1,
):
    """A multilevel preconditioner for indefinite (Helmholtz) systems, built on A alone.

    The reduction-based multilevel method of Richefort, Lecouvez, Falgout and Ramet, in
    outline: a C/F splitting whose F block A_ff is diagonally dominant; an interpolation
    fitted by least squares to random vectors relaxed by the smoother (the near-kernel
    that the coarse level must represent), corrected towards the ideal interpolation
    ``[−A_ff⁻¹ A_fc; I]``; the matching restriction; Galerkin coarse operators; a
    polynomial smoother for indefinite matrices with F-relaxation; a K-cycle; the
    coarsest level factored by this package. See ``docs/multilevel.md``.

    Parameters
    ----------
    A : sparse matrix (any scipy format), or dense array
        Square, real or complex, symmetric or not.
    smoother : str or (str, dict)
        ``"chebyshev"`` (``degree``, ``ratio``, ``sweeps``: Chebyshev on the row-scaled
        normal equations, which never amplifies an error component),
        ``"polynomial"`` (``degree``, ``sweeps``: the GMRES polynomial of A),
        ``"jacobi"`` (``omega``, ``sweeps``), ``"kaczmarz"`` (``omega``, ``sweeps``) or
        ``"none"``.
    f_relaxation : str or (str, dict)
        ``"jacobi"`` (``omega`` in (0, 1], ``sweeps``) on the F points, or ``"none"``.
    test_vectors : int or ("relaxed", dict)
        Number of test vectors (``count``) and the smoother's applications to each
        (``steps``). A coarse level relaxes the C values of the level above's test
        vectors ``coarse_steps`` times (0: fresh random vectors on every level).
    coarsening : str, (str, dict) or callable
        ``"cr"`` (``theta``: strength threshold, ``gamma``: F-row budget,
        ``max_ratio``), ``"mis"`` (``theta``, ``max_ratio``), ``"geometric"``
        (``shape``: the grid, numbered in C order; standard 2x coarsening while the
        grid lasts, then ``"cr"``), or ``f(A, level) -> bool array`` (True for F).
        Coarsening stops where more than ``max_ratio`` of the unknowns would stay.
    transfer : str, (str, dict) or callable
        ``"ideal-corrected"`` (``steps``, ``mu``, ``distance``), ``"ls"``
        (``distance``), ``"ideal-exact"`` (``drop``; dense, small problems), or
        ``f(A, fmask, V) -> W`` returning the F rows of P (n_F × n_C) from the test
        vectors V.
    cycle : str or (str, dict)
        ``"K"`` (``inner``, ``inner_rtol``), ``"W"`` (``inner``) or ``"V"``.
    max_levels : int
        Most levels, the coarsest included.
    max_coarse : int
        A level this small is the coarsest.
    coarse_solver : str or (str, dict)
        ``"pastix"`` with ``drop`` (sparsification before factoring, 0 for none),
        ``precision`` (``"double"``, ``"mixed"`` or ``"single"``: single-precision
        factors; by default that of ``precision``, double where the finest level is the
        coarsest) and ``compress`` (a block low-rank tolerance).
    precision : {"single", "double"}
        Precision of the hierarchy below the finest level: ``"single"`` stores the
        coarse operators (levels 1 and below), every level's interpolation and
        restriction, and runs the cycle on the coarse levels (their vectors, smoothers,
        inner Krylov iterations), in complex64 (float32 for real A). The finest
        level's operator and the outer Krylov iteration, whose residual is the true
        one, stay in double, so the solution reaches any ``rtol`` of double precision.
        ``"double"``: everything in double.
    seed : int
        Seed of the test vectors and of the smoothers' Arnoldi start vectors.
    threads : int
        Threads of the coarsest factorization.

    Returns
    -------
    MultilevelSolver

    Raises
    ------
    InvalidInputError
        A is not square, empty, or has NaN/Inf values.
    OptionError
        An option is not understood (the message says what it takes).
    SingularMatrixError
        A is structurally singular (an empty row or column: the columns are named), or
        the coarsest level is singular.

    Examples
    --------
    >>> from pastixpy.gallery import helmholtz_fd
    >>> from pastixpy.multilevel import helmholtz_solver
    >>> problem = helmholtz_fd(20)
    >>> ml = helmholtz_solver(problem.A, max_coarse=100)
    >>> x, info = ml.solve(problem.b, rtol=1e-6)
    >>> info, bool(np.linalg.norm(problem.b - problem.A @ x) <= 1e-6 * np.linalg.norm(problem.b))
    (0, True)
    """
    t0 = time.perf_counter()
    opts = _parse_options(
        smoother,
        f_relaxation,
        test_vectors,
        coarsening,
        transfer,
        cycle,
        max_levels,
        max_coarse,
        coarse_solver,
        seed,
        threads,
        precision,
    )
    rng = np.random.default_rng(seed)
    # No name holds the CSR copy here: build_levels may free it after the first level.
    levels = build_levels(structurally_nonsingular(check_matrix(A)), opts, rng, original=A)
    return MultilevelSolver(levels, opts, time.perf_counter() - t0)


def _parse_options(
    smoother,
    f_relaxation,
    test_vectors,
    coarsening,
    transfer,
    cycle,
    max_levels,
    max_coarse,
    coarse_solver,
    seed,
    threads,
    precision="single",
):
    for name, value, minimum in (
        ("max_levels", max_levels, 1),
        ("max_coarse", max_coarse, 1),
        ("threads", threads, 1),
    ):
        if isinstance(value, bool) or not isinstance(value, Integral) or value < minimum:
            raise OptionError(f"{name} must be an integer >= {minimum}, got {value!r}")
    if isinstance(seed, bool) or not isinstance(seed, Integral):
        raise OptionError(f"seed must be an integer, got {seed!r}")
    tv = parse_test_vectors(test_vectors)
    if callable(coarsening):
        cname, cparams, ccall = None, {}, coarsening
        max_ratio = COARSENINGS["cr"]["max_ratio"][0]
    else:
        cname, cparams = parse(coarsening, COARSENINGS, "coarsening")
        ccall = None
        max_ratio = cparams["max_ratio"]
    if callable(transfer):
        tname, tparams, tcall = None, {}, transfer
    else:
        tname, tparams = parse(transfer, TRANSFERS, "transfer")
        tcall = None
    kind, cycle_params = parse_cycle(cycle)
    if precision not in PRECISIONS:
        raise OptionError(f"precision must be one of {list(PRECISIONS)}, got {precision!r}")
    _, coarse_params = parse_coarse_solver(coarse_solver)
    return _Options(
        smoother=make_smoother(smoother),
        f_relaxation=make_f_relaxation(f_relaxation),
        test_count=tv["count"],
        test_steps=tv["steps"],
        test_coarse_steps=tv["coarse_steps"],
        coarsening=cname,
        coarsening_params=cparams,
        coarsening_callable=ccall,
        transfer=tname,
        transfer_params=tparams,
        transfer_callable=tcall,
        cycle=kind,
        cycle_params=cycle_params,
        max_levels=int(max_levels),
        max_coarse=int(max_coarse),
        max_ratio=max_ratio,
        coarse_params=coarse_params,
        threads=int(threads),
        precision=precision,
    )


class MultilevelSolver:
    """A multilevel hierarchy and its cycle, made by :func:`helmholtz_solver`.

    Attributes
    ----------
    levels : list of Level
        Finest first; the last one holds the factorization.
    stats : dict
        ``setup_seconds`` (total) and ``setup_phases`` (seconds by phase, all levels
        together), ``levels``, ``sizes``, ``nnz``, ``operator_complexity``,
        ``grid_complexity``, ``memory_bytes`` (operators, transfers, factors),
        ``coarse_factor_bytes``, ``stop_reason`` (why the coarsest level is the coarsest),
        ``f_relaxation_rates`` (estimated Jacobi rate on each level's A_ff),
        and after a solve, ``solve``: ``iterations``, ``seconds``, ``residuals`` (the
        relative residual after each iteration), ``converged``, ``stop`` (``"converged"``,
        ``"stagnated"``, ``"maxiter"``, ``"time"`` or ``"breakdown"``), ``residual`` (the
        true relative residual reached), ``rate`` (the mean reduction factor per
        iteration over the last ``window`` iterations), ``projected_iterations`` and
        ``projected_seconds`` (more, at that rate, to reach rtol) and
        ``cycles_per_level``.
    """

    def __init__(self, levels, options, setup_seconds):
        self.levels = levels
        self._options = options
        params = options.cycle_params
        self.cycle = Cycle(
            levels,
            options.cycle,
            params.get("inner", 1),
            params.get("inner_rtol", 0.0),
            single=options.precision == "single",
        )
        self.shape = levels[0].A.shape
        self.dtype = levels[0].A.dtype
        phases = {}
        for level in levels:
            for phase, seconds in level.seconds.items():
                phases[phase] = phases.get(phase, 0.0) + seconds
        self.stats = {
            "setup_seconds": setup_seconds,
            "setup_phases": phases,
            "levels": len(levels),
            "sizes": [lv.n for lv in levels],
            "nnz": [int(lv.A.nnz) for lv in levels],
            "coarsest_nnz": int(levels[-1].coarse.operator.nnz),
            "coarsest_galerkin_nnz": levels[-1].galerkin_nnz,
            "operator_complexity": self.operator_complexity,
            "grid_complexity": self.grid_complexity,
            "memory_bytes": self.memory_bytes,
            "coarse_factor_bytes": levels[-1].coarse.factor_bytes,
            "stop_reason": levels[-1].stop_reason,
            "f_relaxation_rates": [lv.f_rate for lv in levels[:-1]],
        }

    @property
    def operator_complexity(self):
        """Σ nnz(A_l) / nnz(A_0), the coarsest counted as factored (sparsified)."""
        return float(sum(lv.A.nnz for lv in self.levels) / self.levels[0].A.nnz)

    @property
    def grid_complexity(self):
        """Σ n_l / n_0."""
        return float(sum(lv.n for lv in self.levels) / self.levels[0].n)

    @property
    def memory_bytes(self):
        """Bytes of the operators, transfers and factors the cycle keeps."""
        total = 0
        for lv in self.levels:
            total += operator_bytes(lv.A) + operator_bytes(lv.P) + operator_bytes(lv.R)
        return total + self.levels[-1].coarse.factor_bytes

    def aspreconditioner(self):
        """The cycle as a scipy ``LinearOperator``, for ``M=`` in scipy's Krylov solvers.

        A V- or W-cycle is a fixed linear operator. The K-cycle (the default) is not
        exactly (its inner iterations depend on the input): scipy's gmres, which tests
        the true residual at each restart, still converges with it in practice, but
        :meth:`solve` (flexible GMRES) is the method made for it.
        """
        n = self.shape[0]
        dtype = np.complex128 if np.iscomplexobj(self.levels[0].A.data) else np.float64

        def matvec(v):
            return self.cycle(np.asarray(v).reshape(n))

        return sla.LinearOperator((n, n), matvec=matvec, dtype=dtype)

    def solve(
        self,
        b,
        x0=None,
        rtol=1e-6,
        atol=0.0,
        maxiter=None,
        accel="fgmres",
        callback=None,
        callback_type="pr_norm",
        restart=None,
        stagnation=5,
        max_seconds=None,
    ):
        """Solve A x = b by Krylov iterations preconditioned (on the right) by the cycle.

        The solve watches its own convergence: after each outer iteration it measures the
        mean factor by which the true residual fell per iteration over the last
        ``stagnation`` iterations, and stops early, with ``info > 0`` and a
        :class:`~pastixpy.errors.StagnationWarning` saying what it saw and what to try,
        where the window made no progress (less than 0.1%), or its rate is worse than
        0.8 (the method's normal one is 0.1 or better), or the rate projects more than
        ``maxiter`` iterations or ``max_seconds`` to reach rtol
        (:class:`pastixpy.krylov.Watch`). A healthy solve converges within the window and
        is never checked; one that reaches ``maxiter`` warns too.

        Parameters
        ----------
        b : array_like, shape (n,)
        x0 : array_like, optional
        rtol, atol : float
            Stop when ``‖b − A x‖ <= max(rtol ‖b‖, atol)`` (true residual).
        maxiter : int, optional
            Most iterations (cycles), default 200.
        accel : {"fgmres", "gmres"}
            Flexible GMRES (any cycle), or GMRES with a fixed preconditioner (V and W
            cycles only: it keeps half the vectors).
        callback : callable, optional
            ``callback(rel_res)`` after each iteration, or ``callback(x)`` at the end
            of each restart cycle with ``callback_type="x"`` (scipy's conventions).
        restart : int, optional
            Iterations between restarts (none by default).
        stagnation : int, dict or None
            The window of iterations the reduction rate is measured over (default 5), or
            a dict with ``window`` and ``rate`` (the worst acceptable mean reduction
            factor per iteration, default 0.8; None to stop only on the projection
            beyond ``maxiter``). None: no watch (the run goes to ``maxiter``).
        max_seconds : float, optional
            Time limit of the solve: it stops once it is passed, or once the recent rate
            projects more; None (default) for no limit.

        Returns
        -------
        x : ndarray
            The last iterate, also when stopped early.
        info : int
            scipy's convention: 0 when converged, else the number of iterations made
            (``> 0``), whether the run reached ``maxiter`` or stopped early;
            ``stats["solve"]["stop"]`` says why.

        Raises
        ------
        OptionError
            ``accel``, ``stagnation`` or ``max_seconds`` is not understood.
        """
        if accel not in ACCELERATIONS:
            raise OptionError(f"accel must be one of {list(ACCELERATIONS)}, got {accel!r}")
        if accel == "gmres" and not self.cycle.linear:
            raise OptionError(
                "accel='gmres' needs a fixed linear preconditioner, and the K-cycle is not "
                "one; use accel='fgmres', or cycle='V' or 'W'"
            )
        watch = make_watch(stagnation, max_seconds, STAGNATION_RATE)
        n = self.shape[0]
        b = check_rhs(b, n)
        maxiter = 200 if maxiter is None else maxiter
        self.cycle.reset_counts()
        t = time.perf_counter()
        result = _gmres(
            self.levels[0].A,
            b,
            x0,
            self.cycle,
            rtol,
            atol,
            restart,
            maxiter,
            callback,
            callback_type,
            accel == "fgmres",
            watch,
        )
        self.stats["solve"] = solve_stats(result, time.perf_counter() - t)
        self.stats["solve"]["cycles_per_level"] = list(self.cycle.counts)
        warn_stop("multilevel solve", result, rtol, maxiter, ADVICE)
        return result.x, result.info

    def __repr__(self):
        lines = [
            f"MultilevelSolver: {len(self.levels)} levels, cycle {self.cycle.kind}, "
            f"operator complexity {self.operator_complexity:.2f}, "
            f"grid complexity {self.grid_complexity:.2f}",
            "  level   unknowns         nnz   nnz/row   CR rate",
        ]
        for number, lv in enumerate(self.levels):
            nnz = lv.A.nnz
            rate = "" if lv.f_rate is None else f"{lv.f_rate:9.2f}"
            lines.append(f"  {number:5d} {lv.n:10d} {nnz:11d} {nnz / lv.n:9.1f} {rate}")
        coarse = self.levels[-1].coarse
        lines.append(
            f"  coarsest: factored ({coarse.factor_bytes / 2**20:.1f} MiB); "
            f"{self.levels[-1].stop_reason}"
        )
        return "\n".join(lines)
