"""The factorization pipeline: check → preprocess → analyze → numeric → verify, and its
retries as one loop.

:func:`run_factorization` runs it for a canonical matrix; :func:`run_refactorization` for
a new matrix of the same pattern, reusing the analysis, the assembly map and the row
matching. Both return a :class:`State`: what a factorization holds (its kind, analysis,
factors and the :class:`~pastixpy.solve.Solver` its solves use) and its statistics, which
this module alone writes. The numeric phase is a parameter, a
:class:`~pastixpy.numeric.NumericBackend`: the kernels in this process by default, or
the ranks of a distributed factorization (:mod:`pastixpy.distributed` passes its own).

A try can end in three ways that call for another, each recorded in
``stats["retries"]``:

- LLᵀ meets a pivot that is not positive and the kind was ``"auto"``: LDLᵀ (LDLᴴ), on a
  new analysis when 2x2 pivot pairs want one;
- pivots were perturbed and a solve with a known answer cannot be refined to the
  tolerance: the same kind once more on wider supernodes, whose diagonal blocks give
  local pivoting the choice that static pivoting lacked;
- mixed precision cannot reach the tolerance: double precision, with a warning (or a
  MixedPrecisionError when the fallback was refused).

With ``memory_limit``, the configuration (precision, compression) is the memory
budget's (:mod:`pastixpy.budget`), chosen once the assembly map is built and before the
numeric phase allocates; the last two fallbacks rule configurations out and the budget
chooses again, as it does where a try runs out of memory during its factorization.

Solves never retry: a solve does not change the factorization.
"""

import time
import warnings
from dataclasses import dataclass, field, replace

import numpy as np

from . import budget, simplicial, solve_policy
from ._graph import inf_norm
from .analysis import analyze
from .compression import compression_stats
from .errors import (
    MemoryBudgetWarning,
    MixedPrecisionError,
    NotPositiveDefiniteError,
    OptionError,
    OutOfMemoryError,
    PastixWarning,
    PatternMismatchError,
    SingularMatrixError,
)
from .kinds import Kind, auto_kind, check_kind, indefinite_kind
from .matrix import symmetric_pattern, symmetry_of
from .numeric import ONE_PROCESS, AssemblyMap, PanelLayout, SchurFactors, is_small
from .options import parse_option
from .ordering import METIS_UFACTORS, ORDERINGS
from .preprocess import Preprocessing, check_structural_rank, max_abs, preprocess
from .runtime import OPENMP, blas_threads
from .schur import check_schur, check_schur_options
from .solve import Solver, pivot_order_gathers
from .version import __version__

#: Wider supernodes for a second try when static pivoting defeats refinement:
#: larger diagonal blocks leave local pivoting more rows to choose from.
ROBUST_AMALGAMATION = {"subtree": 256, "zrelax": (0.9, 0.5, 0.4)}


@dataclass(frozen=True)
class Plan:
    """One try: the kind, the analysis to reuse (None: make one), the preprocessing to
    reuse (None: compute it), wider supernodes or not, the factors' dtype."""

    kind: Kind
    analysis: object = None
    prep: object = None
    coarse: bool = False
    factor_dtype: np.dtype = None
    given_analysis: bool = False
    exact: bool = True  # the kind fits A exactly (else one triangle is factored)
    # The memory budget's choice (kept by retries and refactorizations), and the
    # configurations failed tries ruled out: (name, why) pairs.
    budget: object = None
    excluded: tuple = ()


@dataclass
class State:
    """What a factorization holds between its solves and refactorizations.

    ``solver`` is None after a refactorization that failed (the previous factors were
    freed first). ``stats`` is the factorization's notebook (solves do not write it);
    ``backend`` the numeric phase that made the factors.
    """

    kind: Kind
    analysis: object
    layout: object
    assembly: object
    prep: object
    plan: Plan
    solver: Solver | None
    backend: object = ONE_PROCESS
    stats: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Checked:
    """What the check phase found: the kind to try first and why, whether it fits the
    matrix exactly, the matrix's symmetry."""

    kind: Kind
    reason: str
    exact: bool
    symmetry: object


def run_factorization(
    C, options, analysis=None, backend=ONE_PROCESS, t0=None, small=True, checked=None
):
    """Run the pipeline on canonical C with :class:`~pastixpy.options.Options`.

    Parameters
    ----------
    C : canonical CSC array
    options : Options
    analysis : Analysis, optional
        Reused (no ordering nor symbolic factorization).
    backend : NumericBackend
        The numeric phase (default: this process's kernels).
    t0 : float, optional
        ``time.perf_counter()`` when the user's call began (its checks count).
    small : bool
        Whether a small matrix may take the small path
        (:func:`_small_path`); False makes supernodal factors whatever the size.
    checked : Checked, optional
        The check phase's verdict, made already (:func:`recheck`: a refactorization of
        the small path's factors keeps their kind).

    Returns
    -------
    State
    """
    t0 = time.perf_counter() if t0 is None else t0
    checked = check(C, options) if checked is None else checked
    if analysis is not None:
        _check_schur_analysis(analysis, options)
    seconds = {"check": time.perf_counter() - t0, "preprocess": 0.0, "analysis": 0.0}
    work = options.working_dtype(C.dtype)
    if work != C.dtype:
        C = C.astype(work)
    plan = Plan(
        checked.kind,
        analysis=analysis,
        factor_dtype=options.factor_dtype(C.dtype),
        given_analysis=analysis is not None,
        exact=checked.exact,
    )
    state = None
    if (
        small
        and analysis is None
        and backend is ONE_PROCESS
        and _small_path_applies(C, checked, options)
    ):
        # A structurally singular matrix meets a zero pivot there and comes back here.
        state = _small_path(C, checked, options, seconds)
    if state is None:
        t1 = time.perf_counter()
        check_structural_rank(C)  # names the columns no row matching can cover
        seconds["check"] += time.perf_counter() - t1
        with blas_threads(options.threads):
            state = _run(C, plan, options, seconds, [], backend)
    state.stats.update(
        symmetry=checked.symmetry.kind,
        asymmetry=checked.symmetry.asymmetry,
        kind_reason=checked.reason,
    )
    return state


#: The small path's LU is kept without a check solve while its growth (largest entry
#: of U over ‖A‖∞) stays below this, √(1/eps): threshold pivoting bounds each step's
#: growth, and an LU that grew less is backward stable to well within what refinement
#: corrects. Beyond it, a solve with a known answer must reach the tolerance
#: (:func:`~pastixpy.solve_policy.probe`), as perturbed pivots' must in the pipeline.
SMALL_PATH_GROWTH = 2.0**26

#: The kinds the small path factors: LU (:func:`pastixpy.simplicial.factor`), and the
#: symmetric ones by LDLᵀ (LDLᴴ) without pivoting
#: (:func:`pastixpy.simplicial.factor_symmetric`): LLᵀ where every D_k is positive.
SMALL_PATH_KINDS = ("lu", "llt", "ldlt", "ldlh")

#: The options the small path takes as given; any other option set (``schur``,
#: ``matching="on"``, which sets ``preprocess_asked``, ...) is the pipeline's.
SMALL_PATH_OPTIONS = frozenset({"ordering", "kind", "refine", "threads"})


def _small_path_applies(C, checked, options):
    """Whether a factorization may take the small path (:func:`_small_path`): the kind
    (asked for, or chosen by ``"auto"``) is one of :data:`SMALL_PATH_KINDS` and fits C
    exactly, spsolve's
    simplicial path would take C (:func:`pastixpy.simplicial.applies`: small, double
    precision), and nothing is asked that only the supernodal factors give (matching or
    scaling given as ``"on"`` or ``"off"``, a pivot threshold, another precision,
    compression, a Schur complement, a memory budget, a condition estimate, progress
    reports)."""
    if checked.kind.name not in SMALL_PATH_KINDS or not checked.exact:
        return False
    return simplicial.applies(C, options, None, free=SMALL_PATH_OPTIONS)


#: A pivot of the small path's LU is taken for zero (the matrix for singular: the
#: pipeline's static pivoting and its words on singular matrices) at most this many
#: times its rounding error bound, n eps times the growth, relative to its column.
SMALL_PATH_PIVOT_ROUNDOFF = 10.0


def _smallest_kept_pivot(kind, n, growth, dtype):
    """The smallest pivot (relative to its column of A) the small path keeps.

    LU with threshold partial pivoting is backward stable however small a pivot is,
    as long as the growth stays bounded (:data:`SMALL_PATH_GROWTH` checks it): only a
    pivot within its own rounding error says nothing, and means a singular matrix. It is
    what spsolve's same LU does, whose solves the same backward error and growth checks
    certify; a nearly singular matrix (nnc1374's pivots reach 8e-10) keeps its LU instead
    of paying for the pipeline. The symmetric kinds' LDLᵀ does not pivot: a pivot below
    √eps goes to the pipeline, as its static pivoting would perturb it."""
    eps = np.finfo(dtype).eps
    if kind.name != "lu":
        return float(np.sqrt(eps))
    return float(SMALL_PATH_PIVOT_ROUNDOFF * n * eps * max(1.0, growth))


#: The names of the value dtypes (numpy makes ``dtype.name`` in Python, at each call).
_DTYPE_NAMES = {
    np.dtype(t): np.dtype(t).name for t in (np.float32, np.float64, np.complex64, np.complex128)
}


def _small_path(C, checked, options, seconds):
    """The State of a small matrix factored by spsolve's simplicial LU, or for a symmetric
    kind by the simplicial LDLᵀ (LDLᴴ) without pivoting, whose D decides whether LLᵀ
    holds (one kernel call each: :mod:`pastixpy.simplicial`) instead of the supernodal
    pipeline, or None
    where that LU does not hold: its flop budget spent (the BLAS pays there), a zero
    pivot (the pipeline says which column), or a check solve with a known answer that
    refinement cannot bring to the tolerance. Its solves are the supernodal factors'
    (:class:`~pastixpy.solve.Solver`: refinement, verdicts, transposes); what needs an
    analysis or supernodal factors (``F.analysis``, inertia, determinants, the selected
    inverse) makes them beside it when first asked
    (:meth:`pastixpy.Factorization._supernodal`)."""
    t0 = time.perf_counter()
    kind, retries = checked.kind, []
    if kind.name == "lu":
        factors = simplicial.factor(C, options.ordering)
    else:
        hermitian = kind.hermitian and np.iscomplexobj(C.data)
        factors = simplicial.factor_symmetric(C, hermitian, options.ordering)
        if factors is not None and kind.definite and not factors.positive_definite():
            if not options.auto_kind:
                return None  # LLᵀ asked for: the pipeline says which pivot is not positive
            kind = indefinite_kind(C)  # as the pipeline's retry loop falls back
            retries = [f"not positive definite: {kind.name}"]
    t1 = time.perf_counter()
    seconds["factorize"] = t1 - t0
    if factors is None:
        return None
    n = C.shape[0]
    ones = np.ones(n)
    prep = Preprocessing(row_perm=factors.row_order(), dr=ones, dc=ones, exact=True)
    norm_a = _norm_inf(C)
    solver = Solver(
        kind=kind,
        C=C,
        prep=prep,
        factors=factors,
        norm_a=norm_a,
        norm_scaled=norm_a,
        pivot_tol=0.0,
        perturbed_columns=(),
        refine=options.refine,
        threads=None,  # its solves call no BLAS: nothing to limit
        gathers=factors.gathers(),
        equilibrated_growth=True,
    )
    top, smallest = factors.pivot_checks(C)
    growth = top / norm_a if norm_a else np.inf
    small = _smallest_kept_pivot(kind, n, growth, C.dtype)
    if smallest < small:  # maybe a bad scaling: measured as the pipeline does
        # The rough equilibration first: a pivot clear of the threshold under any scaling
        # is no static pivot's business; the full one only where that one does not clear.
        scalings = ("rough_equilibration", "equilibration")  # made as they are read
        if all(factors.smallest_pivot(C, getattr(solver, s)) < small for s in scalings):
            return None  # the pipeline's static pivoting, and its words on singular matrices
    if growth > SMALL_PATH_GROWTH and not solve_policy.probe(solver):
        return None
    seconds["verify"] = time.perf_counter() - t1
    nnz_l = (
        factors.arrays[1].size if kind.name == "lu" else factors.Li.size
    ) + n  # with L's diagonal
    dtype, nbytes, entries = C.dtype, factors.nbytes, factors.entries
    if options.ordering == "natural":
        ordering = "natural"
    else:  # the unsymmetric strategy orders AᵀA's columns, the others A + Aᵀ
        ordering = "colamd" if factors.strategy == "unsymmetric" else "amd"
    stats = {
        "version": __version__,
        "path": "simplicial",
        "n": n,
        "nnz_A": int(C.nnz),
        "nnz_L": int(nnz_l),
        "fill_ratio": entries / max(C.nnz, 1),
        "flops": float(factors.flops),
        "ordering": ordering,
        "strategy": factors.strategy,
        "kind": kind.name,
        "precision": _precision_name(dtype, dtype, options.precision),
        "factor_dtype": _DTYPE_NAMES.get(dtype) or dtype.name,
        "factor_entries": entries,
        "factor_bytes": nbytes,
        "memory_bytes": nbytes,
        "perturbed_pivots": 0,
        "threads": 1,
        "openmp": OPENMP,
        "pivot_tol": 0.0,
        "matching": False,
        "pairs": 0,
        "schur": 0,
        "scaling": False,
        "coarsened": False,
        "refinement_steps": 0,
        "refinement": None,
        "backward_error": None,
        "seconds": dict(seconds),
        "compression": None,
        "memory_budget": None,
        "retries": retries,
        "precision_fallback": None,
    }
    plan = Plan(kind, exact=True, factor_dtype=dtype)
    return State(kind, None, None, None, prep, plan, solver, ONE_PROCESS, stats)


def recheck(state, C):
    """The check phase's verdict for refactorizing the small path's ``state`` with C:
    its kind kept, as :func:`run_refactorization` keeps it (an LLᵀ may still fall back
    to LDLᵀ under ``kind="auto"``), checked against C with the same warning."""
    symmetry = symmetry_of(C)
    exact = check_kind(state.kind, C, symmetry, "refactorize", stacklevel=4)
    return Checked(state.kind, state.stats["kind_reason"], exact, symmetry)


def run_refactorization(state, C, options):
    """Run the pipeline again for C, of the pattern ``state`` was made for (the handle
    checked it): the analysis, the assembly map, the row matching and the 2x2 pairs are
    kept."""
    exact = check_kind(state.kind, C, symmetry_of(C), "refactorize", stacklevel=4)
    state.solver = None  # the previous factors go first: one factor in memory at a time
    work = options.working_dtype(C.dtype)
    if work != C.dtype:
        C = C.astype(work)
    t0 = time.perf_counter()
    with blas_threads(options.threads):
        prep = preprocess(
            C,
            state.kind,
            scaling=options.scaling,
            row_perm=state.prep.row_perm,
            pairs=state.prep.pairs,
        )
        seconds = {"preprocess": time.perf_counter() - t0, "analysis": 0.0}
        plan = replace(
            state.plan,
            kind=state.kind,
            analysis=state.analysis,
            prep=prep,
            factor_dtype=options.factor_dtype(C.dtype),
            exact=exact,
        )
        reuse = (state.layout, state.assembly)
        new = _run(C, plan, options, seconds, [], state.backend, reuse)
    new.stats.update({k: state.stats[k] for k in ("symmetry", "asymmetry", "kind_reason")})
    return new


# ---------------------------------------------------------------------- check


def check(C, options):
    """The check phase: the refinement tolerance reachable in the working precision,
    the kind to try first (and whether it fits C exactly). That C is structurally
    nonsingular is checked after it, before the pipeline proper: the small path finds
    out by itself, with a zero pivot.

    Raises
    ------
    OptionError, InvalidInputError, SingularMatrixError
    """
    _check_refine_tol(options, C.dtype)
    if options.schur is not None:
        check_schur(options.schur, C.shape[0])
        check_schur_options(
            compress=options.compress,
            mixed=options.factor_dtype(C.dtype) != options.working_dtype(C.dtype),
            comm=options.comm,
        )
    symmetry = symmetry_of(C)
    kind, reason = _chosen_kind(C, symmetry, options)
    exact = check_kind(kind, C, symmetry, "factorize", stacklevel=5)
    return Checked(kind, reason, exact, symmetry)


def _chosen_kind(C, symmetry, options):
    """The kind to try first, and why. ``kind="auto"`` on a symmetric (Hermitian) matrix
    tries LLᵀ unless its diagonal already says it is not positive definite (a missing,
    zero or negative diagonal entry: the zero block of a saddle-point matrix), where
    it starts with LDLᵀ instead of paying for a Cholesky that fails."""
    if not options.auto_kind:
        return options.kind, "asked for"
    kind = auto_kind(symmetry.kind, np.iscomplexobj(C.data))
    if not kind.definite:
        return kind, f"{symmetry.kind} matrix"
    d = C.diagonal().real
    bad = np.flatnonzero(~(d > 0))
    if bad.size:
        return indefinite_kind(C), (
            f"not positive definite: diagonal entry {d[bad[0]]:.3g} at column {int(bad[0])}"
        )
    return kind, f"{symmetry.kind} matrix with a positive diagonal"


def _check_refine_tol(options, dtype):
    """An OptionError for a refinement tolerance below what the working precision can
    reach (its floor), before any work."""
    tol = options.refine[1].get("tol")
    if tol is None:  # the default: reachable in every precision
        return
    work = options.working_dtype(dtype)
    units = solve_policy.PRECISION_FLOOR
    floor = units * np.finfo(work).eps
    if tol is not None and options.refine[0] != "none" and tol < floor:
        raise OptionError(
            f"refine tol={tol:g} is below what {work} can reach (a backward error of about "
            f"{floor:.0e}, {units} units of roundoff): give tol >= {floor:.0e}"
            + ("" if np.finfo(work).bits == 64 else ", or precision='double' or 'mixed'")
        )


# ---------------------------------------------------------------------- the retry loop


def _run(C, plan, options, seconds, retries, backend, reuse=None):
    """The retry loop: try ``plan``; on one of the module docstring's three outcomes,
    try the next plan; return the State of the first try that holds."""
    fallback = None
    while True:
        try:
            state = _attempt(C, plan, options, seconds, backend, reuse)
        except NotPositiveDefiniteError:
            if not (options.auto_kind and plan.kind.definite):
                raise
            plan, reuse = _indefinite_plan(C, plan, options, seconds), None
            retries.append(f"not positive definite: {plan.kind.name}")
            continue
        except _Overrun as over:
            retries.append(f"{over.name} ran out of memory: chose again within the budget")
            plan, reuse = over.plan, over.reuse
            continue
        t0 = time.perf_counter()
        verdict = _verify(state)
        seconds["verify"] = seconds.get("verify", 0.0) + time.perf_counter() - t0
        state.stats["seconds"]["verify"] = seconds["verify"]
        if verdict == "coarsen":
            retries.append(
                "perturbed pivots defeated refinement: wider supernodes"
                if state.analysis.schur is None
                else "perturbed pivots in A11 would leave S a nearby matrix's: wider supernodes"
            )
            state.solver = None  # free the factors before the next try
            plan, reuse = replace(plan, analysis=None, prep=state.prep, coarse=True), None
            continue
        if verdict == "uncompressed":
            fallback = (
                f"the compressed factors (tol={state.stats['compression']['tol']:g}) could not "
                f"be refined to a backward error of {_tol(state.solver):.0e}"
            )
            budgeted = state.plan.budget is not None
            warnings.warn(
                fallback
                + (
                    "; chose again without compression, within the memory budget"
                    if budgeted
                    else "; refactored without compression"
                )
                + ": give compress= a smaller tol",
                PastixWarning,
                stacklevel=4,
            )
            retries.append("compression fell back to full rank")
            state.solver = None
            if budgeted:
                fixed = options.fixed - {"compress", "strategy"}
                options = replace(options, compress=None, fixed=fixed)
                plan = _rechoose(state, budget.COMPRESSED, "compressed factors not refined")
            else:
                options = replace(options, compress=None)
                plan = replace(plan, analysis=state.analysis, prep=state.prep)
            reuse = (state.layout, state.assembly)
            continue
        if verdict == "double":
            fallback = (
                f"mixed precision could not reach a backward error of "
                f"{_tol(state.solver):.0e} (single-precision factors, refined in double)"
            )
            if not options.fallback:
                raise MixedPrecisionError(
                    fallback + "; precision=('mixed', {'fallback': False}) refuses to "
                    "refactor in double: use precision='double'"
                )
            again = "; chose again in double precision, within the memory budget"
            budgeted = state.plan.budget is not None
            warnings.warn(
                fallback + (again if budgeted else "; refactored in double precision"),
                PastixWarning,
                stacklevel=4,
            )
            retries.append("mixed precision fell back to double")
            state.solver = None
            if budgeted:
                options = replace(options, precision="auto")  # C is in the working precision
                plan = _rechoose(state, budget.MIXED, "single-precision factors not refined")
            else:
                plan = replace(plan, factor_dtype=C.dtype, analysis=state.analysis, prep=state.prep)
            reuse = (state.layout, state.assembly)
            continue
        if state.solver.mixed and plan.kind.definite:
            _warn_roundoff_pivot(state)
        state.stats.update(retries=list(retries), precision_fallback=fallback)
        state.stats.update(backend.statistics(state.solver.factors))
        if options.condest:
            t0 = time.perf_counter()
            state.stats["condest"] = solve_policy.condest(state.solver)
            state.stats["seconds"]["condest"] = time.perf_counter() - t0
        return state


def _tol(solver):
    return solve_policy.solve_tol(solver)


class _Overrun(Exception):
    """A try in the memory budget's configuration ran out of memory: the next try's
    plan (that configuration ruled out, the budget to choose again) and what it reuses."""

    def __init__(self, plan, reuse, exc):
        super().__init__(str(exc))
        self.name = plan.budget.configuration.name
        why = "ran out of memory during its factorization"
        self.plan = replace(plan, budget=None, excluded=(*plan.excluded, (self.name, why)))
        self.reuse = reuse


def _rechoose(state, names, why):
    """The plan after a failed try ruled configurations ``names`` out (``why``): the
    memory budget chooses again among the others, on the same analysis."""
    excluded = (*state.plan.excluded, *((n, why) for n in names))
    return replace(
        state.plan, budget=None, excluded=excluded, analysis=state.analysis, prep=state.prep
    )


def _budgeted(C, B, analysis, layout, amap, plan, options):
    """The plan and options of a try under the memory budget: its configuration chosen
    now (a MemoryBudgetWarning where it is not the one asked for), or the one the plan
    carries (a retry, a refactorization)."""
    choice = plan.budget
    if choice is None:
        choice = budget.choose(B, analysis, layout, amap, plan.kind, options, plan.excluded)
        if choice.message is not None:
            warnings.warn(choice.message, MemoryBudgetWarning, stacklevel=6)
    options = choice.apply(options)
    return replace(plan, budget=choice, factor_dtype=options.factor_dtype(C.dtype)), options


def _indefinite_plan(C, plan, options, seconds):
    """The plan after LLᵀ met a pivot that is not positive: LDLᵀ (LDLᴴ), its analysis
    made anew when 2x2 pairs want one (a given analysis is kept, without pairs)."""
    kind = indefinite_kind(C)
    if plan.given_analysis:
        return replace(plan, kind=kind, prep=None)
    t0 = time.perf_counter()
    prep = preprocess(
        C, kind, matching=_matching(options, kind), scaling=options.scaling, alone=options.schur
    )
    seconds["preprocess"] += time.perf_counter() - t0
    analysis = plan.analysis if prep.pairs is None else None
    return replace(plan, kind=kind, prep=prep, analysis=analysis)


def _attempt(C, plan, options, seconds, backend, reuse):
    """One try: preprocess (unless the plan carries it), analyse (unless it carries an
    analysis), factor with the backend; returns the State, its solver made."""
    kind = plan.kind
    t0 = time.perf_counter()
    prep, B = _preprocessed(C, plan, options)
    t1 = time.perf_counter()
    analysis = plan.analysis
    if analysis is None:
        analysis = analyze(
            B,
            ordering=_ordering(options, plan),
            kind=kind.name,
            pairs=prep.pairs,
            amalgamation=ROBUST_AMALGAMATION if plan.coarse else True,
            threads=options.threads,
            allowance=backend.allowance(options.threads),
            clusters=budget.analysis_clusters(options),
            schur=options.schur,
        )
    t2 = time.perf_counter()
    seconds["preprocess"] += t1 - t0
    seconds["analysis"] += t2 - t1
    if reuse is not None:
        layout, amap = reuse
    else:
        layout = PanelLayout.from_symbol(analysis.symbol)
        amap = AssemblyMap.build(B, analysis.iperm, layout, kind.two_factors)
    if options.memory_limit is not None:
        # Before anything is allocated for the factors.
        plan, options = _budgeted(C, B, analysis, layout, amap, plan, options)
    t3 = time.perf_counter()
    norm_a = _norm_inf(C)
    # Relative to B's largest entry, not to a row sum: a pivot is small next to the
    # entries it is eliminated against, and row sums grow with the row's length.
    eps = np.finfo(plan.factor_dtype).eps
    norm_max = _norm_max(B)
    if norm_max == 0 and C.shape[0]:
        raise SingularMatrixError(
            "the matrix is zero: every stored value is 0, so it is singular; check the "
            "assembly of its values",
            columns=list(range(C.shape[0])),
        )
    pivot_tol = options.pivot_tol or np.sqrt(eps) * norm_max
    seconds["preprocess"] += t3 - t2
    try:
        factors = backend.factorize(
            B,
            analysis,
            layout,
            amap,
            kind,
            pivot_tol,
            plan.factor_dtype,
            options.progress,
            options.threads,
            options.compress,
        )
    except OutOfMemoryError as exc:
        if plan.budget is None:
            raise
        plan = replace(plan, analysis=analysis, prep=prep)
        raise _Overrun(plan, (layout, amap), exc) from exc
    finally:
        # Every try's seconds count, a Cholesky that failed included.
        seconds["factorize"] = seconds.get("factorize", 0.0) + time.perf_counter() - t3
    if analysis.schur is not None:
        factors = SchurFactors.complete(factors, B, analysis.schur)
    perturbed = np.flatnonzero(factors.perturbed)
    footprint = factors.footprint()
    refine = options.refine
    if options.precision == "single" and refine[0] == "auto":
        refine = ("none", {})  # single precision, as asked: no refinement
    solver = Solver(
        kind=kind,
        C=C,
        prep=prep,
        factors=factors,
        norm_a=norm_a,
        norm_scaled=_norm_inf(B),
        pivot_tol=pivot_tol,
        # B's columns are A's columns: the matching permutes rows only.
        perturbed_columns=tuple(analysis.perm[perturbed].tolist()),
        refine=refine,
        threads=1 if is_small(analysis) else options.threads,
        gathers=pivot_order_gathers(prep, analysis.perm, analysis.iperm, C.dtype),
        promote=options.precision != "single",
        exact=plan.exact,
        compressed=footprint.compressed_cblks > 0,
    )
    stats = dict(analysis.stats, coarsened=plan.coarse)
    stats.update(
        version=__version__,
        path="supernodal",
        kind=kind.name,
        precision=_precision_name(C.dtype, factors.dtype, options.precision),
        factor_dtype=str(factors.dtype),
        factor_entries=footprint.entries,
        factor_bytes=footprint.nbytes,
        perturbed_pivots=int(perturbed.size),
        threads=factors.threads,
        openmp=OPENMP,
        pivot_tol=float(pivot_tol),
        matching=prep.row_perm is not None,
        pairs=0 if prep.pairs is None else int(prep.pairs.shape[0]),
        schur=0 if analysis.schur is None else int(analysis.schur.size),
        scaling=bool(prep.scaled),
        refinement_steps=0,
        refinement=None,
        backward_error=None,
        seconds=dict(seconds),
        compression=None
        if options.compress is None
        else compression_stats(options.compress, factors, options.compress.absolute_tol(B)),
        memory_budget=None if plan.budget is None else plan.budget.stats,
    )
    if perturbed.size and refine[0] == "none":
        warnings.warn(solve_policy.perturbed_message(solver), PastixWarning, stacklevel=5)
    return State(plan.kind, analysis, layout, amap, prep, plan, solver, backend, stats)


def _preprocessed(C, plan, options):
    """The plan's preprocessing (or a new one) and B = prep.apply(C), checked against a
    given analysis's pattern (a row matching that changes it is dropped)."""
    prep = plan.prep
    given = plan.analysis is not None and plan.given_analysis
    # A given analysis fixes the pattern: pairs cannot be added, a row matching
    # is kept only if the analysis was made after it (F.analysis).
    matching = _matching(options, plan.kind) and (not given or plan.kind.two_factors)
    if prep is None:
        prep = preprocess(
            C, plan.kind, matching=matching, scaling=options.scaling, alone=options.schur
        )
    B = prep.apply(C)
    if given and not _same_pattern(plan.analysis, B) and matching:
        prep = preprocess(C, plan.kind, matching=False, scaling=options.scaling)
        B = prep.apply(C)
    if given and not _same_pattern(plan.analysis, B):
        raise PatternMismatchError(
            "the analysis was made for another sparsity pattern; call pastixpy.analyze(A) "
            "or leave analysis= out"
        )
    return prep, B


def _matching(options, kind):
    """Whether the preprocessing may match rows (LU) or pair unknowns (LDLᵀ). A Schur
    complement is of A's own rows: no row matching; 2x2 pairs, but none with a Schur
    unknown (``preprocess(alone=...)``)."""
    return options.matching and (options.schur is None or not kind.two_factors)


def _check_schur_analysis(analysis, options):
    """An OptionError where a given analysis was made for other Schur unknowns (or for
    some, or for none) than ``schur=`` asks."""
    given, asked = analysis.schur, options.schur
    if given is None and asked is None:
        return
    if given is None or asked is None or not np.array_equal(given, asked):
        raise OptionError(
            "the analysis was made for "
            + ("no Schur unknowns" if given is None else f"{given.size} Schur unknowns")
            + " but schur= asks for "
            + ("none" if asked is None else f"{asked.size}" + ("" if given is None else " others"))
            + ": give analyze() the same schur= as factorize(), or leave analysis= out"
        )


def _ordering(options, plan):
    """The ordering option of a try. Where ``ordering="auto"`` had picked AMD for speed,
    the wider-supernode retry orders with METIS: its separators make other blocks, and
    no ordering suits every matrix."""
    ordering = options.ordering
    if plan.coarse and isinstance(ordering, (str, tuple)):
        name, kwargs = parse_option(ordering, ORDERINGS, "ordering")
        if name == "auto":
            # METIS with its own balance tolerance, once: this retry seeks other
            # blocks, not fewer flops.
            return ("metis", {"ufactor": METIS_UFACTORS[0], **kwargs})
    return ordering


def _verify(state):
    """The verify step: what the factors call for before they are handed out: ``"ok"``,
    ``"coarsen"``, ``"uncompressed"`` or ``"double"``. A solve with a known answer is
    refined when pivots were perturbed or the factors are in a lower precision than the
    matrix; it must reach the tolerance."""
    solver = state.solver
    perturbed = bool(solver.perturbed_columns)
    if perturbed and state.analysis.schur is not None:
        # Refinement corrects solves, not the Schur complement: S is that of the
        # perturbed matrix, so wider supernodes get one more try at pivoting locally.
        return "coarsen" if state.kind.local_pivots and not state.plan.coarse else "ok"
    if solver.refine[0] == "none" or not (perturbed or solver.mixed or solver.compressed):
        return "ok"
    if solve_policy.probe(solver):
        return "ok"
    if solver.compressed:
        return "uncompressed"
    if solver.mixed:
        return "double"
    if perturbed and state.kind.local_pivots and not state.plan.coarse:
        return "coarsen"
    return "ok"


def _warn_roundoff_pivot(state):
    """Single-precision Cholesky takes a singular matrix's roundoff-sized last pivot as
    positive, so no pivot is perturbed and the check's b = A x₀ (in the range) solves:
    a PastixWarning where a pivot is below ``pivot_tol`` and the condition number
    estimated from the factors is past 1/eps of their precision."""
    solver = state.solver
    try:
        pivots = np.abs(solver.factors.diagonal()) ** 2  # L's diagonal: the pivots' roots
    except NotImplementedError:  # spread over the ranks of a distributed factorization
        return
    if not pivots.size or pivots.min() >= solver.pivot_tol:
        return
    cond = solve_policy.condition_estimate(solver)
    eps = float(np.finfo(solver.factors.dtype).eps)
    if cond * eps < 1:
        return
    warnings.warn(
        f"the matrix may be singular: single-precision Cholesky took a pivot of "
        f"{pivots.min():.1e} (below {solver.pivot_tol:.1e}) as positive, and the condition "
        f"number estimated from the {solver.factors.dtype} factors, {cond:.1e}, is past "
        f"1/eps = {1 / eps:.1e} of their precision; a b outside its range will not solve "
        "(SingularMatrixError). precision='double' tells a singular matrix from one too "
        "ill-conditioned for single-precision factors",
        PastixWarning,
        stacklevel=5,
    )


def _precision_name(working_dtype, factor_dtype, asked):
    """The precision in effect: the factors' when they are the matrix's; "single" or
    "mixed" (as asked) when they are lower."""
    if factor_dtype == working_dtype:
        return "single" if np.dtype(factor_dtype).char in "fF" else "double"
    return "single" if asked == "single" else "mixed"


def _same_pattern(analysis, B):
    if analysis.n != B.shape[0]:
        return False
    xadj, adjncy = symmetric_pattern(B)
    return np.array_equal(xadj, analysis.xadj) and np.array_equal(adjncy, analysis.adjncy)


def _norm_max(C):
    """max |c_ij| of a sparse matrix (0 when it has no entries)."""
    return max_abs(C.data)


def _norm_inf(C):
    """‖C‖∞ of a canonical CSC matrix: the largest row sum of magnitudes."""
    return inf_norm(C.shape[0], C.indptr, C.indices, C.data)
