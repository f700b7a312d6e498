"""The user's surface: ``factorize`` → :class:`~pastixpy.factorization.Factorization`,
``spsolve``, ``factorized``.

:func:`factorize` validates its options and runs the pipeline (:mod:`pastixpy.pipeline`:
check → preprocess → analyze → numeric, with its retries) in this process, or, with
``comm=``, over the ranks of a communicator (:mod:`pastixpy.distributed`, which runs the
same pipeline with its own numeric backend). The handle it returns is
:class:`~pastixpy.factorization.Factorization`'s.
"""

import time
import warnings

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as sla

from . import distributed, simplicial
from .errors import InvalidInputError, OptionError, PastixWarning, SingularMatrixError
from .factorization import Factorization, check_rhs
from .matrix import CSCView, canonical_csc, csc_view
from .options import Options

__all__ = [
    "Factorization",
    "PastixWarning",
    "factorize",
    "factorized",
    "schur_complement",
    "spsolve",
]


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
    condest=False,
    schur=None,
    memory_limit=None,
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
        running single-threaded BLAS (``1``: the calling thread alone); default: what
        the environment allows (``OMP_NUM_THREADS`` or a threadpoolctl limit, else
        every core this process may use: :func:`pastixpy.runtime.default_threads`).
        Factorizations under 10⁸ flops
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
    condest : bool
        Estimate the 1-norm condition number once factored
        (:meth:`Factorization.condest`, a few refined solves) and put it in
        ``stats["condest"]`` (its time in ``stats["seconds"]["condest"]``).
    schur : array_like of int, optional
        Unknowns to keep: every other unknown is eliminated and the dense Schur
        complement S = A₂₂ − A₂₁ A₁₁⁻¹ A₁₂ on them, in the order given, is
        :meth:`Factorization.schur`; :meth:`Factorization.schur_reduce` and
        :meth:`Factorization.schur_expand` are the partial solves around it. The
        Schur unknowns are ordered last, as one block that the factorization
        updates but does not factor (docs/solve.md, "Schur complement"). Not with
        ``compress``, ``precision="mixed"`` or ``comm``; no row matching, and no 2x2
        pair takes a Schur unknown. Full solves still work (a dense LU of S between
        the sweeps).
    memory_limit : int, str or None
        A memory budget: bytes (``8 * 2**30``), a size (``"8GiB"``, ``"512MiB"``,
        ``"2.5GB"``), or ``"auto"`` (what the process may take). Before anything is
        allocated, the fastest configuration whose forecast fits the smaller of this and
        what the process may still take is chosen (:mod:`pastixpy.budget`): full rank,
        mixed precision, block low-rank just in time, mixed with it, minimal memory,
        mixed with it; a precision other than ``"auto"``, ``compress=`` (``False``:
        never compress) and a named compression strategy are kept.
        ``stats["memory_budget"]`` says what was chosen and why, with each
        configuration's forecast; a :class:`~pastixpy.errors.MemoryBudgetWarning` says
        so where it is not the configuration asked for. Refactorizations keep it.

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
        The factors would not fit in the memory this process may take (with
        ``memory_limit``: no configuration fits the budget).
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
    options = Options.of_call(
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
        condest=condest,
        schur=schur,
        memory_limit=memory_limit,
    )
    if options.comm is not None:
        if options.schur is not None:
            raise OptionError(
                "schur= is not available with comm= (a distributed factorization): factor "
                "in one process"
            )
        if analysis is not None:
            raise OptionError(
                "analysis= cannot be reused with comm=: rank 0 analyses A itself (leave it out)"
            )
        return distributed.factorize_with(A, options, t0)
    return Factorization.from_matrix(canonical_csc(A), options, analysis, t0=t0)


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
    # A small matrix already canonical is read in place by the simplicial path; the
    # pipeline, which keeps its matrix, gets the canonical copy.
    C = csc_view(A) if sp.issparse(A) and A.shape[0] <= simplicial.MAX_N_UNSYMMETRIC else None
    if C is None:
        C = canonical_csc(A)
    b_sparse = sp.issparse(b)
    bb = b.toarray() if b_sparse else np.asarray(b)
    check_rhs(bb, C.shape[0])
    vector = bb.ndim == 1 or (bb.ndim == 2 and bb.shape[1] == 1)
    t0 = time.perf_counter()
    analysis = options.pop("analysis", None)
    parsed = Options.from_keywords("spsolve", options)
    if parsed.schur is not None:
        raise OptionError(
            "spsolve takes no schur=: it solves for every unknown; use "
            "pastixpy.factorize(A, schur=...) for the Schur complement"
        )
    x = None
    tried = simplicial.applies(C, parsed, analysis)
    if tried:
        x = simplicial.solve_small(C, bb, parsed.ordering)
    try:
        if x is None:
            # Where the simplicial path could not certify x, factorize's small path (the
            # same LU) would not either: the pipeline proper, without a second try.
            if isinstance(C, CSCView):
                C = canonical_csc(A)
            F = Factorization.from_matrix(C, parsed, analysis, t0=t0, small=not tried)
            x = F.solve(bb)
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


def schur_complement(A, schur, **options):
    """The dense Schur complement S = A₂₂ − A₂₁ A₁₁⁻¹ A₁₂ of A on the unknowns ``schur``.

    python-mumps's ``mumps.schur_complement(A, indices)`` under the same name: a
    shorthand for ``factorize(A, schur=schur, **options).schur()``. Keep the
    factorization instead (``F = factorize(A, schur=...)``) for the partial solves
    around S (:meth:`Factorization.schur_reduce`, :meth:`Factorization.schur_expand`).

    Parameters
    ----------
    A : sparse matrix or array (any format), square
    schur : array_like of int
        The unknowns kept: rows and columns of S, in this order.
    **options
        Passed to :func:`factorize`.

    Returns
    -------
    S : ndarray, shape (len(schur), len(schur)), A's dtype

    Examples
    --------
    >>> import scipy.sparse as sp
    >>> A = sp.csc_array([[4.0, 1.0, 0.0], [1.0, 3.0, 1.0], [0.0, 1.0, 2.0]])
    >>> schur_complement(A, [2])  # 2 - [0 1] A₁₁⁻¹ [0 1]ᵀ
    array([[1.63636364]])
    """
    return factorize(A, schur=schur, **options).schur()
