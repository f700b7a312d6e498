"""The user's surface: ``factorize`` → :class:`Factorization`, ``spsolve``, ``factorized``.

:func:`factorize` checks A and its options, then runs the pipeline
(:mod:`pastixpy.pipeline`: preprocess → analyze → numeric, with its retries); the
:class:`Factorization` it returns is the handle a user holds: solves (through the
pipeline's :class:`~pastixpy.solve.Solver`), refactorizations, determinants, inertia.
"""

import threading
import time
import warnings

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as sla

from . import pipeline, simplicial
from .errors import (
    InvalidInputError,
    OptionError,
    PastixError,
    PatternMismatchError,
    SingularMatrixError,
)
from .kinds import KINDS, auto_kind, check_kind, indefinite_kind
from .matrix import canonical_csc, symmetry_of
from .options import Options
from .permutation import parity
from .preprocess import check_structural_rank
from .runtime import blas_threads
from .solve import PastixWarning

__all__ = ["Factorization", "PastixWarning", "factorize", "factorized", "spsolve"]

#: :meth:`Factorization.inertia` counts perturbed pivots by their signs when one step
#: of iterative refinement shrinks the error at least this much (a contraction below 1
#: proves the inertia exact; the margin covers an estimate made from a few steps).
INERTIA_CONTRACTION = 0.5


class Factorization:
    """A numeric factorization of a square sparse matrix, ready to solve with.

    Made by :func:`factorize`. Solves are ``F.solve(b)`` (or ``F(b)``); the
    analysis and preprocessing are reused by :meth:`refactorize`. Any number of
    threads may solve with one factorization at once: a solve never changes it.

    It pickles (and ``copy.deepcopy`` copies it): the copy holds the same factors
    bit for bit, in memory of its own, solves exactly as the original and can be
    refactorized without touching it, so it can be sent to a ``multiprocessing``
    worker or saved. The options go with it, a ``progress`` callable included (a
    lambda does not pickle); its ``stats`` start without a last solve (those are
    per thread). A distributed factorization (``comm=``) raises TypeError.

    Attributes
    ----------
    kind : str
        ``"llt"``, ``"ldlt"``, ``"ldlh"`` or ``"lu"``, as factored.
    analysis : Analysis
    stats : dict
        The analysis statistics plus ``seconds`` per phase, ``factor_entries``,
        ``factor_bytes``, ``precision``, ``factor_dtype``, ``perturbed_pivots``,
        ``threads`` (of the numeric factorization), ``retries``, and
        ``refinement``, ``refinement_steps``, ``backward_error`` and
        ``seconds["solve"]`` of the last solve made by the calling thread (each
        thread sees its own).
    """

    def __init__(self, C, state, options):
        self.shape = C.shape
        self.dtype = state.solver.dtype
        self._options = options
        self._pattern = (C.indptr, C.indices)
        self._state = state
        self._last_solve = threading.local()
        # Why no solver is held, read only when none is: "running" is set before a
        # refactorize frees the factors and "failed" after it raises, so a solve that
        # finds no factors reads the reason that held when it looked.
        self._no_factors = "failed"

    def __getstate__(self):
        """Pickling and ``copy.deepcopy``: everything but the per-thread record of
        the last solve."""
        if self._options.comm is not None:
            raise TypeError(
                "a distributed factorization (comm=) cannot be pickled or copied: its "
                "factors are spread over the ranks of its communicator; factorize without "
                "comm= for a factorization that pickles"
            )
        state = dict(self.__dict__)
        del state["_last_solve"]
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._last_solve = threading.local()

    @property
    def kind(self):
        return self._state.kind

    @property
    def analysis(self):
        return self._state.analysis

    @property
    def stats(self):
        """The factorization's statistics and the calling thread's last solve (a copy)."""
        info = getattr(self._last_solve, "info", None)
        stats = dict(self._state.stats, seconds=dict(self._state.stats["seconds"]))
        if info is not None:
            stats.update(
                refinement_steps=info.refinement_steps,
                refinement=info.refinement,
                backward_error=info.backward_error,
            )
            stats["seconds"]["solve"] = info.seconds
        return stats

    @property
    def _solver(self):
        return self._state.solver

    @_solver.setter
    def _solver(self, solver):
        self._state.solver = solver

    @property
    def _live_solver(self):
        """The solver, or an error when the last refactorization failed and left none."""
        solver = self._state.solver
        if solver is None:
            if self._no_factors == "running":
                raise PastixError(
                    "this factorization holds no factors while refactorize() runs (the "
                    "previous factors were freed first, to hold one factor at a time): "
                    "solve once refactorize() has returned"
                )
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
        exact = check_kind(self.kind, C, symmetry_of(C), "refactorize")
        state = self._state
        # The previous factors go first: one factor in memory at a time.
        self._no_factors = "running"
        state.solver = None
        try:
            with blas_threads(self._options.threads):
                self._state = pipeline.refactorize(state, C, self._options, exact)
        except BaseException:
            self._no_factors = "failed"
            raise
        self._last_solve = threading.local()
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
        x : ndarray, same shape as b, dtype promoted from the factorization's and b's

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
        _check_rhs(b, n)
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

    # ------------------------------------------------------------------ as an operator:
    # F applies A⁻¹, so that scipy takes it where it takes a LinearOperator (M=F in gmres)

    def matvec(self, x):
        """A⁻¹ x (a solve), as a scipy LinearOperator's ``matvec``."""
        return self.solve(x)

    def rmatvec(self, x):
        """A⁻ᴴ x, as a LinearOperator's ``rmatvec``."""
        return self.solve(x, trans="H")

    def matmat(self, X):
        """A⁻¹ X for the columns of X."""
        return self.solve(X)

    def rmatmat(self, X):
        """A⁻ᴴ X for the columns of X."""
        return self.solve(X, trans="H")

    def aspreconditioner(self):
        """A scipy LinearOperator applying the factors' inverse without refinement, for
        ``M=`` in scipy's Krylov solvers (as PyAMG's ``aspreconditioner``).

        That is A⁻¹ to the factors' accuracy: about the compression tolerance for
        compressed factors, single precision for mixed precision's. A loose ``compress``
        tolerance makes a cheap preconditioner; ``F`` itself (refined solves) is
        accepted as ``M=`` too.
        """
        n = self.shape[0]
        solver = self._live_solver
        dtype = solver.dtype
        real_factors = not np.iscomplexobj(np.empty(0, dtype))

        def part(R, trans):
            return solver.apply_inverse(np.ascontiguousarray(R, dtype=dtype), trans)

        def apply(V, trans="N"):
            V = np.asarray(V)
            R = V.reshape(n, -1)
            with blas_threads(solver.threads):
                if np.iscomplexobj(R) and real_factors:
                    X = part(R.real, trans) + 1j * part(R.imag, trans)
                else:
                    X = part(R, trans)
            return X.reshape(V.shape)

        return sla.LinearOperator(
            (n, n),
            matvec=apply,
            rmatvec=lambda v: apply(v, "H"),
            matmat=apply,
            dtype=dtype,
        )

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

    def draw(self, ax=None, cmap="viridis"):
        """Draw the factor's block structure with matplotlib, compressed tiles coloured by
        rank (see :func:`pastixpy.compression.draw_blocks`); returns the Axes."""
        from .compression import draw_blocks

        factors = self._factors
        return draw_blocks(factors.layout, factors.storage, ax=ax, cmap=cmap)

    def slogdet(self):
        """Sign and natural log of |det(A)|, like ``numpy.linalg.slogdet``.

        With perturbed pivots this is the determinant of the perturbed matrix
        (a warning says so).
        """
        solver = self._live_solver
        F, prep = solver.factors, solver.prep
        # In double even for single-precision factors: a sum of n logarithms.
        d = F.diagonal().astype(np.promote_types(F.dtype, np.float64))
        complex_ = np.iscomplexobj(d)
        kind = F.kind
        if kind.definite:  # det A = det(L)², L's diagonal real and positive
            logabs = 2 * np.sum(np.log(np.abs(d)))
            sign = 1.0
        elif kind.two_factors:  # det A = ± det(U)
            logabs = np.sum(np.log(np.abs(d)))
            sign = np.prod(d / np.abs(d))
            if parity(F.pivots.lperm):  # row interchanges inside diagonal blocks
                sign = -sign
        else:  # det A = det(D), its 1x1 and 2x2 blocks
            d, one, _, det2 = F.d_blocks()
            d = d.astype(np.promote_types(d.dtype, np.float64))
            det2 = det2.astype(d.dtype)
            vals = np.concatenate([d[one], det2])
            logabs = np.sum(np.log(np.abs(vals)))
            sign = np.prod(vals / np.abs(vals))
        logabs -= np.sum(np.log(prep.dr)) + np.sum(np.log(prep.dc))
        if prep.row_perm is not None and parity(prep.row_perm):
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
        if self._live_solver.kind.definite:
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
        if solver.kind.definite:
            return (n, 0, 0)
        d, one, two, det2 = F.d_blocks()
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
        solver = self._live_solver
        if not solver.kind.symmetric:
            return False
        C = solver.C
        return solver.kind.hermitian or not np.iscomplexobj(C.data) or not C.data.imag.any()

    def __repr__(self):
        s = self._state.stats
        return (
            f"<Factorization {self.shape[0]}x{self.shape[1]} {self.dtype} kind={self.kind} "
            f"entries={s['factor_entries']} perturbed={s['perturbed_pivots']}>"
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
    precision="auto",
    compress=None,
    comm=None,
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
        and ``maxiter`` (refinement steps, and ten times as many Krylov
        iterations; at least 1).
    matching : {"auto", "on", "off"}
        LU: maximum-product row matching before the analysis; LDLᵀ/LDLᴴ: pairing
        of unknowns with weak diagonals into 2x2 pivots ("auto": on).
    scaling : {"auto", "on", "off"}
        Equilibration: rows and columns for LU, symmetric for LDLᵀ ("auto": on).
    pivot_tol : float, optional
        Static pivoting threshold; default ``sqrt(eps) * max|b_ij|`` of the scaled
        matrix B, eps that of the factors' precision.
    threads : int, optional
        At most this many threads for the numeric factorization and its solves, each
        running single-threaded BLAS (``1``: the calling thread alone); default: all
        the cores this process may use. Factorizations under 10⁸ flops
        (:data:`pastixpy.numeric.PARALLEL_MIN_FLOPS`) and their solves run on the calling
        thread, the BLAS on one thread, whatever is asked: more threads cost more than
        they save there (``stats["threads"]`` says how many ran). Each column block takes
        its updates in one order whatever the threads' timing, so the factors and solves
        are the same bits from run to run. The analysis runs its METIS orderings (one per
        ``ufactor``) on as many cores.
    progress : callable, optional
        ``progress(fraction)`` is called as the factorization advances.
    precision : {"auto", "double", "single", "mixed"} or ("mixed", {"fallback": bool})
        ``"auto"``: factors in the matrix's own precision. ``"double"``: everything
        in double (a single-precision matrix is converted). ``"single"``: factors in
        single precision, no refinement by default: single-precision accuracy.
        ``"mixed"``: factors stored and computed in single precision (half the
        memory, about half the time), the matrix, residuals and solution in double,
        refined to double accuracy (iterative refinement, then GMRES preconditioned
        by the single-precision factors). When single-precision factors cannot reach
        the tolerance on a check solve, ``"mixed"`` refactors in double with a
        warning (``stats["precision_fallback"]`` says why);
        ``("mixed", {"fallback": False})`` raises MixedPrecisionError instead.
    compress : None, float, "blr" or ("blr", dict)
        Block low-rank compression of the factors (docs/compression.md): a tolerance
        (``compress=1e-8``), relative to the Frobenius norm of the scaled matrix, or
        ``("blr", {"tol": 1e-8, "strategy": "jit", "method": "rrqr" | "svd" |
        "randomized", "min_width": 128, "min_height": 20, "max_ratio": 0.5, "norm":
        "matrix" | "absolute", "clusters": (160, 320)})``. Wide separators are cut
        into compact clusters, each cblk at least ``min_width`` wide is compressed as
        soon as it is factored, and solves are refined by GMRES preconditioned by the
        compressed factors to the requested backward error (``refine="none"``: the
        compressed factors' accuracy, about ``tol``). ``stats["compression"]`` reports
        the bytes saved, ranks and time; :meth:`Factorization.aspreconditioner` applies
        the compressed factors alone. Compressed factors that cannot be refined to the
        tolerance are refactored without compression, with a warning.
    comm : MPI communicator, optional
        Spread the factors over the ranks of ``comm`` (mpi4py's ``MPI.COMM_WORLD``):
        every rank calls ``factorize``, A given on rank 0 (None elsewhere) or by
        blocks of rows; returns a
        :class:`pastixpy.distributed.DistributedFactorization` on every rank, whose
        solves are collective (docs/distributed.md). One rank: as without.

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
    OutOfMemoryError
        The factors would not fit in the memory this process may take.
    MixedPrecisionError
        ``precision=("mixed", {"fallback": False})`` and single-precision factors
        cannot reach the tolerance.

    Examples
    --------
    >>> from pastixpy.gallery import laplacian
    >>> F = factorize(laplacian((20, 20)))
    >>> x = F.solve(np.ones(400))
    >>> F.kind, bool(F.stats["backward_error"] < 1e-14)
    ('llt', True)
    """
    t0 = time.perf_counter()
    options = Options.parse(
        kind=kind,
        ordering=ordering,
        refine=refine,
        matching=matching,
        scaling=scaling,
        pivot_tol=pivot_tol,
        threads=threads,
        progress=progress,
        precision=precision,
        compress=compress,
        comm=comm,
    )
    if options.comm is not None:
        from . import distributed

        if analysis is not None:
            raise OptionError(
                "analysis= cannot be reused with comm=: rank 0 analyses A itself (leave it out)"
            )
        return distributed.factorize_with(A, options, t0)
    return _factorize(canonical_csc(A), options, analysis, t0)


def _factorize(C, options, analysis, t0):
    """:func:`factorize` for a canonical C (spsolve's, made once)."""
    _check_refine_tol(options, C.dtype)
    symmetry = symmetry_of(C)
    kind, reason = _chosen_kind(C, symmetry, options)
    exact = check_kind(kind, C, symmetry, "factorize")
    check_structural_rank(C)
    t1 = time.perf_counter()
    with blas_threads(options.threads):
        state = pipeline.factorize(C, kind, options, analysis, exact)
    state.stats["seconds"] = {"check": t1 - t0, **state.stats["seconds"]}
    state.stats.update(symmetry=symmetry.kind, asymmetry=symmetry.asymmetry, kind_reason=reason)
    return Factorization(C, state, options)


def _chosen_kind(C, symmetry, options):
    """The kind to try first, and why. ``kind="auto"`` on a symmetric (Hermitian) matrix
    tries LLᵀ unless its diagonal already says it is not positive definite (a missing,
    zero or negative diagonal entry: the zero block of a saddle-point matrix), where
    it starts with LDLᵀ instead of paying for a Cholesky that fails."""
    if not options.auto_kind:
        return options.kind, "asked for"
    kind = auto_kind(symmetry.kind, np.iscomplexobj(C.data))
    if not KINDS[kind].definite:
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
    from .solve import PRECISION_FLOOR

    tol = options.refine[1].get("tol")
    work = options.working_dtype(dtype)
    floor = PRECISION_FLOOR * np.finfo(work).eps
    if tol is not None and options.refine[0] != "none" and tol < floor:
        raise OptionError(
            f"refine tol={tol:g} is below what {work} can reach (a backward error of about "
            f"{floor:.0e}, {PRECISION_FLOOR} units of roundoff): give tol >= {floor:.0e}"
            + ("" if np.finfo(work).bits == 64 else ", or precision='double' or 'mixed'")
        )


#: scipy's ``permc_spec`` values and the orderings that stand for them: SuperLU's
#: minimum degree variants become our minimum degree on A + Aᵀ (AMD), which every
#: factorization here orders (see docs/scipy.md).
PERMC_ORDERINGS = {
    "NATURAL": "natural",
    "MMD_ATA": "amd",
    "MMD_AT_PLUS_A": "amd",
    "COLAMD": "amd",
}


def spsolve(A, b, permc_spec=None, use_umfpack=True, **options):
    """Solve A x = b: a drop-in for ``scipy.sparse.linalg.spsolve``.

    Parameters
    ----------
    A : sparse matrix or array (any format)
    b : ndarray or sparse, shape (n,), (n, 1) or (n, k)
    permc_spec : {None, "NATURAL", "MMD_ATA", "MMD_AT_PLUS_A", "COLAMD"}, optional
        scipy's column ordering, mapped to an ordering (:data:`PERMC_ORDERINGS`);
        None leaves ``ordering`` to ``options`` (default ``"auto"``).
    use_umfpack : bool
        Accepted for scipy's signature and ignored: pastixpy is the solver.
    **options
        Passed to :func:`factorize`.

    Returns
    -------
    x : ndarray or sparse
        1-D when b is (n,) or (n, 1) like scipy's; (n, k) otherwise; sparse
        when b is sparse with k > 1 (of A's class when A is CSC or CSR, else a
        CSC array, as scipy does). For a singular A, as scipy's: a
        ``MatrixRankWarning`` (saying why) and a solution of NaNs.

    Raises
    ------
    InvalidInputError
        A or b is malformed, or b's rows do not match A (checked before any work).

    Notes
    -----
    A small matrix (at most :data:`pastixpy.simplicial.MAX_N` unknowns, float64 or
    complex128) with the default options (``ordering`` aside) is first solved by a
    sparse LU with threshold partial pivoting in one kernel call, its backward error
    checked and refined (:mod:`pastixpy.simplicial`); what that path cannot certify
    goes to :func:`factorize`'s pipeline.

    Examples
    --------
    >>> import scipy.sparse as sp
    >>> spsolve(sp.csc_array([[4.0, 1.0], [1.0, 3.0]]), [1.0, 2.0])
    array([0.09090909, 0.63636364])
    """
    if permc_spec is not None:
        if permc_spec not in PERMC_ORDERINGS:
            raise InvalidInputError(
                f"permc_spec={permc_spec!r} is not one of scipy's: {sorted(PERMC_ORDERINGS)}"
            )
        if "ordering" in options:
            raise InvalidInputError("give permc_spec (scipy's) or ordering, not both")
        options["ordering"] = PERMC_ORDERINGS[permc_spec]
    C = canonical_csc(A)
    b_sparse = sp.issparse(b)
    bb = b.toarray() if b_sparse else np.asarray(b)
    _check_rhs(bb, C.shape[0])
    vector = bb.ndim == 1 or (bb.ndim == 2 and bb.shape[1] == 1)
    t0 = time.perf_counter()
    analysis = options.pop("analysis", None)
    parsed = Options.from_keywords("spsolve", options)
    x = None
    if simplicial.applies(C, parsed, analysis):
        x = simplicial.solve(C, bb, parsed.ordering)
    try:
        if x is None:
            x = _factorize(C, parsed, analysis, t0).solve(bb)
    except SingularMatrixError as exc:
        warnings.warn(f"Matrix is exactly singular: {exc}", sla.MatrixRankWarning, stacklevel=2)
        dtype = np.promote_types(np.promote_types(C.dtype, bb.dtype), np.float64)
        x = np.full(bb.shape, np.nan, dtype=dtype)
    if vector:
        return x.reshape(-1)
    if b_sparse:
        # Like scipy: the class of A when it is CSC or CSR, else a CSC array.
        csx = sp.issparse(A) and A.format in ("csc", "csr")
        return (A.__class__ if csx else sp.csc_array)(x)
    return x


def _check_rhs(b, n):
    """The checks a solve makes on b, made before a factorization."""
    if b.dtype.kind not in "biufc":
        raise InvalidInputError(f"b has dtype {b.dtype}; it must be numeric")
    if b.ndim not in (1, 2) or b.shape[0] != n:
        raise InvalidInputError(
            f"b has shape {b.shape}; expected ({n},) or ({n}, k) for a {n}x{n} matrix"
        )
    if not np.isfinite(b).all():
        col = np.argwhere(~np.isfinite(b))[0]
        raise InvalidInputError(f"b has a NaN or Inf value at index {tuple(col.tolist())}")


def factorized(A, **options):
    """Factor A and return a function solving A x = b: a drop-in for scipy's ``factorized``.

    Like scipy's, a singular A raises a ``RuntimeError`` (here a
    :class:`~pastixpy.errors.SingularMatrixError`, when the factorization or a solve
    finds it); ``options`` go to :func:`factorize`.

    Examples
    --------
    >>> from pastixpy.gallery import laplacian
    >>> solve = factorized(laplacian((10, 10)))
    >>> solve(np.ones(100)).shape
    (100,)
    """
    F = factorize(A, **options)
    return F.solve
