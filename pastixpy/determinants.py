"""Determinants and inertia, read from the factors.

:meth:`pastixpy.Factorization.slogdet`, ``logdet`` and ``inertia`` call these functions
with the factorization's solver, which holds what they read: the factors (their
diagonal, D's 1x1 and 2x2 blocks, the pivots interchanged inside diagonal blocks and
those static pivoting perturbed), the preprocessing that scaled and permuted A before
it was factored, and the matrix itself. Only the inertia with perturbed pivots solves
anything: it asks how fast refinement contracts
(:func:`pastixpy.solve_policy.contraction`) to tell whether the perturbed pivots'
signs count.
"""

import warnings

import numpy as np

from .errors import PastixError, PastixWarning
from .permutation import parity
from .solve_policy import contraction, perturbed_message

#: :func:`inertia` counts perturbed pivots by their signs when one step of iterative
#: refinement shrinks the error at least this much (a contraction below 1 proves the
#: inertia exact; the margin covers an estimate made from a few steps).
INERTIA_CONTRACTION = 0.5


def slogdet(solver):
    """Sign and natural log of |det(A)|, like ``numpy.linalg.slogdet``, from the factors
    and the preprocessing: det(D_r A D_c P) = det of the factored matrix.

    With perturbed pivots this is the determinant of the perturbed matrix (a warning,
    pointed at the caller of :meth:`pastixpy.Factorization.slogdet`, says so).
    """
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
            "slogdet is that of the matrix with perturbed pivots. " + perturbed_message(solver),
            PastixWarning,
            stacklevel=3,
        )
    sign = complex(sign) if complex_ else float(np.real(sign))
    return sign, float(logabs)


def logdet(solver):
    """log(det(A)) of a positive definite matrix: :func:`slogdet`'s log, where the kind
    is definite or :func:`inertia` finds every eigenvalue positive.

    Raises
    ------
    PastixError
        The matrix is not (Hermitian) positive definite.
    """
    if solver.kind.definite:
        return slogdet(solver)[1]
    if not is_hermitian(solver) or inertia(solver)[0] != solver.n:
        raise PastixError(
            f"logdet() needs a symmetric/Hermitian positive definite matrix, not this "
            f"{solver.kind.name} factorization; use slogdet()"
        )
    return slogdet(solver)[1]


def inertia(solver):
    """Numbers of positive, negative and zero eigenvalues (Sylvester's law on D).

    Defined for real symmetric and Hermitian factorizations. Without perturbed pivots
    it is exact. With perturbed pivots, D is that of a nearby matrix M; when iterative
    refinement shrinks the error of a solve with a known answer by at least
    :data:`INERTIA_CONTRACTION` per step, A and M provably have the same inertia (see
    :func:`pastixpy.solve_policy.contraction`) and the perturbed pivots count with
    their signs. Otherwise (A singular, or too ill-conditioned for the perturbation)
    they count as zero eigenvalues, and a warning (pointed at the caller of
    :meth:`pastixpy.Factorization.inertia`) says that the split is unreliable.
    """
    if not is_hermitian(solver):
        raise PastixError(
            f"inertia is defined for real symmetric or Hermitian matrices, not kind "
            f"{solver.kind.name!r} on {solver.dtype}"
        )
    n = solver.n
    F = solver.factors
    if solver.kind.definite:
        return (n, 0, 0)
    d, one, two, det2 = F.d_blocks()
    d, det2 = np.real(d), np.real(det2)
    pert = F.perturbed
    rate = contraction(solver) if pert.any() else 0.0
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
            f"singular). " + perturbed_message(solver),
            PastixWarning,
            stacklevel=3,
        )
    return (pos, neg, zero)


def is_hermitian(solver):
    """Whether the factored matrix is real symmetric or Hermitian (D's signs count)."""
    if not solver.kind.symmetric:
        return False
    C = solver.C
    return solver.kind.hermitian or not np.iscomplexobj(C.data) or not C.data.imag.any()
