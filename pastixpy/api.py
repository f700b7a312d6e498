"""The user's surface: ``factorize`` → :class:`Factorization`, ``spsolve``, ``factorized``.

A factorization runs the pipeline phase by phase: canonical matrix → kind →
structural check → preprocessing (matching, scaling) → analysis → numeric
factorization; a solve maps b into the factored space, runs the triangular
solves, maps back, and refines.
"""

import threading
import time
import warnings
from numbers import Integral

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as sla

from .analysis import analyze
from .errors import (
    InvalidInputError,
    NotPositiveDefiniteError,
    PastixError,
    PatternMismatchError,
)
from .matrix import canonical_csc, matrix_symmetry
from .numeric import AssemblyMap, PanelLayout, blas_threads, factorize_numeric
from .options import parse_option
from .ordering import METIS_UFACTORS, ORDERINGS
from .preprocess import check_structural_rank, preprocess
from .solve import PastixWarning, Solver, pivot_order_gathers

__all__ = ["Factorization", "PastixWarning", "factorize", "factorized", "spsolve"]

KINDS = {"auto": set(), "llt": set(), "ldlt": set(), "ldlh": set(), "lu": set()}
REFINE = {
    "auto": {"tol", "maxiter"},
    "ir": {"tol", "maxiter"},
    "gmres": {"tol", "maxiter"},
    "cg": {"tol", "maxiter"},
    "none": set(),
}
SWITCH = {"auto": set(), "on": set(), "off": set()}

#: Which kinds each value symmetry admits (real "symmetric" is also Hermitian; a
#: complex Hermitian matrix whose values are all real is also complex symmetric,
#: see :func:`_admissible`).
ADMISSIBLE = {
    ("symmetric", False): {"llt", "ldlt", "ldlh", "lu"},
    ("symmetric", True): {"ldlt", "lu"},
    ("hermitian", True): {"llt", "ldlh", "lu"},
    ("general", False): {"lu"},
    ("general", True): {"lu"},
}


#: :meth:`Factorization.inertia` counts perturbed pivots by their signs when one step
#: of iterative refinement shrinks the error at least this much (a contraction below 1
#: proves the inertia exact; the margin covers an estimate made from a few steps).
INERTIA_CONTRACTION = 0.5


#: Wider supernodes for a second try when static pivoting defeats refinement:
#: larger diagonal blocks leave local pivoting more rows to choose from.
ROBUST_AMALGAMATION = {"subtree": 256, "zrelax": (0.9, 0.5, 0.4)}


class Factorization:
    """A numeric factorization of a square sparse matrix, ready to solve with.

    Made by :func:`factorize`. Solves are ``F.solve(b)`` (or ``F(b)``); the
    analysis and preprocessing are reused by :meth:`refactorize`. Any number of
    threads may solve with one factorization at once: a solve never changes it.

    Attributes
    ----------
    kind : str
        ``"llt"``, ``"ldlt"``, ``"ldlh"`` or ``"lu"``, as factored.
    analysis : Analysis
    stats : dict
        The analysis statistics plus ``seconds`` per phase, ``factor_entries``,
        ``perturbed_pivots``, ``threads`` (of the numeric factorization), and
        ``refinement_steps``, ``backward_error`` and ``seconds["solve"]`` of the
        last solve made by the calling thread (each thread sees its own).
    """

    def __init__(self, C, kind, analysis, options):
        self.shape = C.shape
        self.dtype = C.dtype
        self._options = options
        self._pattern = (C.indptr, C.indices)
        self._solver = None
        self._last_solve = threading.local()
        self._setup(C, kind, analysis)

    @property
    def stats(self):
        """The factorization's statistics and the calling thread's last solve (a copy)."""
        info = getattr(self._last_solve, "info", None)
        stats = dict(self._stats, seconds=dict(self._stats["seconds"]))
        if info is not None:
            stats.update(refinement_steps=info.refinement_steps, backward_error=info.backward_error)
            stats["seconds"]["solve"] = info.seconds
        return stats

    # ------------------------------------------------------------------ numeric phase

    def _setup(self, C, kind, analysis, prep=None):
        """Preprocess (unless given ``prep``), analyse (unless given an analysis), factor C."""
        t0 = time.perf_counter()
        given = analysis is not None
        # A given analysis fixes the pattern: pairs cannot be added, a row matching
        # is kept only if the analysis was made after it (F.analysis).
        matching = self._options["matching"] and (not given or kind == "lu")
        scaling = self._options["scaling"]
        if prep is None:
            prep = preprocess(C, kind, matching=matching, scaling=scaling)
        B = prep.apply(C)
        if given and not _same_pattern(analysis, B) and matching:
            prep = preprocess(C, kind, matching=False, scaling=scaling)
            B = prep.apply(C)
        if given and not _same_pattern(analysis, B):
            raise PatternMismatchError(
                "the analysis was made for another sparsity pattern; call pastixpy.analyze(A) "
                "or leave analysis= out"
            )
        t1 = time.perf_counter()
        if analysis is None:
            analysis = analyze(
                B,
                ordering=self._options["ordering"],
                kind=kind,
                pairs=prep.pairs,
                threads=self._options["threads"],
            )
        t2 = time.perf_counter()
        self.kind = kind
        self.analysis = analysis
        self._layout = PanelLayout.from_symbol(analysis.symbol)
        self._assembly = None
        self._coarse = False
        self._stats = dict(analysis.stats, coarsened=False)
        self._stats["seconds"] = {"preprocess": t1 - t0, "analysis": t2 - t1}
        try:
            self._factor(C, prep, B)
        except NotPositiveDefiniteError:
            if not (self._options["auto_kind"] and kind == "llt"):
                raise
            # Not positive definite after all: LDLᵀ, on a new analysis if 2x2 pairs want one.
            indefinite = _indefinite_kind(C)
            if given:
                self._setup(C, indefinite, analysis)
                return
            prep = preprocess(C, indefinite, matching=self._options["matching"], scaling=scaling)
            self._setup(C, indefinite, analysis if prep.pairs is None else None, prep)

    def _factor(self, C, prep, B=None):
        """Numeric factorization of ``B = prep.apply(C)`` (pass B when already made).

        With perturbed pivots, a solve with a known answer checks that refinement
        can still reach its tolerance; where it cannot, the matrix is refactored once
        on wider supernodes (:meth:`_coarsen`). Solves never refactor.
        """
        t0 = time.perf_counter()
        if B is None:
            B = prep.apply(C)
        norm_a = _norm_inf(C)
        # Relative to B's largest entry, not to a row sum: a pivot is small next to the
        # entries it is eliminated against, and row sums grow with the row's length
        # (40 entries a row made 1e-2 pivots of a well-conditioned single-precision
        # matrix look small).
        pivot_tol = self._options["pivot_tol"] or np.sqrt(np.finfo(C.dtype).eps) * _norm_max(B)
        if self._assembly is None:
            self._assembly = AssemblyMap.build(B, self.analysis.iperm, self._layout, self.kind)
        self._prep = prep  # what a refactorization keeps (row matching, 2x2 pairs)
        t1 = time.perf_counter()
        # The previous factors go first: one factor in memory at a time, not two (a
        # refactorization that fails leaves none, see :attr:`_live_solver`). Solves
        # already running keep the solver they started with.
        self._solver = None
        factors = factorize_numeric(
            B,
            self.analysis,
            self._layout,
            self._assembly,
            self.kind,
            pivot_tol,
            self._options["progress"],
            self._options["threads"],
        )
        t2 = time.perf_counter()
        perturbed = np.flatnonzero(factors.perturbed)
        solver = Solver(
            kind=self.kind,
            C=C,
            prep=prep,
            factors=factors,
            norm_a=norm_a,
            pivot_tol=pivot_tol,
            # B's columns are A's columns: the matching permutes rows only.
            perturbed_columns=tuple(self.analysis.perm[perturbed].tolist()),
            refine=self._options["refine"],
            threads=self._options["threads"],
            gathers=pivot_order_gathers(prep, self.analysis, self.dtype),
        )
        self._stats.update(
            kind=self.kind,
            factor_entries=int(factors.L.size + factors.U.size),
            factor_bytes=int(factors.L.nbytes + factors.U.nbytes),
            perturbed_pivots=int(perturbed.size),
            threads=factors.threads,
            pivot_tol=float(pivot_tol),
            matching=prep.row_perm is not None,
            pairs=0 if prep.pairs is None else int(prep.pairs.shape[0]),
            scaling=bool(prep.scaled),
            refinement_steps=0,
            backward_error=None,
        )
        seconds = self._stats["seconds"]
        seconds["preprocess"] = seconds.get("preprocess", 0.0) + t1 - t0
        seconds["factorize"] = t2 - t1
        self._last_solve = threading.local()
        if (
            perturbed.size
            and self.kind != "llt"
            and not self._coarse
            and self._options["refine"][0] != "none"
            and not solver.probe()
        ):
            del factors, solver
            self._coarsen(C, prep, B)
            return
        self._solver = solver
        if perturbed.size and self._options["refine"][0] == "none":
            warnings.warn(solver.perturbed_message(), PastixWarning, stacklevel=4)

    def _coarsen(self, C, prep, B):
        """Refactor on wider supernodes, once, when perturbed pivots defeat refinement.

        Local pivoting (LU rows, Bunch-Kaufman) can only choose inside a
        diagonal block; wider blocks give it the choice static pivoting lacked,
        at the cost of more stored zeros. Where ``ordering="auto"`` had picked
        AMD for speed, the retry orders with METIS: its separators make other
        blocks, and no ordering suits every matrix (nnc1374 needs METIS's).
        """
        t0 = time.perf_counter()
        ordering = self._options["ordering"]
        if self.analysis.ordering.method == "amd" and isinstance(ordering, (str, tuple)):
            name, kwargs = parse_option(ordering, ORDERINGS, "ordering")
            if name == "auto":
                # METIS with its own balance tolerance, once: this retry seeks other
                # blocks, not fewer flops (and nnc1374 needs that ordering's).
                ordering = ("metis", {"ufactor": METIS_UFACTORS[0], **kwargs})
        self.analysis = analyze(
            B,
            ordering=ordering,
            kind=self.kind,
            pairs=prep.pairs,
            amalgamation=ROBUST_AMALGAMATION,
            threads=self._options["threads"],
        )
        seconds = self._stats["seconds"]
        seconds["analysis"] = seconds.get("analysis", 0.0) + time.perf_counter() - t0
        self._stats.update(self.analysis.stats, seconds=seconds, coarsened=True)
        self._layout = PanelLayout.from_symbol(self.analysis.symbol)
        self._assembly = None
        self._coarse = True
        self._factor(C, prep, B)

    @property
    def _live_solver(self):
        """The solver, or an error when the last refactorization failed and left none."""
        solver = self._solver
        if solver is None:
            raise PastixError(
                "this factorization holds no factors: its last refactorize() failed (the "
                "previous factors were freed first). Call refactorize() with a matrix that "
                "factors, or pastixpy.factorize() anew"
            )
        return solver

    @property
    def _factors(self):
        return self._live_solver.factors

    def refactorize(self, A):
        """Factor a new matrix with the same pattern, reusing the analysis and row matching.

        With ``kind="auto"``, a matrix that is no longer positive definite is
        refactored as LDLᵀ (LDLᴴ), with a new analysis when 2x2 pivots need one.

        The previous factors are freed before the new ones are made, so that one
        factor is in memory at a time (solves already running in other threads
        finish on the previous factors, which are freed after them). If the
        factorization fails (an error is raised), none is left: solves raise until a
        refactorize succeeds. Solves that start while a refactorize runs raise too.

        Returns
        -------
        self

        Raises
        ------
        PatternMismatchError
            A's pattern (stored entries, explicit zeros included) differs.
        """
        C = canonical_csc(A)
        if C.shape != self.shape or not (
            np.array_equal(C.indptr, self._pattern[0])
            and np.array_equal(C.indices, self._pattern[1])
        ):
            raise PatternMismatchError(
                "the new matrix does not have the sparsity pattern this factorization was "
                "analysed for; call pastixpy.factorize(A) for a new pattern"
            )
        if C.dtype != self.dtype:
            if np.promote_types(C.dtype, self.dtype) != self.dtype:
                raise InvalidInputError(
                    f"the new matrix has dtype {C.dtype}, this factorization {self.dtype}: "
                    "factorize it anew"
                )
            C = C.astype(self.dtype)
        _check_kind(self.kind, C, matrix_symmetry(C), "refactorize")
        prep = preprocess(
            C,
            self.kind,
            scaling=self._options["scaling"],
            row_perm=self._prep.row_perm,
            pairs=self._prep.pairs,
        )
        self._stats["seconds"] = {}
        try:
            self._factor(C, prep)
        except NotPositiveDefiniteError:
            if not (self._options["auto_kind"] and self.kind == "llt"):
                raise
            self._setup(C, _indefinite_kind(C), None)
        return self

    # ------------------------------------------------------------------ solves

    def solve(self, b, trans="N"):
        """Solve A x = b (``trans="N"``), Aᵀ x = b (``"T"``) or Aᴴ x = b (``"H"``).

        Parameters
        ----------
        b : array_like, shape (n,) or (n, k)
            Right-hand side(s); sparse b is densified.
        trans : {"N", "T", "H"}

        Returns
        -------
        x : ndarray, same shape as b, dtype promoted from A's and b's

        Raises
        ------
        SingularMatrixError
            Refinement could not reach the requested backward error: the message
            says whether the matrix is singular (perturbed pivots), too
            ill-conditioned for its precision (with a condition number estimate),
            or neither.
        """
        if trans not in ("N", "T", "H"):
            raise InvalidInputError(f"trans must be 'N', 'T' or 'H', got {trans!r}")
        b2, vector = self._rhs(b)
        solver = self._live_solver
        if b2.shape[1] == 0:
            return np.empty(b2.shape, dtype=np.promote_types(self.dtype, b2.dtype))
        x, info = solver.solve(b2, trans)
        self._last_solve.info = info
        return x[:, 0] if vector else x

    __call__ = solve

    def _rhs(self, b):
        n = self.shape[0]
        if sp.issparse(b):
            b = b.toarray()
        b = np.asarray(b)
        if b.dtype.kind not in "biufc":
            raise InvalidInputError(f"b has dtype {b.dtype}; it must be numeric")
        if b.ndim not in (1, 2) or b.shape[0] != n:
            raise InvalidInputError(
                f"b has shape {b.shape}; expected ({n},) or ({n}, k) for a {n}x{n} matrix"
            )
        if not np.isfinite(b).all():
            col = np.argwhere(~np.isfinite(b))[0]
            raise InvalidInputError(f"b has a NaN or Inf value at index {tuple(col.tolist())}")
        vector = b.ndim == 1
        b2 = b.reshape(n, -1)
        if b2.dtype.kind in "biu":
            b2 = b2.astype(np.float64)
        return b2, vector

    # ------------------------------------------------------------------ views and by-products

    @property
    def perm(self):
        """Pivot order: ``perm[k]`` is the column of A eliminated k-th."""
        return self.analysis.perm

    def aslinearoperator(self):
        """A scipy LinearOperator applying A⁻¹ (``rmatvec`` applies A⁻ᴴ)."""
        n = self.shape[0]
        return sla.LinearOperator(
            (n, n),
            matvec=lambda v: self.solve(v),
            rmatvec=lambda v: self.solve(v, trans="H"),
            matmat=lambda V: self.solve(V),
            dtype=self.dtype,
        )

    def slogdet(self):
        """Sign and natural log of |det(A)|, like ``numpy.linalg.slogdet``.

        With perturbed pivots this is the determinant of the perturbed matrix
        (a warning says so).
        """
        solver = self._live_solver
        F, prep = solver.factors, solver.prep
        d = F.diagonal()
        complex_ = np.iscomplexobj(d)
        if self.kind == "llt":
            logabs = 2 * np.sum(np.log(np.abs(d)))
            sign = 1.0
        elif self.kind == "lu":
            logabs = np.sum(np.log(np.abs(d)))
            sign = np.prod(d / np.abs(d))
            if _parity(F.lperm):  # row interchanges inside diagonal blocks
                sign = -sign
        else:
            d, one, _, det2 = _d_blocks(F)
            vals = np.concatenate([d[one], det2])
            logabs = np.sum(np.log(np.abs(vals)))
            sign = np.prod(vals / np.abs(vals))
        logabs -= np.sum(np.log(prep.dr)) + np.sum(np.log(prep.dc))
        if prep.row_perm is not None and _parity(prep.row_perm):
            sign = -sign
        if F.perturbed.any():
            warnings.warn(
                "slogdet is that of the matrix with perturbed pivots. "
                + solver.perturbed_message(),
                PastixWarning,
                stacklevel=2,
            )
        sign = complex(sign) if complex_ else float(np.real(sign))
        return sign, float(logabs)

    def logdet(self):
        """log(det(A)) of a positive definite matrix.

        Raises
        ------
        PastixError
            The matrix is not (Hermitian) positive definite.
        """
        if self.kind == "llt":
            return self.slogdet()[1]
        if not self._hermitian() or self.inertia()[0] != self.shape[0]:
            raise PastixError(
                f"logdet() needs a symmetric/Hermitian positive definite matrix, not this "
                f"{self.kind} factorization; use slogdet()"
            )
        return self.slogdet()[1]

    def inertia(self):
        """Numbers of positive, negative and zero eigenvalues (Sylvester's law on D).

        Defined for real symmetric and Hermitian factorizations. Without perturbed
        pivots it is exact. With perturbed pivots, D is that of a nearby matrix M;
        when iterative refinement shrinks the error of a solve with a known answer
        by at least :data:`INERTIA_CONTRACTION` per step, A and M provably have the
        same inertia (see :meth:`Solver.contraction`) and the perturbed pivots count
        with their signs. Otherwise (A singular, or too ill-conditioned for the
        perturbation) they count as zero eigenvalues, and a warning says that the
        split is unreliable.
        """
        if not self._hermitian():
            raise PastixError(
                f"inertia is defined for real symmetric or Hermitian matrices, not kind "
                f"{self.kind!r} on {self.dtype}"
            )
        n = self.shape[0]
        solver = self._live_solver
        F = solver.factors
        if self.kind == "llt":
            return (n, 0, 0)
        d, one, two, det2 = _d_blocks(F)
        d, det2 = np.real(d), np.real(det2)
        pert = F.perturbed
        rate = solver.contraction() if pert.any() else 0.0
        exact = rate <= INERTIA_CONTRACTION
        if not exact:
            one = one[~pert[one]]
        trace = d[two] + d[two + 1]
        # A 2x2 pivot with negative determinant has one eigenvalue of each sign.
        pos = int(np.sum(d[one] > 0) + np.sum(det2 < 0) + 2 * np.sum((det2 > 0) & (trace > 0)))
        neg = int(np.sum(d[one] < 0) + np.sum(det2 < 0) + 2 * np.sum((det2 > 0) & (trace < 0)))
        zero = n - pos - neg
        if not exact:
            warnings.warn(
                f"inertia counts perturbed pivots as zero eigenvalues; it is unreliable: "
                f"refinement shrinks errors by only {rate:.2g} per step, so the "
                f"perturbation is not small next to A's smallest eigenvalues (A may be "
                f"singular). " + solver.perturbed_message(),
                PastixWarning,
                stacklevel=2,
            )
        return (pos, neg, zero)

    def _hermitian(self):
        """Whether the factored matrix is real symmetric or Hermitian (D's signs count)."""
        if self.kind in ("llt", "ldlh"):
            return True
        if self.kind == "ldlt":
            C = self._live_solver.C
            return not np.iscomplexobj(C.data) or not C.data.imag.any()
        return False

    def __repr__(self):
        s = self._stats
        return (
            f"<Factorization {self.shape[0]}x{self.shape[1]} {self.dtype} kind={self.kind} "
            f"entries={s['factor_entries']} perturbed={s['perturbed_pivots']}>"
        )


def _d_blocks(F):
    """D's diagonal, the 1x1 pivot positions, the 2x2 pivot starts and the 2x2 determinants."""
    d = F.diagonal()
    one = np.flatnonzero(F.pivtype == 1)
    two = np.flatnonzero(F.pivtype == 2)
    off = F.dsub[two]
    det2 = d[two] * d[two + 1] - (np.conj(off) if F.conj else off) * off
    return d, one, two, det2


def _parity(p):
    """1 if the permutation is odd, 0 if even."""
    n = p.size
    graph = sp.csr_array((np.ones(n), (np.arange(n), p)), shape=(n, n))
    ncycles = sp.csgraph.connected_components(graph, directed=True, connection="weak")[0]
    return (n - ncycles) % 2


def _norm_max(C):
    """max |c_ij| of a sparse matrix (0 when it has no entries)."""
    return float(np.abs(C.data).max()) if C.nnz else 0.0


def _norm_inf(C):
    """‖C‖∞ of a canonical CSC matrix: the largest row sum of magnitudes."""
    if not C.nnz:
        return 0.0
    return float(np.bincount(C.indices, weights=np.abs(C.data), minlength=C.shape[0]).max())


def _admissible(C, symmetry):
    """The kinds that fit canonical C, whose value symmetry is ``symmetry``."""
    complex_ = np.iscomplexobj(C.data)
    allowed = ADMISSIBLE[(symmetry, complex_)]
    if complex_ and symmetry == "hermitian" and not C.data.imag.any():
        # Real values in a complex array: Hermitian and complex symmetric at once.
        allowed = allowed | ADMISSIBLE[("symmetric", True)]
    return allowed


def _check_kind(kind, C, symmetry, where):
    allowed = _admissible(C, symmetry)
    complex_ = np.iscomplexobj(C.data)
    if kind not in allowed:
        what = {
            "symmetric": "complex symmetric" if complex_ else "symmetric",
            "hermitian": "Hermitian",
            "general": "unsymmetric",
        }[symmetry]
        raise InvalidInputError(
            f"{where}: kind={kind!r} does not fit a {what} matrix; use one of {sorted(allowed)} "
            "or kind='auto'"
        )


def factorize(
    A,
    *,
    kind="auto",
    ordering="auto",
    analysis=None,
    refine="auto",
    matching="auto",
    scaling="auto",
    pivot_tol=None,
    threads=None,
    progress=None,
):
    """Factor a square sparse matrix: LLᵀ, LDLᵀ, LDLᴴ or LU.

    Parameters
    ----------
    A : scipy sparse matrix or array (any format), or dense array_like
    kind : {"auto", "llt", "ldlt", "ldlh", "lu"}
        ``"auto"``: symmetric/Hermitian → LLᵀ (LLᴴ), falling back to LDLᵀ
        (LDLᴴ) when a pivot is not positive; complex symmetric → LDLᵀ;
        otherwise LU on the pattern of A + Aᵀ.
    ordering : str, (str, dict) or array_like
        As for :func:`pastixpy.analyze`.
    analysis : Analysis, optional
        Reuse an analysis (skips ordering and symbolic factorization): that of
        an earlier factorization of a matrix with this pattern (``F.analysis``,
        made after its row matching and 2x2 pairing), or ``analyze(A)`` (then A
        is factored without matching or pairing: zero diagonals are left to
        static pivoting and refinement).
    refine : str or (str, dict)
        ``"auto"`` (refine when pivots were perturbed, the matrix was scaled,
        or the backward error is above ``tol``), ``"ir"`` (iterative refinement
        only), ``"gmres"`` / ``"cg"`` (refinement, then that Krylov method
        preconditioned by the factors), or ``"none"``; parameters ``tol``
        (requested backward error; 1e-12 in double, 1e-6 in single precision)
        and ``maxiter``.
    matching : {"auto", "on", "off"}
        LU: maximum-product row matching before the analysis; LDLᵀ/LDLᴴ: pairing
        of unknowns with weak diagonals into 2x2 pivots ("auto": on).
    scaling : {"auto", "on", "off"}
        Equilibration: rows and columns for LU, symmetric for LDLᵀ ("auto": on).
    pivot_tol : float, optional
        Static pivoting threshold; default ``sqrt(eps) * ‖B‖∞`` of the scaled matrix.
    threads : int, optional
        Threads for the numeric factorization and its solves, each running
        single-threaded BLAS (``1``: the calling thread alone); default: all the
        cores this process may use, or for factorizations under 10⁸ flops the
        calling thread with the BLAS as configured. The analysis runs its METIS
        orderings (one per ``ufactor``) on as many cores.
    progress : callable, optional
        ``progress(fraction)`` is called as the factorization advances.

    Returns
    -------
    Factorization

    Raises
    ------
    InvalidInputError
        Bad A, or a kind that does not fit A's symmetry.
    SingularMatrixError
        A is structurally singular (the columns are named).
    NotPositiveDefiniteError
        ``kind="llt"`` and A is not positive definite.

    Examples
    --------
    >>> from pastixpy.gallery import laplacian
    >>> F = factorize(laplacian((20, 20)))
    >>> x = F.solve(np.ones(400))
    >>> F.kind, bool(F.stats["backward_error"] < 1e-14)
    ('llt', True)
    """
    t0 = time.perf_counter()
    kind, _ = parse_option(kind, KINDS, "kind")
    if pivot_tol is not None and not pivot_tol > 0:
        raise InvalidInputError(f"pivot_tol must be positive, got {pivot_tol!r}")
    if threads is not None and (
        isinstance(threads, bool) or not isinstance(threads, Integral) or threads < 1
    ):
        raise InvalidInputError(f"threads must be a positive integer, got {threads!r}")
    options = {
        "ordering": ordering,
        "refine": parse_option(refine, REFINE, "refine"),
        "matching": parse_option(matching, SWITCH, "matching")[0] != "off",
        "scaling": parse_option(scaling, SWITCH, "scaling")[0] != "off",
        "pivot_tol": None if pivot_tol is None else float(pivot_tol),
        "progress": progress,
        "auto_kind": kind == "auto",
        "threads": threads,
    }
    C = canonical_csc(A)
    complex_ = np.iscomplexobj(C.data)
    symmetry = matrix_symmetry(C)
    if kind == "auto":
        kind = {"hermitian": "llt", "general": "lu"}.get(symmetry, "ldlt" if complex_ else "llt")
    _check_kind(kind, C, symmetry, "factorize")
    check_structural_rank(C)
    t1 = time.perf_counter()
    with blas_threads(threads):
        F = Factorization(C, kind, analysis, options)
    F._stats["seconds"] = {"check": t1 - t0, **F._stats["seconds"]}
    return F


def _indefinite_kind(C):
    """The kind ``"auto"`` falls back to when a symmetric matrix is not positive definite."""
    return "ldlh" if np.iscomplexobj(C.data) else "ldlt"


def _same_pattern(analysis, B):
    from .matrix import symmetric_pattern

    if analysis.n != B.shape[0]:
        return False
    xadj, adjncy = symmetric_pattern(B)
    return np.array_equal(xadj, analysis.xadj) and np.array_equal(adjncy, analysis.adjncy)


def spsolve(A, b, **options):
    """Solve A x = b: a drop-in for ``scipy.sparse.linalg.spsolve``.

    Parameters
    ----------
    A : sparse matrix or array (any format)
    b : ndarray or sparse, shape (n,), (n, 1) or (n, k)
    **options
        Passed to :func:`factorize`.

    Returns
    -------
    x : ndarray or sparse
        1-D when b is (n,) or (n, 1) like scipy's; (n, k) otherwise; sparse
        when b is sparse with k > 1 (of A's class when A is CSC or CSR, else a
        CSC array, as scipy does).

    Examples
    --------
    >>> import scipy.sparse as sp
    >>> spsolve(sp.csc_array([[4.0, 1.0], [1.0, 3.0]]), [1.0, 2.0])
    array([0.09090909, 0.63636364])
    """
    b_sparse = sp.issparse(b)
    bb = b.toarray() if b_sparse else np.asarray(b)
    vector = bb.ndim == 1 or (bb.ndim == 2 and bb.shape[1] == 1)
    x = factorize(A, **options).solve(bb)
    if vector:
        return x.reshape(-1)
    if b_sparse:
        # Like scipy: the class of A when it is CSC or CSR, else a CSC array.
        csx = sp.issparse(A) and A.format in ("csc", "csr")
        return (A.__class__ if csx else sp.csc_array)(x)
    return x


def factorized(A, **options):
    """Factor A and return a function solving A x = b: a drop-in for scipy's ``factorized``.

    Examples
    --------
    >>> from pastixpy.gallery import laplacian
    >>> solve = factorized(laplacian((10, 10)))
    >>> solve(np.ones(100)).shape
    (100,)
    """
    F = factorize(A, **options)
    return F.solve
