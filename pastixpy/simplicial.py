"""spsolve's simplicial path: a small matrix ordered, factored and solved in one kernel
call each.

On a small matrix the supernodal pipeline's fixed costs (matching, scaling, the
symbolic factorization and block structure, the panel layout, the check of the kind
and of the pivots) outweigh its factorization's flops, and scipy's SuperLU answers
first. Here :func:`pastixpy.spsolve` orders such a matrix by minimum degree (our
AMD), factors it column by column with threshold partial pivoting
(:mod:`pastixpy._simplicial`, Gilbert-Peierls left-looking LU) within a flop budget,
and checks the solution's backward error, refining it where it is above the
tolerance.

Two strategies, tried in turn (UMFPACK's, in spirit):

- symmetric, for a pattern mostly symmetric or a diagonal without zeros: the graph
  of A + Aᵀ ordered, the diagonal preferred as pivot, so that the fill is the
  ordering's where the diagonal is strong (the ordering's forecast gives the budget);
- unsymmetric, for a pattern that is not, or when the first spent its budget (its
  pivots left the diagonal and made fill): the columns ordered by minimum degree on
  AᵀA, whose Cholesky factor bounds the fill of LU with any row pivots, without
  forming AᵀA (COLAMD's method, :mod:`pastixpy._colamd`: A's rows are the initial
  elements, dense rows left out), and as pivot the sparsest row of A among those
  within a threshold of the largest entry (UMFPACK's unsymmetric rule). A pattern
  not quite symmetric whose diagonal is almost nowhere strong enough to pivot on
  (:data:`WEAK_DIAGONAL_SHARE`) starts here.

What this path cannot certify goes to the pipeline, which factors from scratch and
says why where it fails: a zero pivot (a singular matrix), a budget spent (factors
dense enough for the BLAS to pay), a backward error that refinement does not bring to
the tolerance, a solution grown past what a nonsingular matrix gives (the pipeline's
criterion: a singular matrix and a b outside its range, whose tiny backward error
says nothing). A singular matrix with b in its range gets a solution, one of many,
as from SuperLU.

The path is spsolve's with its default options (``ordering`` or scipy's
``permc_spec`` aside) and a float64 or complex128 matrix, read in place where it is
canonical already (:func:`pastixpy.matrix.csc_view`). :func:`~pastixpy.factorize` takes
the same LU for a small unsymmetric matrix (:func:`pastixpy.pipeline._small_path`, with
the pipeline's checks on its pivots), and for a symmetric or Hermitian one an LDLᵀ
(LDLᴴ) without pivoting (:func:`factor_symmetric`, :mod:`pastixpy._simplicial_ldl`),
its D deciding whether the kind is LLᵀ. A symmetric matrix whose graph alone forecasts
more than half the budget (:func:`forecast_lower_bound`, :data:`BOUND_SHARE`) goes to
the pipeline before any ordering. See ``docs/analysis.md`` for the rule and the
measurements behind its bounds.
"""

from dataclasses import dataclass
from functools import cached_property

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as sla

from . import _simplicial, _simplicial_ldl
from ._amd import amd_order
from ._colamd import colamd_order
from ._graph import transpose_asymmetry, transposed_pairs
from ._symbolic import diagonal_positions
from .matrix import symmetric_pattern
from .solve_policy import default_tol, equilibrated_growth, singular_growth_limit

#: Matrices of at most this many unknowns are considered for the simplicial path;
#: those of a pattern the symmetric strategy does not take (below), up to
#: :data:`MAX_N_UNSYMMETRIC`: the pipeline's factorization of the matched A + Aᵀ holds
#: much more fill there than LU with row pivots after AᵀA's ordering.
MAX_N = 5000
MAX_N_UNSYMMETRIC = 50000

#: The simplicial factorization's flop budget: above it the supernodal factorization's
#: BLAS pays for the pipeline's fixed costs. The symmetric strategy's ordering forecasts
#: its flops (exact while the pivots stay on the diagonal): beyond the budget the
#: pipeline is taken at once (AᵀA's graph would hold more fill still), and its budget
#: is :data:`FORECAST_GROWTH` times the forecast plus :data:`SLACK_FLOPS`, past which
#: pivots off the diagonal have made fill the ordering did not plan for and the
#: unsymmetric strategy is tried. The same budget bounds the flops the columns of L
#: so far commit (the forecast's own measure, ``lu_factor``'s ``max_committed``): fill
#: shows there columns before the flops it causes are spent. A forecast for the
#: unsymmetric strategy (AᵀA's Cholesky factor, a bound for any row pivots) would
#: overstate its flops too much to decide by: its budget is
#: :data:`MAX_FLOPS_UNSYMMETRIC`, above this one for the reason of :data:`MAX_N_UNSYMMETRIC`.
#: Measured against the pipeline (docs/analysis.md): a 2D Laplacian 70² (6.4·10⁶ flops)
#: and watt_2 (7.0·10⁶) solve faster here, convection–diffusion 12³ (1.4·10⁷) there.
MAX_FLOPS = 1e7
#: The share of :data:`MAX_FLOPS` past which the graph's lower bound of the forecast
#: (:func:`forecast_lower_bound`) sends a matrix to the pipeline before any ordering.
#: The bound is weak where elimination fills (forecasts of 4 to 60 times it above 10⁶:
#: qc324, elasticity, bcsstk13, mbeacxc, bcsstk16), so a bound this close to the budget
#: means a forecast past it (bcsstk16's bound is 8.3·10⁶, its forecast 3.3·10⁸).
BOUND_SHARE = 0.5
MAX_FLOPS_UNSYMMETRIC = 2e7
FORECAST_GROWTH = 2.0
SLACK_FLOPS = 1e5

#: spsolve factors a real symmetric (Hermitian) matrix with a positive diagonal as
#: L D Lᵀ (L D Lᴴ), without pivoting, where the symmetric strategy's ordering forecasts
#: at least this many flops: half LU's work there (2D Laplacians of some hundreds of
#: unknowns and up, mhd1280b), where below it LU's one pass beats the LDLᵀ's symbolic
#: phase and its checks (bcsstk01, 494_bus, a Laplacian 13²).
LDL_MIN_FLOPS = 5e4
#: ... and where its entries (D's and D Lᵀ's) grew at most this much over A's largest
#: (at most 1 for a positive definite matrix): without pivots an indefinite one may
#: grow, and refinement then stops at the tolerance where LU's partial pivoting reaches
#: the roundoff. Past it, LU.
LDL_MAX_GROWTH = 10.0

#: The symmetric strategy is tried (first) when at least this fraction of A's
#: off-diagonal entries have a transposed partner (UMFPACK's rule), or when no diagonal
#: entry is zero (diagonal pivots are then possible); the graph of A + Aᵀ of a less
#: symmetric pattern holds many entries that are not A's.
SYMMETRIC_PATTERN = 0.5

#: ... unless the pattern is not exactly symmetric and at least this share of the
#: columns have a diagonal entry below :data:`PIVOT_THRESHOLD` times their largest
#: (``_simplicial.weak_diagonals``): every such column's first pivot leaves the
#: diagonal, and A + Aᵀ's ordering then forecasts nothing; the attempt spent its budget
#: on nnc1374 (every diagonal weak, 87% of the pattern symmetric) and cost a tenth of
#: the solve. Matrices whose pivots return to the diagonal after a few steps keep the
#: symmetric strategy (arc130 and rajat19, 77% and 69% weak, solve with it).
WEAK_DIAGONAL_SHARE = 0.9

#: The symmetric strategy takes the column's own (diagonal) row as pivot when it is at
#: least this fraction of the largest candidate: growth stays bounded by 1 + 1/threshold
#: per step, and the fill stays the ordering's where the diagonal is strong. The
#: unsymmetric one takes, among the candidates at least this fraction of the largest,
#: the row with the fewest entries in A (``_simplicial.PREFER_SPARSE_ROW``): against
#: the largest entry as pivot it made 10% fewer entries on nnc1374, 30% on bp_1200,
#: 7–9% on west0479, mahindas and reorientation_1, 12% more on hangGlider_2.
PIVOT_THRESHOLD = 0.1

#: Rows with more entries than this times √n (and 16) are dense: left out of the
#: unsymmetric strategy's ordering (COLAMD's default), as the clique they would make
#: in AᵀA's graph says nothing about the order.
DENSE_ROW = 10.0

#: Iterative refinement steps before the pipeline is asked instead.
MAX_STEPS = 3

#: The ordering options this path takes; anything else goes to the pipeline.
ORDERINGS = ("auto", "amd", "natural")


def applies(C, options, analysis, free=frozenset({"ordering"})):
    """Whether spsolve's problem may take this path: small, double precision, default
    options but for those named in ``free`` (the ordering, one this path has aside),
    no analysis given."""
    return (
        analysis is None
        and C.shape[0] <= MAX_N_UNSYMMETRIC
        and C.dtype in (np.float64, np.complex128)
        and (isinstance(options.ordering, str) and options.ordering in ORDERINGS)
        and options.changed <= free
    )


@dataclass(frozen=True)
class SimplicialLU:
    """P A Q = L U from :func:`factor`: the kernel's arrays, the column order q, the
    strategy that made them and their flops. (The supernodal factors of the pipeline
    are :class:`pastixpy.numeric.Factors`.)"""

    arrays: tuple
    q: np.ndarray
    strategy: str
    flops: float

    def apply_inverse(self, R):
        """A⁻¹ R for a 2-D R of the factors' dtype."""
        X = np.empty_like(R)
        _simplicial.lu_solve(*self.arrays, self.q, R, X)
        return X

    # The interface of :class:`pastixpy.numeric.Factors` that a
    # :class:`~pastixpy.solve.Solver` reads, for a factorization that keeps these factors
    # (:func:`pastixpy.pipeline.run_factorization`'s small path). The solver gathers the
    # rows into pivot order itself (:meth:`gathers`): these solves are L U's alone.

    @property
    def dtype(self):
        return self.arrays[2].dtype

    @property
    def entries(self):
        """Stored entries: L's below the diagonal, U's above it, U's diagonal."""
        return int(self.arrays[1].size + self.arrays[4].size + self.arrays[6].size)

    @property
    def nbytes(self):
        """Bytes of the factors' arrays (indices included)."""
        return int(sum(a.nbytes for a in self.arrays))

    def pivot_checks(self, C):
        """``(top, smallest)`` in one kernel pass (:func:`pastixpy._simplicial.lu_checks`):
        the largest magnitude in U, which over ‖A‖∞ is how far elimination grew the
        entries and bounds the factorization's backward error (a multiple of eps times
        it); the smallest magnitude on U's diagonal relative to the largest entry of
        its column in C, the factored matrix."""
        return _simplicial.lu_checks(C.indptr, C.data, *self.arrays[5:7], self.q)

    def smallest_pivot(self, C, scaling):
        """The smallest magnitude on U's diagonal of the LU of D_r C D_c with the same
        pivots (U's diagonal scaled by ``scaling`` = (D_r, D_c)) relative to that
        matrix's largest entry, as the pipeline's static pivoting measures a pivot on
        its scaled matrix."""
        udiag = np.abs(self.arrays[6])
        dr, dc = scaling
        prow = self.gathers()["N"][0]
        col = np.repeat(np.arange(C.shape[0]), np.diff(C.indptr))
        top = (np.abs(C.data) * dr[C.indices] * dc[col]).max()
        return float((udiag * dr[prow] * dc[self.q]).min(initial=np.inf) / top)

    @cached_property
    def _identity(self):
        return np.arange(self.q.size, dtype=np.int64)

    @cached_property
    def _transposed(self):
        """Uᵀ (lower, its diagonal stored) and Lᵀ (upper, unit diagonal not stored), CSR."""
        Lp, Li, Lx, Up, Ui, Ux, udiag, _ = self.arrays
        n = self.q.size
        Ut = sp.csr_array((Ux, Ui, Up), shape=(n, n)) + sp.diags_array(udiag, format="csr")
        Lt = sp.csr_array((Lx, Li, Lp), shape=(n, n))
        Ut.sort_indices()
        Lt.sort_indices()  # the kernel leaves a column's rows in the order it found them
        return Ut, Lt

    def solve_inplace(self, X, op="N"):
        """X ← (L U)⁻¹ X (``op="N"``) or (L U)⁻ᵀ X (``"T"``), X (n, k) in pivot order."""
        if op == "N":
            out = np.empty_like(X)
            ident = self._identity
            _simplicial.lu_solve(*self.arrays[:7], ident, ident, X, out)
            X[...] = out
            return
        Ut, Lt = self._transposed
        Y = sla.spsolve_triangular(Ut, X, lower=True)
        X[...] = sla.spsolve_triangular(Lt, Y, lower=False, unit_diagonal=True)

    def refined_solve(self, C, B, tol, max_steps):
        """X = A⁻¹ B (B (n, k) in C's dtype, C the factored matrix), each column refined
        while its backward error is above ``tol`` and falls, at most ``max_steps``
        times, in one kernel call: ``(X, backward errors, growths ‖A‖∞ ‖x‖∞ / ‖b‖∞,
        refinement steps in all)``. The :class:`~pastixpy.solve.Solver` of the small path
        calls it for A x = b."""
        X = np.empty(B.shape, dtype=C.dtype)
        berr, growth, steps = _simplicial.solve_refined(
            C.indptr, C.indices, C.data, *self.arrays, self.q, B, X, tol, max_steps
        )
        return X, berr, growth, int(steps.sum())

    def gathers(self):
        """The rows a solve gathers by (:func:`pastixpy.solve.pivot_order_gathers`'s
        format): P A Q = L U, so A x = b is x = Q U⁻¹ L⁻¹ P b and Aᵀ x = b is
        x = Pᵀ L⁻ᵀ U⁻ᵀ Qᵀ b; no scaling. Made once and kept (never modified)."""
        return self._gathers

    @cached_property
    def _gathers(self):
        pinv, q = self.arrays[7], self.q
        prow, iq = np.empty_like(pinv), np.empty_like(q)
        prow[pinv] = self._identity  # prow[k]: the row of A pivotal at step k
        iq[q] = self._identity
        return {"N": (prow, q, iq, None, None), "T": (q, prow, pinv, None, None)}

    def row_order(self):
        """The row permutation that, with the symmetric ordering q, makes P A Q: the
        ``row_perm`` of a :class:`~pastixpy.preprocess.Preprocessing` (B = A[row_perm],
        then ordered by q), for the solver's growth and condition checks."""
        prow, q, iq = self._gathers["N"][:3]
        return prow[iq]


def forecast_lower_bound(edges, n):
    """A lower bound on the flops AMD forecasts (LU with diagonal pivots, twice the sum
    of L's squared column counts below the diagonal) for any ordering of a graph of n
    vertices and this many edges: each edge puts one of its ends in the column of the
    other, eliminated first, so the counts sum to at least ``edges``, and their squares
    to at least ``edges² / n``. It decides without an ordering where the graph alone
    is past the budget (a stiffness matrix of some thousands of unknowns)."""
    return 2.0 * edges * edges / n if n else 0.0


def factor(C, ordering="auto", ldl=False):
    """:class:`SimplicialLU` of canonical C by the first strategy that holds within the
    budget (see the module), or None.

    With ``ldl`` (spsolve's call), a matrix of a symmetric pattern whose ordering
    forecasts at least :data:`LDL_MIN_FLOPS`, real symmetric or Hermitian with a
    positive diagonal (:func:`_definite_candidate_ldl`), is factored as L D Lᵀ (L D Lᴴ)
    without pivoting in that ordering (:func:`ldl_ordered`: half the flops), the
    :class:`SimplicialLDL` returned where its entries grew at most
    :data:`LDL_MAX_GROWTH`; where it meets a zero pivot or grew more, LU as usual."""
    n = C.shape[0]
    diagonal = _simplicial.diagonal_nonzeros(C.indptr, C.indices, C.data)
    off = C.nnz - diagonal  # off-diagonal entries (exact unless zeros are stored)
    by_forecast = ordering != "natural"  # the symmetric strategy decides by AMD's forecast

    def past_budget(edges):
        bound = forecast_lower_bound(edges, n)
        return n > MAX_N or (by_forecast and bound > BOUND_SHARE * MAX_FLOPS)

    if diagonal == n and past_budget(off / 2):
        return None  # the symmetric strategy's verdict, known before the graph is made
    pairs = transposed_pairs(n, C.indptr, C.indices)
    matched = 2 * pairs / off if off else 1.0  # with a transposed partner
    symmetric = matched >= SYMMETRIC_PATTERN or diagonal == n
    if symmetric and matched < 1.0 and _weak_diagonal(C):
        symmetric = False  # its first pivots would leave the diagonal: AᵀA's ordering
    if symmetric:  # A + Aᵀ's graph, for AMD; an unsymmetric pattern needs none
        xadj, adjncy = symmetric_pattern(C)
        if past_budget(adjncy.size / 2):
            return None
    for strategy in ("symmetric", "unsymmetric") if symmetric else ("unsymmetric",):
        budget = MAX_FLOPS if strategy == "symmetric" else MAX_FLOPS_UNSYMMETRIC
        committed = np.inf
        if ordering == "natural":
            q = np.arange(n, dtype=np.int64)
        elif strategy == "unsymmetric":
            q = colamd_order(C.indptr, C.indices, n, n, DENSE_ROW, check=False)
        else:
            q, forecast = amd_order(xadj, adjncy, n, with_flops=True, check=False)
            if forecast > MAX_FLOPS:
                return None  # AᵀA's graph holds more fill still: the pipeline's
            if ldl and forecast >= LDL_MIN_FLOPS and diagonal == n and 2 * pairs == off:
                F = _definite_candidate_ldl(C, q)
                if F is not None:
                    return F
            budget = committed = FORECAST_GROWTH * forecast + SLACK_FLOPS
        rule = (
            _simplicial.PREFER_DIAGONAL
            if strategy == "symmetric"
            else _simplicial.PREFER_SPARSE_ROW
        )
        status, _, arrays, flops = _simplicial.lu_factor(
            C.indptr, C.indices, C.data, q, PIVOT_THRESHOLD, budget, committed, rule
        )
        if status == _simplicial.OK:
            return SimplicialLU(arrays, q, strategy, flops)
        if status == _simplicial.ZERO_PIVOT:
            return None  # singular: the pipeline says where
    return None


def _weak_diagonal(C):
    """Whether at least :data:`WEAK_DIAGONAL_SHARE` of C's columns have a diagonal too
    weak to pivot on (below :data:`PIVOT_THRESHOLD` times the column's largest)."""
    weak = _simplicial.weak_diagonals(C.indptr, C.indices, C.data, PIVOT_THRESHOLD)
    return weak >= WEAK_DIAGONAL_SHARE * C.shape[0]


def _definite_candidate_ldl(C, q):
    """spsolve's LDLᵀ (LDLᴴ) of C in the order q (:func:`factor`), or None: C must be
    exactly symmetric (real) or Hermitian with a positive diagonal, as a positive
    definite matrix is, and the factors must not have grown past
    :data:`LDL_MAX_GROWTH`. A complex symmetric matrix is left to LU: without pivots
    its LDLᵀ grows on indefinite ones (a 2D Helmholtz 60²: 3·10³), which nothing
    cheaper than factoring tells apart from those where it does not."""
    # The diagonal first, O(n): a complex symmetric matrix's is seldom real.
    at = diagonal_positions(C.indptr, C.indices)
    if (at < 0).any():
        return None
    d = C.data[at]
    if not (d.real > 0).all() or (np.iscomplexobj(d) and d.imag.any()):
        return None
    symmetry = exact_symmetry(C)
    if symmetry is None:
        return None
    hermitian, scale = symmetry
    if np.iscomplexobj(C.data) and not hermitian:
        return None
    F = ldl_ordered(C, hermitian, q)
    if F is None or F.top > LDL_MAX_GROWTH * scale:
        return None
    return F


def exact_symmetry(C):
    """``(hermitian, largest magnitude)`` of canonical C whose values are exactly
    Hermitian (``hermitian`` True: complex, A = Aᴴ) or symmetric (False: A = Aᵀ; a real
    symmetric matrix is False, its LDLᵀ is its LDLᴴ), in one pass
    (:func:`pastixpy._graph.transpose_asymmetry`); None for neither, or for a pattern
    that is not symmetric."""
    n = C.shape[0]
    symmetric, asym_t, asym_h, scale = transpose_asymmetry(n, C.indptr, C.indices, C.data)
    if not symmetric:
        return None
    if asym_t == 0.0:
        return False, scale
    if np.iscomplexobj(C.data) and asym_h == 0.0:
        return True, scale
    return None


def solve_small(C, b, ordering="auto"):
    """x with A x = b, or None where this path cannot certify one (see the module):
    spsolve's solve of a small matrix, tried before the pipeline's.

    Parameters
    ----------
    C : scipy.sparse.csc_array or pastixpy.matrix.CSCView
        Canonical, float64 or complex128.
    b : ndarray, (n,) or (n, k), checked
    ordering : {"auto", "amd", "natural"}

    Returns
    -------
    x : ndarray of b's shape, dtype promoted from C's and b's, or None
    """
    F = factor(C, ordering, ldl=True)
    if F is None:
        return None
    x = _certified(C, F, b)
    if x is None and isinstance(F, SimplicialLDL):
        # Without pivots the LDLᵀ may have grown where partial pivoting does not: LU.
        F = factor(C, ordering)
        x = None if F is None else _certified(C, F, b)
    return x


def _certified(C, F, b):
    """x with A x = b by the factors F of C, refined, or None where its backward error
    or growth does not certify it (see the module)."""
    n = C.shape[0]
    B = b.reshape(n, -1)
    split = B.dtype.kind == "c" and C.dtype.kind != "c"
    if split:  # real factors: the real and imaginary parts are two real systems
        B = np.concatenate([B.real, B.imag], axis=1)
    if B.dtype != C.dtype:
        B = B.astype(C.dtype)
    tol = default_tol(C.dtype)
    x, berr, growth, _ = F.refined_solve(C, B, tol, MAX_STEPS)
    if berr.max(initial=0.0) > tol:
        return None
    limit = singular_growth_limit(C.dtype)
    if (
        growth.max(initial=0.0) > limit
        and (equilibrated_growth(C.tocsc(), x, B, limit=limit) > limit).any()
    ):
        return None  # a singular matrix and a b outside its range: the pipeline says so
    if split:
        k = x.shape[1] // 2
        x = x[:, :k] + 1j * x[:, k:]
    return x.astype(np.promote_types(C.dtype, b.dtype), copy=False).reshape(b.shape)


@dataclass(frozen=True)
class SimplicialLDL:
    """B = A[p][:, p] = L D Lᵀ (``hermitian``: L D Lᴴ) from :func:`factor_symmetric`,
    without pivoting (:mod:`pastixpy._simplicial_ldl`): L's CSC arrays (unit diagonal
    not stored), D, the ordering p and the flops. Its interface is
    :class:`SimplicialLU`'s, the one a :class:`~pastixpy.solve.Solver` reads."""

    Lp: np.ndarray
    Li: np.ndarray
    Lx: np.ndarray
    D: np.ndarray
    p: np.ndarray
    hermitian: bool
    flops: float
    #: :func:`pastixpy._simplicial_ldl.ldl_checks` of the factored matrix: the largest
    #: magnitude in D and L D, and the smallest |D_k| relative to its column of A.
    top: float
    smallest: float
    strategy: str = "ldlt"

    @property
    def dtype(self):
        return self.Lx.dtype

    @property
    def entries(self):
        """Stored entries: L's below the diagonal and D."""
        return int(self.Li.size + self.D.size)

    @property
    def nbytes(self):
        """Bytes of the factors' arrays (indices included)."""
        return int(sum(a.nbytes for a in (self.Lp, self.Li, self.Lx, self.D, self.p)))

    def pivot_checks(self, C):
        """``(top, smallest)``, :meth:`SimplicialLU.pivot_checks`'s for L D Lᵀ: the
        largest magnitude in D and in L D's columns (U = D Lᵀ's entries), the smallest
        |D_k| relative to the largest entry of its column in C (made with the factors,
        by :func:`pastixpy._simplicial_ldl.ldl_checks`)."""
        return self.top, self.smallest

    def smallest_pivot(self, C, scaling):
        """The smallest |D_k| of D_r C D_c (D scaled likewise, ``scaling`` = (D_r, D_c))
        relative to that matrix's largest entry, as :meth:`SimplicialLU.smallest_pivot`."""
        d = np.abs(self.D)
        dr, dc = scaling
        col = np.repeat(np.arange(C.shape[0]), np.diff(C.indptr))
        top = (np.abs(C.data) * dr[C.indices] * dc[col]).max()
        return float((d * dr[self.p] * dc[self.p]).min(initial=np.inf) / top)

    def positive_definite(self):
        """Whether every D_k is positive (its real part, for LDLᴴ; a complex symmetric
        matrix never is): Sylvester's law, the matrix is positive definite."""
        if self.D.dtype.kind == "c" and not self.hermitian:
            return False
        return bool((self.D.real > 0).all())

    def solve_inplace(self, X, op="N"):
        """X ← (L D Lᵀ)⁻¹ X (Lᴴ for LDLᴴ), X (n, k) in pivot order: the matrix is its own
        transpose (the Solver conjugates for the Hermitian kinds), so ``op`` is ``"N"``."""
        if op != "N":
            raise ValueError(f"SimplicialLDL solves op 'N' only, not {op!r}")
        _simplicial_ldl.ldl_solve(self.Lp, self.Li, self.Lx, self.D, X, self.hermitian)

    def refined_solve(self, C, B, tol, max_steps):
        """X = A⁻¹ B (B (n, k) in C's dtype, C the factored matrix), each column refined
        while its backward error is above ``tol`` and falls, at most ``max_steps``
        times, in one kernel call: ``(X, backward errors, growths, refinement steps in
        all)``, as :meth:`SimplicialLU.refined_solve`."""
        X = np.empty(B.shape, dtype=C.dtype)
        factors = (self.Lp, self.Li, self.Lx, self.D, self.p, self.hermitian)
        berr, growth, steps = _simplicial_ldl.ldl_solve_refined(
            C.indptr, C.indices, C.data, *factors, B, X, tol, max_steps
        )
        return X, berr, growth, int(steps.sum())

    def gathers(self):
        """The rows a solve gathers by (:func:`pastixpy.solve.pivot_order_gathers`'s
        format): the symmetric permutation p both ways, no scaling."""
        pinv = np.empty_like(self.p)
        pinv[self.p] = np.arange(self.p.size, dtype=self.p.dtype)
        g = (self.p, self.p, pinv, None, None)
        return {"N": g, "T": g}

    def row_order(self):
        """No row permutation: the ``row_perm`` of the Preprocessing is the identity."""
        return np.arange(self.p.size, dtype=np.int64)


def factor_symmetric(C, hermitian, ordering="auto"):
    """:class:`SimplicialLDL` of canonical C (both triangles of a symmetric or Hermitian
    matrix stored), ordered by our AMD on its pattern, or None: past the flop budget
    (:data:`MAX_FLOPS`, decided from C's entry count, then its graph, then the
    ordering's forecast, exact for LDLᵀ without pivoting), or a zero or non-finite D
    entry."""
    n = C.shape[0]
    if n > MAX_N:
        return None
    by_forecast = ordering != "natural"
    # C's off-diagonal entries, at least nnz - n, are edges of A + Aᵀ's graph: where
    # they alone put the forecast's bound past its share of the budget, the verdict
    # needs no graph.
    if by_forecast and forecast_lower_bound(max(C.nnz - n, 0) / 2, n) > BOUND_SHARE * MAX_FLOPS:
        return None
    xadj, adjncy = symmetric_pattern(C)
    if by_forecast and forecast_lower_bound(adjncy.size / 2, n) > BOUND_SHARE * MAX_FLOPS:
        return None
    if ordering == "natural":
        p = np.arange(n, dtype=np.int64)
        forecast = None
    else:
        p, forecast = amd_order(xadj, adjncy, n, with_flops=True, check=False)
        if forecast > MAX_FLOPS:
            return None
    return ldl_ordered(C, hermitian, p)


def ldl_ordered(C, hermitian, p):
    """:class:`SimplicialLDL` of canonical C (symmetric or Hermitian, both triangles
    stored) in the symmetric order ``p``, or None: past :data:`MAX_FLOPS` (the exact
    forecast of its symbolic phase), or a zero or non-finite D entry."""
    n = C.shape[0]
    p = np.ascontiguousarray(p, dtype=np.int64)
    pinv = np.empty_like(p)
    pinv[p] = np.arange(n, dtype=np.int64)
    Cp = np.asarray(C.indptr, dtype=np.int64)
    Ci = np.asarray(C.indices, dtype=np.int64)
    parent, Lp = _simplicial_ldl.ldl_symbolic(Cp, Ci, p, pinv)
    counts = np.diff(Lp).astype(np.float64)
    flops = float(2.0 * (counts * counts).sum())  # the forecast's measure
    if flops > MAX_FLOPS:
        return None
    status, _, Li, Lx, D = _simplicial_ldl.ldl_numeric(
        Cp, Ci, C.data, p, pinv, parent, Lp, hermitian
    )
    if status != _simplicial_ldl.OK:
        return None
    top, smallest = _simplicial_ldl.ldl_checks(Cp, C.data, Lp, Lx, D, p)
    return SimplicialLDL(Lp, Li, Lx, D, p, bool(hermitian), flops, top, smallest)
