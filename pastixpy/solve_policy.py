"""Solve policy and verdicts: what refinement a solve runs, and what its result means.

:mod:`pastixpy.solve` is the mechanism (b into pivot order, the triangular solves,
back, refinement driven through :mod:`pastixpy.refine`); this module holds the rules it
follows and the judgements it passes, each a function of a solver:

- the refinement rules: what ``refine="auto"`` (or a named method) runs for a given
  solver, which Krylov method, and whether refinement must run even where the first
  solve already meets the tolerance (:func:`refinement_rules`);
- the verdicts on a refined solution: a tolerance not reached (:func:`singularity_diagnosis`
  says why), a solution grown past what a nonsingular matrix gives (:func:`check_growth`),
  perturbed pivots that did not stop the solve (:func:`perturbed_warning`), all run in
  turn by :func:`check_solution`;
- the probes: the factorization's check solve (:func:`probe`), the refinement's rate of
  contraction (:func:`contraction`, read by the inertia), and the condition number
  estimates (:func:`condition_estimate` from the factors, :func:`refined_condition` from
  refined solves).

The solver is taken as an argument and read through its attributes and mechanism
(``apply_inverse``, ``refined``, ``operator``), so this module imports nothing of
:mod:`pastixpy.solve`, which calls it.
"""

import functools
import warnings
from dataclasses import replace
from typing import NamedTuple

import numpy as np
import scipy.sparse.linalg as sla

from .errors import PastixWarning, SingularMatrixError
from .preprocess import equilibrate
from .refine import backward_error
from .runtime import blas_threads


def default_tol(dtype):
    """Backward error a solve is expected to reach in this precision."""
    return 1e-6 if np.dtype(dtype).char in "fF" else 1e-12


#: The "too ill-conditioned" diagnosis needs the condition number estimate to be at
#: least this fraction of 1 / eps: below it, refinement converges on a sound
#: factorization, so a failure is the factorization's fault, not the matrix's.
ILL_CONDITIONED = 1e-2


#: A check solve whose first step of iterative refinement shrinks the error by this
#: factor or more is taken as converging: the steps after it contract as much.
PROBE_CONTRACTION = 0.1


#: A solution whose growth ‖A‖‖x‖/‖b‖ exceeds this over eps, where pivots were perturbed,
#: comes from a numerically singular matrix and a right-hand side outside its range.
SINGULAR_GROWTH = 0.1


#: Backward errors up to this many units of roundoff are the precision's own limit:
#: a tolerance below it cannot be reached by any solver.
PRECISION_FLOOR = 10


def solve_tol(solver):
    """The backward error the solver's solves must reach: the ``refine`` option's
    ``tol``, else :func:`default_tol` of its working precision."""
    return solver.refine[1].get("tol", default_tol(solver.dtype))


# ---------------------------------------------------------------------- refinement rules


class RefinementRules(NamedTuple):
    """What refinement a solve runs (see :func:`refinement_rules`).

    Attributes
    ----------
    method : str
        The ``refine`` option's method: ``"none"`` (no refinement: the rest is unused),
        ``"auto"``, ``"ir"``, ``"gmres"`` or ``"cg"``.
    tol : float
    maxiter : int
    krylov : str or None
        The Krylov method after iterative refinement (None: iterative refinement only).
    always : bool
        Refine even where the first solve already meets ``tol``: on to the precision's
        floor (a named method, or factors that solve another matrix than A).
    ir_steps : int or None
        Steps of iterative refinement before the Krylov method (None: as
        :func:`pastixpy.refine.refine` decides).
    """

    method: str
    tol: float
    maxiter: int
    krylov: str | None
    always: bool
    ir_steps: int | None


def refinement_rules(solver):
    """The refinement a solve with ``solver`` runs, from its ``refine`` option.

    ``"auto"`` refines always where the factors solve another matrix than A (perturbed
    pivots, a scaling that is not exact, factors in a lower precision, a matrix
    symmetric only up to rounding, compressed factors), else only the columns above
    ``tol``; its Krylov method is CG for a definite kind in one precision, GMRES
    otherwise, and GMRES with no iterative refinement first for compressed factors.
    """
    method, kw = solver.refine
    tol = kw.get("tol", default_tol(solver.dtype))
    prep = solver.prep
    rounded = prep.scaled and not prep.exact  # B is not A up to exponents
    needed = bool(solver.perturbed_columns) or rounded or solver.mixed
    needed = needed or not solver.exact or solver.compressed
    krylov = {"ir": None, "cg": "cg"}.get(method, "gmres")
    if method == "auto" and solver.kind.definite and not solver.mixed:
        krylov = "cg"
    if method == "auto" and solver.compressed:
        # GMRES straight away: it minimises the residual over the Krylov space the
        # compressed factors' solves span, where iterative refinement would only
        # take the last of them.
        krylov = "gmres"
        kw = {**kw, "ir_steps": 0}
    return RefinementRules(
        method,
        tol,
        kw.get("maxiter", 10),
        krylov,
        method != "auto" or needed,
        kw.get("ir_steps"),
    )


# ---------------------------------------------------------------------- verdicts


def check_solution(solver, x, b, worst, trans, warn, growth=None):
    """The verdict on a refined solution x of op(A) x = b whose worst backward error is
    ``worst`` (``growth``: each column's ‖A‖∞ ‖x‖∞ / ‖b‖∞ where the solve measured it, for
    factors of A itself): raises SingularMatrixError where refinement missed the tolerance
    (:func:`singularity_diagnosis`), where x grew as only a singular matrix makes it
    (:func:`check_growth`) or is not finite; warns (``warn``) where perturbed pivots did
    not stop it (:func:`perturbed_warning`). Called by the solver's solve, whose caller
    the warning points at."""
    method = solver.refine[0]
    if method != "none":
        tol = solver.rules.tol  # solve_tol's, kept by the solver
        if worst > tol:
            raise singularity_diagnosis(solver, worst, tol, trans)
        check_growth(solver, x, b, trans, growth)
        if warn and solver.perturbed_columns:
            warnings.warn(perturbed_warning(solver, worst), PastixWarning, stacklevel=6)
    if not np.isfinite(x).all():
        raise SingularMatrixError("the solve produced non-finite values: A is singular")


def check_growth(solver, x, b, trans, growth=None):
    """SingularMatrixError where the solution grew past what any matrix the precision
    can tell from singular makes: ‖B‖‖y‖/‖c‖ is at most κ(B) for a nonsingular B, so
    beyond :data:`SINGULAR_GROWTH` / eps a perturbed pivot, or a roundoff-sized one
    that Cholesky took as positive, answered for a b outside the range, and the small
    backward error of such an x says nothing (it solves a nearby nonsingular matrix).
    Measured on the factored system B y = c, B the scaled matrix (``norm_scaled`` its
    ‖·‖∞), so that bad scaling alone does not count. ``growth``, where the solve
    measured it (factors of A itself: B = A, y = x, c = b), is taken as it is."""
    prep = solver.prep
    if growth is None or not solver.equilibrated_growth:
        with np.errstate(all="ignore"):
            if solver.equilibrated_growth:  # factors of A itself: B = A, y = x, c = b
                ymax, cmax = np.abs(x).max(axis=0), np.abs(b).max(axis=0)
            else:
                perm = np.arange(solver.n) if prep.row_perm is None else prep.row_perm
                if trans == "N":  # B (x / dc) = dr * b[row_perm]
                    y, c = x / prep.dc[:, None], b[perm] * prep.dr[:, None]
                else:  # Bᵀ (x[row_perm] / dr) = dc * b
                    y, c = x[perm] / prep.dr[:, None], b * prep.dc[:, None]
                ymax, cmax = np.abs(y).max(axis=0), np.abs(c).max(axis=0)
            growth = np.where(cmax > 0, solver.norm_scaled * ymax / np.where(cmax > 0, cmax, 1), 0)
    limit = singular_growth_limit(solver.dtype)
    if (growth > limit).any() and solver.equilibrated_growth:
        # Factors of A unscaled (the small path's LU): measured on A equilibrated, its
        # scalings made once per factorization, the rough one first (any scaling within
        # the limit proves nothing singular, see equilibrated_growth); Aᵀ's are A's, rows
        # and columns swapped.
        for which in ("rough_equilibration", "equilibration"):  # made as they are read
            dr, dc = getattr(solver, which)
            if trans == "N":
                growth = equilibrated_growth(solver.C, x, b, (dr, dc))
            else:
                growth = equilibrated_growth(solver.C.T.tocsc(), x, b, (dc, dr))
            if not (growth > limit).any():
                break
    if (growth > limit).any():
        raise SingularMatrixError(
            f"the matrix is numerically singular and b is not in its range: the solution "
            f"of the scaled system grew to ‖B‖‖y‖/‖c‖ = {float(growth.max()):.1e}, more "
            f"than any matrix distinguishable from a singular one in {solver.dtype} gives. "
            + (f"{perturbed_message(solver)}. " if solver.perturbed_columns else "")
            + "Check that b satisfies the model's "
            "compatibility conditions, or use a least-squares solver",
            columns=solver.perturbed_columns,
        )


@functools.cache
def singular_growth_limit(dtype):
    """:data:`SINGULAR_GROWTH` / eps of ``dtype``: the growth ‖B‖‖y‖/‖c‖ of a solution
    past which only a singular matrix and a b outside its range make it."""
    return SINGULAR_GROWTH / float(np.finfo(dtype).eps)


#: Ruiz iterations of the first, rough equilibration :func:`equilibrated_growth` tries
#: when it computes its own: a growth below the limit under any scaling already clears
#: the matrix, and the full equilibration is made only where this one does not.
ROUGH_EQUILIBRATION = 2


def equilibrated_growth(C, x, B, scaling=None, limit=None):
    """‖D_r A D_c‖∞ ‖D_c⁻¹ x‖ / ‖D_r b‖ per column, D_r and D_c the pipeline's Ruiz
    equilibration (``scaling``, or computed): the growth criterion of
    :func:`check_growth` measured on an equilibrated system for factors made without
    scaling, so that bad scaling alone does not count (bayer10's entries span 15
    orders: its unscaled ‖A‖‖x‖/‖b‖ is 4.5e15, its scaled one 8e5). Only asked once the
    unscaled growth is past the limit.

    With ``limit`` and no ``scaling``, a rough equilibration
    (:data:`ROUGH_EQUILIBRATION` iterations) is tried first and its growths returned
    where all are within ``limit``: a nonsingular B = D_r A D_c has ‖B‖‖y‖/‖c‖ at most
    κ(B) for every scaling, so one that measures within the limit proves nothing
    singular, as the full equilibration's would not."""
    if scaling is None and limit is not None:
        rough = equilibrate(C, symmetric=False, iterations=ROUGH_EQUILIBRATION)
        growth = _scaled_growth(C, x, B, rough)
        if (growth <= limit).all():
            return growth
    scaling = equilibrate(C, symmetric=False) if scaling is None else scaling
    return _scaled_growth(C, x, B, scaling)


def _scaled_growth(C, x, B, scaling):
    """‖D_r A D_c‖∞ ‖D_c⁻¹ x‖ / ‖D_r b‖ per column for ``scaling`` = (D_r, D_c)."""
    dr, dc = scaling
    norm = (dr * (abs(C) @ dc)).max()  # ‖D_r A D_c‖∞ without forming it
    with np.errstate(divide="ignore", invalid="ignore"):
        return norm * np.abs(x / dc[:, None]).max(axis=0) / np.abs(dr[:, None] * B).max(axis=0)


def singularity_diagnosis(solver, worst, tol, trans):
    """The SingularMatrixError for a solve that refinement left at ``worst`` > ``tol``:
    a singular matrix (perturbed pivots, or single-precision factors of one), a
    tolerance below the precision's limit, a matrix too ill-conditioned for its
    precision, or a factorization that lost accuracy to growth (from a condition
    number estimate)."""
    dtype = solver.dtype
    if solver.perturbed_columns:
        return SingularMatrixError(
            f"the matrix is numerically singular: refinement reached a backward error "
            f"of {worst:.2e}, not {tol:.0e}. {perturbed_message(solver)}. Check the "
            "model (constraints, boundary conditions) or use a least-squares solver",
            columns=solver.perturbed_columns,
        )
    eps = np.finfo(dtype).eps
    if worst <= PRECISION_FLOOR * eps:
        return SingularMatrixError(
            f"the solve reached a backward error of {worst:.2e}, the limit of "
            f"{dtype} (unit roundoff {eps:.1e}), but tol={tol:.0e} asks for less: "
            f"give a tol of at least {PRECISION_FLOOR * eps:.0e}"
        )
    cond = condition_estimate(solver)
    factor_dtype = solver.factors.dtype
    eps_f = np.finfo(factor_dtype).eps
    if solver.mixed and cond * eps_f >= 1:
        # Past 1/eps of the factors' precision the estimate only says that they
        # factor a singular matrix (a roundoff-sized pivot that Cholesky took as
        # positive), and the factorization's check showed that b's in A's range
        # solve: a nonsingular A that ill-conditioned would have failed it.
        return SingularMatrixError(
            f"the matrix is numerically singular and b is not in its range: the solve "
            f"reached a backward error of {worst:.2e}, not {tol:.0e}, and the condition "
            f"number estimated from the {factor_dtype} factors, {cond:.1e}, is past "
            f"1/eps = {1 / eps_f:.1e} of their precision. Check that b satisfies the "
            "model's compatibility conditions, or use a least-squares solver; "
            "precision='double' tells a singular matrix from one too ill-conditioned "
            "for single-precision factors"
        )
    if cond * eps >= ILL_CONDITIONED:
        return SingularMatrixError(
            f"the solve reached a backward error of {worst:.2e}, not {tol:.0e}: the matrix "
            f"is too ill-conditioned for this precision (condition number about "
            f"{cond:.1e}, unit roundoff {eps:.1e}), and refinement could not recover what "
            "the factorization lost; use float64/complex128 or scale it"
        )
    return SingularMatrixError(
        f"the solve reached a backward error of {worst:.2e}, not {tol:.0e}, although "
        f"the matrix is not ill-conditioned (condition number about {cond:.1e}): the "
        f"{solver.kind.name} factorization lost accuracy to element growth in its pivots. "
        "Try kind='lu', refine='gmres', or float64/complex128"
    )


def perturbed_warning(solver, worst):
    """The warning of a solve that perturbed pivots did not stop, worded from a
    condition estimate (the solver's ``refined_condition``, :func:`refined_condition`
    made once): "may be singular" only where the estimate says so."""
    verdict, well = _perturbed_verdict(solver, solver.refined_condition)
    if well:
        return (
            f"{verdict}: refinement recovered the accuracy, the solution reached backward "
            f"error {worst:.1e}"
        )
    return f"{verdict}; the solution reached backward error {worst:.1e}"


def _perturbed_verdict(solver, estimate):
    """The perturbed pivots and what the condition estimate ``(κ₁ estimate, worst
    backward error of its solves)`` says of them; and whether it says A is well
    conditioned."""
    cond, berr = estimate
    tol = solve_tol(solver)
    eps = np.finfo(solver.dtype).eps
    if berr > tol:
        return (
            f"{perturbed_pivots(solver)}: the matrix may be singular or nearly so "
            f"(refinement could not solve the condition estimate's systems to {tol:.0e})"
        ), False
    if cond * eps < ILL_CONDITIONED:
        return (
            f"{perturbed_pivots(solver)}, although the matrix is well conditioned "
            f"(condition number about {cond:.1e})"
        ), True
    return (
        f"{perturbed_pivots(solver)}: the matrix may be singular or nearly so (condition "
        f"number at least {cond:.1e})"
    ), False


def perturbed_pivots(solver):
    """How many pivots static pivoting perturbed, below what, and at which columns (the
    first ten)."""
    cols = solver.perturbed_columns
    shown = ", ".join(map(str, cols[:10]))
    more = f" and {len(cols) - 10} more" if len(cols) > 10 else ""
    return (
        f"{len(cols)} pivot(s) smaller than {solver.pivot_tol:.2e} were perturbed (static "
        f"pivoting) at column(s) {shown}{more}"
    )


def perturbed_message(solver):
    """The perturbed pivots (:func:`perturbed_pivots`) and what a condition estimate of A
    says of them: "may be singular" only with the estimate that shows it. The estimate
    is the solver's ``refined_condition``; with ``refine="none"`` (whose plain solves
    would estimate the perturbed factors' inverse, about 1/pivot_tol whatever A) it is
    made here on refined solves."""
    if solver.refine[0] == "none":
        estimate = refined_condition(replace(solver, refine=("auto", dict(solver.refine[1]))))
    else:
        estimate = solver.refined_condition
    return _perturbed_verdict(solver, estimate)[0]


# ---------------------------------------------------------------------- probes


def probe(solver):
    """Whether refinement reaches its tolerance on a system with a known solution.

    b = A x₀ for a fixed random x₀ lies in A's range even when A is singular, so
    a failure here is the factorization's (static pivoting defeated refinement,
    single-precision factors too inaccurate), not the right-hand side's. One step
    of iterative refinement that shrinks the error by :data:`PROBE_CONTRACTION` or
    more settles it (the steps that follow shrink it as much); otherwise the
    refinement runs as a solve's would.
    """
    x0 = known_solution(solver, 0)
    b = np.ascontiguousarray(solver.C @ x0)
    tol = solve_tol(solver)
    op = solver.operator("N")
    with blas_threads(solver.threads), np.errstate(all="ignore"):
        x = solver.apply_inverse(b.copy(), "N")
        if (backward_error(op, x, b, solver.norm_a) <= tol).all():
            return True
        r = np.ascontiguousarray(b - op.matvec(x))
        x1 = x + solver.apply_inverse(r, "N", overwrite=True)
        # Without perturbed pivots the factored matrix is a near copy of a nonsingular
        # A, and the error shrinks by as much at each step. (Perturbed pivots may
        # come from a singular A, whose error need not go to zero.)
        shrink = np.abs(x1 - x0).max() / np.abs(x - x0).max()
        if shrink <= PROBE_CONTRACTION and not solver.perturbed_columns:
            return True
        if (backward_error(op, x1, b, solver.norm_a) <= tol).all():
            return True
        _, berr, _, _ = solver.refined(b, "N", to_floor=False)
    return bool((berr <= tol).all())


def known_solution(solver, seed):
    """A fixed random (n, 1) x₀ in A's dtype, for a system b = A x₀ in A's range."""
    rng = np.random.default_rng(seed)
    x0 = rng.standard_normal((solver.n, 1))
    if np.iscomplexobj(np.empty(0, solver.dtype)):
        x0 = x0 + 1j * rng.standard_normal((solver.n, 1))
    return x0.astype(solver.dtype)


def contraction(solver, steps=3):
    """How much one step of iterative refinement shrinks the error, at worst.

    Solves A x = A x₀ for a fixed random x₀, so that the error of each step is
    known exactly, and returns the largest ratio of successive error norms over
    ``steps`` steps (while the error is above the precision's floor; 0 when the
    first solve is already there). The step's error map is I - M⁻¹A = M⁻¹E, M
    the factored matrix and E = M - A what static pivoting and rounding changed:
    a ratio well below 1 bounds its spectral radius, which proves A + sE
    nonsingular for every s in [0, 1], so that A and M have the same inertia.
    """
    x0 = known_solution(solver, 1)
    b = np.ascontiguousarray(solver.C @ x0)
    floor = 100 * np.finfo(solver.dtype).eps * np.abs(x0).max()
    op = solver.operator("N")
    worst = 0.0
    with blas_threads(solver.threads), np.errstate(all="ignore"):
        x = solver.apply_inverse(b.copy(), "N")
        err = np.abs(x - x0).max()
        for _ in range(steps):
            if not np.isfinite(err):
                return np.inf
            if err <= floor:
                break
            r = b - op.matvec(x)
            x = x + solver.apply_inverse(np.ascontiguousarray(r), "N")
            new = np.abs(x - x0).max()
            worst = max(worst, new / err)
            err = new
    return float(worst) if np.isfinite(err) else np.inf


def _inverse_operator(n, dtype, apply):
    """A⁻¹ as a LinearOperator for ``onenormest``, from ``apply(V, trans)``, which takes
    an (n, k) row-major block in ``dtype`` and ``trans`` "N" or "H"."""

    def block(V, trans):
        return apply(np.ascontiguousarray(np.asarray(V, dtype=dtype).reshape(n, -1)), trans)

    return sla.LinearOperator(
        (n, n),
        matvec=lambda v: block(v, "N")[:, 0],
        rmatvec=lambda v: block(v, "H")[:, 0],
        matmat=lambda V: block(V, "N"),
        rmatmat=lambda V: block(V, "H"),
        dtype=dtype,
    )


def condition_estimate(solver):
    """Estimate of κ₁(A) = ‖A‖₁ ‖A⁻¹‖₁ (Hager and Higham's estimator, a few solves
    with the factors, unrefined)."""
    n = solver.n
    dtype = solver.dtype
    norm1 = float(abs(solver.C).sum(axis=0).max())
    inv = _inverse_operator(n, dtype, solver.apply_inverse)
    with np.errstate(all="ignore"):
        est = sla.onenormest(inv) if n > 4 else np.abs(_dense_inverse(inv, n)).sum(0).max()
    return float(norm1 * est) if np.isfinite(est) else np.inf


def condest(solver):
    """Hager and Higham's estimate of κ₁(A) = ‖A‖₁ ‖A⁻¹‖₁ (scipy's ``onenormest``, two
    columns at a time), each product with A⁻¹ or A⁻ᴴ a solve refined as the ``refine``
    option says: where pivots were perturbed, or the factors are compressed or in a
    lower precision, refinement makes it A's inverse, not the factors'.

    A lower bound of κ₁(A), almost always within a factor of 3 of it (exact on most
    matrices); ``inf`` where a product overflows. With ``refine="none"`` the products
    are the factors' plain solves.
    """
    n = solver.n
    dtype = solver.dtype
    norm1 = float(abs(solver.C).sum(axis=0).max())

    inv = _inverse_operator(n, dtype, lambda V, trans: solver.refined(V, trans, to_floor=False)[0])
    with blas_threads(solver.threads), np.errstate(all="ignore"):
        est = sla.onenormest(inv, t=2) if n > 4 else np.abs(_dense_inverse(inv, n)).sum(0).max()
    return float(norm1 * est) if np.isfinite(est) else np.inf


def refined_condition(solver):
    """``(estimate of κ₁(A), worst backward error)`` of Hager–Higham's estimator run
    on refined solves. Costly: the solver caches it (its ``refined_condition``), made
    on first use, once per factorization.

    Where pivots were perturbed the factors invert a perturbed matrix, whose norm of
    inverse is about 1/pivot_tol whatever A's: refined to ``tol``, each solve applies
    A⁻¹ itself. A singular A shows either way: the estimator's right-hand sides are
    not in its range, so their refinement fails (a backward error above ``tol``) or
    the estimate is past 1/eps.
    """
    n = solver.n
    dtype = solver.dtype
    norm1 = float(abs(solver.C).sum(axis=0).max())
    method, kw = solver.refine
    tol = kw.get("tol", default_tol(dtype))
    # k perturbed pivots change the factored matrix by rank k: GMRES on a
    # well-conditioned A converges in about k + 1 iterations, and a singular A's
    # estimate is settled by its first failed solve, so neither need the option's
    # whole budget.
    cap = -(-(2 * len(solver.perturbed_columns) + 10) // 10)
    capped = replace(solver, refine=(method, {**kw, "maxiter": min(kw.get("maxiter", 10), cap)}))
    worst = [0.0]

    def refined_solve(V, trans):
        x, berr, _, _ = capped.refined(V, trans, to_floor=False)  # V: (n, k), as made
        worst[0] = max(worst[0], float(berr.max()) if berr.size else 0.0)
        if worst[0] > tol:
            raise _Unsolved
        # ‖A‖₁‖x‖₁/‖v‖₁ bounds κ₁ from below: past the threshold, the verdict is in.
        with np.errstate(all="ignore"):
            lower = norm1 * np.abs(x).sum(axis=0) / np.abs(V).sum(axis=0)
        if lower.max() * np.finfo(dtype).eps >= ILL_CONDITIONED:
            raise _Unsolved(float(lower.max()))
        return x

    inv = _inverse_operator(n, dtype, refined_solve)
    try:
        with blas_threads(solver.threads), np.errstate(all="ignore"):
            est = (
                sla.onenormest(inv, t=1, itmax=3)
                if n > 4
                else np.abs(_dense_inverse(inv, n)).sum(0).max()
            )
    except _Unsolved as stop:
        return (stop.args[0] if stop.args else np.inf), worst[0]
    return (float(norm1 * est) if np.isfinite(est) else np.inf), worst[0]


class _Unsolved(Exception):
    """The condition estimate's verdict is in before its end: a refined solve missed its
    tolerance, or (with the lower bound on κ₁ as argument) showed κ₁ past the threshold."""


def _dense_inverse(op, n):
    return op.matmat(np.eye(n))
