"""Coarse operators: the Galerkin product, its sparsification on the coarsest level, and
the coarsest level's solver (this package's factorization).

Galerkin products of the reduction framework fill in: each level's stencil is wider than
the one above, and a factorization's cost grows with the stencil's reach. The coarsest
level is therefore factored after dropping its small entries (``drop``, relative to
``sqrt(max_i max_j)`` of the two rows, which keeps a symmetric pattern symmetric and
never drops the diagonal). The level above solves its coarse problem with an inner
Krylov iteration on the exact Galerkin operator (the K-cycle), which corrects what was
dropped.
"""

import time
import warnings

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as sla

from ..errors import PastixWarning, SingularMatrixError
from .checks import is_symmetric, symmetry_tol
from .options import nonnegative_float, nonnegative_int, one_of, optional, parse, positive_float

__all__ = ["COARSE_SOLVERS", "CoarseSolver", "galerkin", "sparsify"]

#: A coarsest operator whose condition number estimate exceeds this is reported singular
#: (with double-precision factors; with single-precision ones, SINGULAR_CONDITION_SINGLE:
#: a singular matrix's estimate is then about the inverse of single precision's roundoff).
SINGULAR_CONDITION = 1e13
SINGULAR_CONDITION_SINGLE = 1e6

#: Coarsest-solver options: name → {parameter: (default, check)}.
COARSE_SOLVERS = {
    "pastix": {
        "drop": (0.02, nonnegative_float),
        # Smaller coarsest levels are factored whole: sparsifying them saves little, and
        # the refit of a small level's rows on its test vectors is what can go wrong.
        "sparsify_above": (10000, nonnegative_int),
        "compensate": (True, one_of(True, False)),
        # None: single-precision factors for precision="single", double for "double".
        "precision": (None, optional(one_of("double", "mixed", "single"))),
        "compress": (None, optional(positive_float)),
    },
}


def parse_coarse_solver(option):
    return parse(option, COARSE_SOLVERS, "coarse_solver")


def galerkin(A, P, R=None):
    """The coarse operator ``R A P`` (``R = Pᵀ`` when None), CSR, sorted, exact zeros out."""
    AP = sp.csr_array(A @ P)
    Ac = sp.csr_array((P.T if R is None else R) @ AP)
    Ac.sum_duplicates()
    Ac.eliminate_zeros()
    Ac.sort_indices()
    return Ac


def sparsify(A, drop, V=None, symmetry=None):
    """A without its off-diagonal entries below ``drop sqrt(m_i m_j)``, m_i the largest
    off-diagonal modulus of row i. ``drop = 0`` returns A.

    With test vectors V (n × m, near-kernel vectors of A), the kept entries of each row
    are refitted by least squares so that the sparse row acts on V as A's full row does
    (the dropped couplings' action on the near-kernel moves onto the kept ones), and the
    result is symmetrized when A is symmetric (Hermitian). Dropping alone shifts the
    near-kernel's eigenvalues, which is what the coarse level must get right. Rows keeping
    more than m/2 entries are left as dropped: their fit would be underdetermined.
    ``symmetry`` (``"symmetric"``, ``"hermitian"`` or ``"general"``) says what A is when
    the caller knows it (a Galerkin product of a symmetric A with R = Pᵀ is symmetric up
    to rounding); None checks A.
    """
    if drop <= 0:
        return A
    A = sp.csr_array(A)
    n = A.shape[0]
    rows = np.repeat(np.arange(n), np.diff(A.indptr))
    diag = rows == A.indices
    mag = np.where(diag, 0.0, abs(A.data))
    rowmax = np.zeros(n)
    np.maximum.at(rowmax, rows, mag)
    keep = diag | (mag >= drop * np.sqrt(rowmax[rows] * rowmax[A.indices]))
    S = sp.csr_array((A.data[keep], (rows[keep], A.indices[keep])), shape=A.shape)
    S.sort_indices()
    if V is None:
        return S
    from .transfer import fit_rows

    counts = np.diff(S.indptr)
    fit = counts <= V.shape[1] // 2
    if not fit.any():
        return S
    sub = sp.csr_array(S[fit])
    data = S.data.copy()
    where = np.repeat(fit, counts)
    data[where] = fit_rows(sub, (A @ V)[fit], V, prior=sub.data, mu=1e-8)
    S = sp.csr_array((data, S.indices, S.indptr), shape=S.shape)
    if symmetry is None:
        symmetry = "symmetric" if is_symmetric(A) else "hermitian" if _hermitian(A) else ""
    if symmetry == "symmetric":
        S = sp.csr_array((S + S.T) * 0.5)
    elif symmetry == "hermitian":
        S = sp.csr_array((S + S.T.conj()) * 0.5)
    S.sort_indices()
    return S


def _hermitian(A):
    D = abs(A - A.conj().T)
    return D.nnz == 0 or D.max() <= symmetry_tol(A.dtype) * abs(A).max()


class CoarseSolver:
    """The coarsest level's direct solver: this package's factorization, without
    iterative refinement (the factors are the preconditioner's last step).

    Parameters
    ----------
    A : csr_array
        The coarsest Galerkin operator.
    drop, precision, compress
        See :data:`COARSE_SOLVERS`; ``precision="mixed"`` or ``"single"`` factor in
        single precision (half the memory), ``compress`` is a block low-rank tolerance.
    threads : int
    level : int
        The level's number, for messages.

    Raises
    ------
    SingularMatrixError
        The (sparsified) coarsest operator is singular: pivots had to be perturbed.
    """

    def __init__(
        self,
        A,
        drop=0.02,
        compensate=True,
        precision="double",
        compress=None,
        threads=1,
        level=0,
        test_vectors=None,
    ):
        from ..api import factorize

        t = time.perf_counter()
        self.operator = sparsify(A, drop, test_vectors if compensate else None)
        self.shape = A.shape
        kwargs = {"threads": threads, "refine": "none", "precision": precision}
        if compress is not None:
            kwargs["compress"] = compress
        with warnings.catch_warnings():
            # A perturbed pivot is reported by the error below, with what to try.
            warnings.simplefilter("ignore", PastixWarning)
            try:
                self.factorization = factorize(sp.csc_array(self.operator), **kwargs)
            except SingularMatrixError as exc:
                raise SingularMatrixError(
                    f"the coarsest level (level {level}, {A.shape[0]} unknowns) is singular: "
                    f"{exc}. Try fewer levels (max_levels), a larger max_coarse, "
                    "coarse_solver=('pastix', {'drop': 0}) or another coarsening",
                    exc.columns,
                ) from exc
        perturbed = int(self.factorization.stats.get("perturbed_pivots", 0) or 0)
        if perturbed:
            raise SingularMatrixError(
                f"the coarsest level (level {level}, {A.shape[0]} unknowns) is singular or "
                f"nearly so ({perturbed} pivot(s) perturbed in its factorization). Try fewer "
                "levels (max_levels), a larger max_coarse, coarse_solver=('pastix', "
                "{'drop': 0}) or another coarsening"
            )
        inverse = self.factorization.aspreconditioner()
        self._apply = inverse.matvec
        # A singular matrix can factor without a perturbed pivot (a positive pivot at
        # rounding level, as the Neumann Laplacian's in LLᵀ): its condition number tells.
        norm1 = float(abs(self.operator).sum(axis=0).max())
        with np.errstate(all="ignore"):
            estimate = sla.onenormest(inverse) if A.shape[0] > 4 else _dense_norm1(inverse)
        self.condition = norm1 * float(estimate)
        # An operator stored in single precision is that far from singular at least.
        dtypes = (self.operator.dtype, self.factorization.stats["factor_dtype"])
        single = min(np.finfo(d).bits for d in dtypes) < 64
        limit = SINGULAR_CONDITION_SINGLE if single else SINGULAR_CONDITION
        if not np.isfinite(self.condition) or self.condition > limit:
            raise SingularMatrixError(
                f"the coarsest level (level {level}, {A.shape[0]} unknowns) is singular or "
                f"nearly so (condition number about {self.condition:.1e}). Try fewer "
                "levels (max_levels), a larger max_coarse, coarse_solver=('pastix', "
                "{'drop': 0}) or another coarsening"
            )
        self.seconds = time.perf_counter() - t

    @property
    def factor_bytes(self):
        return int(self.factorization.stats.get("factor_bytes", 0))

    def solve(self, b):
        return self._apply(b)


def _dense_norm1(inverse):
    """‖M‖₁ of a tiny operator, column by column."""
    n = inverse.shape[0]
    return max(float(np.abs(inverse.matvec(np.eye(n)[:, j])).sum()) for j in range(n))
