"""The levels of the multilevel method and their construction.

Level by level: a smoother is set up on A, a C/F splitting is chosen; if it coarsens
enough (see :mod:`.coarsening`), test vectors are relaxed, the interpolation P and the
restriction R are built (:mod:`.transfer`), the F-relaxation is set up on A_ff's diagonal,
and the coarse operator ``R A P`` becomes the next level's A. The last level is factored
(:mod:`.coarse`).
"""

import time
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from ..errors import InvalidInputError
from .checks import is_symmetric
from .coarse import CoarseSolver, galerkin, sparsify
from .coarsening import Splitting, f_relaxation_rate, split
from .smoothers import FRelaxation, NormalChebyshevSmoother
from .transfer import interpolation, local_ideal_weights, prolongator, relaxed_test_vectors

__all__ = ["Level", "build_levels", "operator_bytes"]


@dataclass
class Level:
    """One level of the hierarchy.

    Attributes
    ----------
    A : csr_array
        The level's operator (the Galerkin product of the level above).
    P : csr_array or None
        Interpolation from the next level (None on the coarsest).
    R : csr_array or None
        Explicit restriction, when it is neither Pᵀ nor Pᴴ.
    restriction : str
        ``"transpose"`` (R = Pᵀ), ``"adjoint"`` (R = Pᴴ) or ``"explicit"``.
    splitting : Splitting or None
    smoother, f_relaxation : objects with ``apply(A, b, x)``, or None
    coarse : CoarseSolver or None
        The factorization, on the coarsest level only.
    seconds : dict
        Setup seconds of this level by phase.
    stop_reason : str
        On the coarsest level, why coarsening stopped there.
    f_rate : float or None
        Estimated convergence factor of Jacobi on A_ff (compatible relaxation).
    galerkin_nnz : int or None
        On the coarsest level, the entries of the Galerkin product before it was
        sparsified (A is then the sparsified operator that was factored).
    """

    A: sp.csr_array
    P: sp.csr_array | None = None
    R: sp.csr_array | None = None
    restriction: str = "transpose"
    splitting: Splitting | None = None
    smoother: object = None
    f_relaxation: object = None
    coarse: CoarseSolver | None = None
    seconds: dict = field(default_factory=dict)
    stop_reason: str = ""
    f_rate: float | None = None
    galerkin_nnz: int | None = None

    @property
    def n(self):
        return self.A.shape[0]

    def restrict(self, r):
        if self.restriction == "transpose":
            return self.P.T @ r
        if self.restriction == "adjoint":
            return (self.P.T @ r.conj()).conj()
        return self.R @ r


def operator_bytes(M):
    """Bytes held by a CSR/CSC matrix's arrays."""
    if M is None:
        return 0
    return int(M.data.nbytes + M.indices.nbytes + M.indptr.nbytes)


def build_levels(A, opts, rng, original=None):
    """Build the hierarchy for A with validated options (see :func:`helmholtz_solver`).

    ``original`` is the caller's matrix, when A is a CSR copy of it: once the first
    level is built, the finest level keeps the caller's matrix (when it is a canonical
    CSC or CSR array of the same values) instead of the copy.

    Returns
    -------
    list of Level
    """
    levels = []
    single = opts.precision == "single"
    shape = opts.coarsening_params.get("shape")
    symmetric = is_symmetric(A)
    inherited = None  # the C values of the level above's test vectors
    hermitian = (not symmetric) and np.iscomplexobj(A.data) and _is_hermitian(A)
    for number in range(opts.max_levels):
        level = Level(A)
        levels.append(level)
        if number == opts.max_levels - 1:
            level.stop_reason = "max_levels"
            break
        if A.shape[0] <= opts.max_coarse:
            level.stop_reason = "max_coarse"
            break
        t = time.perf_counter()
        if opts.coarsening_callable is not None:
            splitting = _user_splitting(opts.coarsening_callable, A, number)
        else:
            splitting = split(A, opts.coarsening, opts.coarsening_params, shape)
        level.seconds["splitting"] = time.perf_counter() - t
        nf = int(splitting.fmask.sum())
        if splitting.stop:
            level.stop_reason = splitting.stop
            break
        if nf == 0 or nf == A.shape[0] or splitting.coarse_ratio > opts.max_ratio:
            level.stop_reason = (
                f"coarsening stalls ({splitting.coarse_ratio:.0%} of the unknowns would stay)"
            )
            break
        level.f_rate = f_relaxation_rate(A, splitting.fmask)
        level.splitting = splitting
        t = time.perf_counter()
        level.smoother = _setup_smoother(opts.smoother, A, rng)
        level.seconds["smoother"] = time.perf_counter() - t
        W, V = _weights(A, splitting, opts, rng, level, inherited)
        inherited = None
        level.P = P = prolongator(W, splitting)
        del W
        t = time.perf_counter()
        if symmetric:
            level.restriction = "transpose"
            R = None
        elif hermitian:
            level.restriction = "adjoint"
            R = sp.csr_array(P.conj().T)
        else:
            # The ideal restriction of A is the transposed ideal interpolation of Aᵀ.
            At = sp.csr_array(A.T)
            Wt, _ = _weights(At, splitting, opts, rng, None)
            level.R = R = sp.csr_array(prolongator(Wt, splitting).T)
            level.restriction = "explicit"
        level.seconds["restriction"] = time.perf_counter() - t
        if opts.f_relaxation is not None:
            F = splitting.fpoints
            level.f_relaxation = FRelaxation(F, A.diagonal()[F], **opts.f_relaxation)
        t = time.perf_counter()
        if single:
            # Stored, and used by the cycle, in single precision; the Galerkin product
            # too is formed in single precision below the finest level.
            level.P, level.R = _lower(P), _lower(level.R)
            if number > 0:
                P, R = level.P, (_lower(R) if level.R is None else level.R)
            A = _lower(galerkin(A, P, R))
        else:
            A = galerkin(A, P, R)
        del P, R
        level.seconds["galerkin"] = time.perf_counter() - t
        if number == 0 and _same_matrix(original, level.A):
            level.A = original
        inherited = None if V is None or not opts.test_coarse_steps else V[splitting.cpoints]
        del V
        shape = splitting.shape
    del A
    coarsest = levels[-1]
    t = time.perf_counter()
    coarse_vectors = None
    params = dict(opts.coarse_params)
    if coarsest.A.shape[0] <= params.pop("sparsify_above"):
        params["drop"] = 0.0
    if params["drop"] > 0 and params["compensate"] and len(levels) > 1:
        # Near-kernel vectors of the coarsest operator itself, for its sparsification.
        relax = _test_vector_relaxation(opts.smoother, coarsest.A, rng)
        steps = opts.test_steps if inherited is None else opts.test_coarse_steps
        coarse_vectors = relaxed_test_vectors(
            coarsest.A, relax, opts.test_count, steps, rng, inherited
        )
        coarsest.seconds["test_vectors"] = time.perf_counter() - t
    del inherited
    t = time.perf_counter()
    # Sparsified here rather than by CoarseSolver, so that neither the test vectors nor
    # the denser Galerkin product are alive while the factorization allocates its factors
    # (the setup's peak). The cycle uses the coarsest level through its factorization
    # only, and keeps the sparsified operator that was factored.
    coarsest.galerkin_nnz = int(coarsest.A.nnz)
    symmetry = "symmetric" if symmetric else "hermitian" if hermitian else "general"
    coarsest.A = sparsify(coarsest.A, params.pop("drop"), coarse_vectors, symmetry)
    del coarse_vectors
    params.pop("compensate")
    if params["precision"] is None:  # the factors follow the coarse levels' precision
        params["precision"] = opts.precision if len(levels) > 1 else "double"
    coarsest.coarse = CoarseSolver(
        coarsest.A, drop=0.0, threads=opts.threads, level=len(levels) - 1, **params
    )
    coarsest.seconds["coarse_factor"] = time.perf_counter() - t
    return levels


def _weights(A, splitting, opts, rng, level, inherited=None):
    """Interpolation weights W (nf × nc) for A, with the test vectors they were fit to
    (relaxed from ``inherited`` when given, else from random vectors)."""
    V = None
    if opts.transfer_callable is None and opts.transfer == "ideal-corrected":
        t = time.perf_counter()
        W = local_ideal_weights(A, splitting)
        if W is not None:  # A_ff is diagonal: the ideal weights are local and exact
            _add(level, "interpolation", time.perf_counter() - t)
            return W, None
    if opts.transfer_callable is None and opts.transfer == "ideal-exact":
        t = time.perf_counter()
        W = interpolation(A, splitting, None, opts.transfer, opts.transfer_params)
        _add(level, "interpolation", time.perf_counter() - t)
        return W, None
    t = time.perf_counter()
    if level is None or level.smoother is None:
        relax = _test_vector_relaxation(opts.smoother, A, rng)
    else:
        relax = level.smoother
    steps = opts.test_steps if inherited is None else opts.test_coarse_steps
    V = relaxed_test_vectors(A, relax, opts.test_count, steps, rng, inherited)
    _add(level, "test_vectors", time.perf_counter() - t)
    t = time.perf_counter()
    if opts.transfer_callable is not None:
        W = _user_weights(opts.transfer_callable, A, splitting, V)
    else:
        W = interpolation(A, splitting, V, opts.transfer, opts.transfer_params)
    _add(level, "interpolation", time.perf_counter() - t)
    return W, V


def _lower(M):
    """M (sparse) in single precision: complex64, or float32 for real values; None stays."""
    if M is None:
        return None
    return M.astype(np.complex64 if M.dtype.kind == "c" else np.float32)


def _same_matrix(original, A):
    """Whether the caller's matrix can stand for its CSR copy A: a canonical CSC/CSR
    array with A's dtype (then it holds the same values)."""
    return (
        isinstance(original, (sp.csc_array, sp.csr_array))
        and original.dtype == A.dtype
        and original.has_canonical_format
        and original.shape == A.shape
    )


def _add(level, phase, seconds):
    if level is not None:
        level.seconds[phase] = level.seconds.get(phase, 0.0) + seconds


def _setup_smoother(factory, A, rng):
    return None if factory is None else factory().setup(A, rng)


def _test_vector_relaxation(factory, A, rng):
    """The relaxation of test vectors on A: the cycle's smoother, or, without one, the
    Chebyshev smoother, which never amplifies a component. (Relaxed by a smoother that
    amplifies some components, the vectors collapse onto those and stop spanning the
    near-kernel: a GMRES polynomial here made the coarsest level's refit fail.)"""
    relax = _setup_smoother(factory, A, rng)
    return NormalChebyshevSmoother().setup(A, rng) if relax is None else relax


def _is_hermitian(A, tol=1e-12):
    D = abs(A - A.conj().T)
    return D.nnz == 0 or D.max() <= tol * abs(A).max()


def _user_splitting(func, A, number):
    fmask = np.asarray(func(A, number))
    if fmask.shape != (A.shape[0],) or fmask.dtype != bool:
        raise InvalidInputError(
            f"coarsening callable must return a boolean array of length {A.shape[0]} (True "
            f"for the F points) on level {number}, got {fmask.dtype} of shape {fmask.shape}"
        )
    return Splitting(fmask.copy())


def _user_weights(func, A, splitting, V):
    W = func(A, splitting.fmask.copy(), V)
    nf, nc = int(splitting.fmask.sum()), int((~splitting.fmask).sum())
    W = sp.csr_array(W)
    if W.shape != (nf, nc):
        raise InvalidInputError(
            f"transfer callable must return the weights W of shape (n_F, n_C) = ({nf}, {nc}) "
            f"(rows in the order of the F points, columns in that of the C points), got "
            f"{W.shape}"
        )
    if not np.isfinite(W.data).all():
        raise InvalidInputError("transfer callable returned NaN or Inf weights")
    return W
