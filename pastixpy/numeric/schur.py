"""The factors of a Schur complement factorization (:mod:`pastixpy.schur`): every cblk
factored but the last, whose diagonal block the others' updates turned into the Schur
complement of the factored matrix, and the partial solves of the Schur workflow.

For B = [B₁₁ B₁₂; B₂₁ B₂₂] in pivot order, the Schur unknowns last, the factors are
B = L [D₁₁ 0; 0 S] Lᵀ (LU: L [U₁₁ U₁₂; 0 S]) with L = [L₁₁ 0; L₂₁ I], so that

- the forward sweep over the factored cblks leaves the reduced right-hand side
  y₂ = b₂ − B₂₁ B₁₁⁻¹ b₁ in the Schur rows (:meth:`SchurFactors.reduce`),
- the backward sweep from x₂ in the Schur rows gives x₁ = B₁₁⁻¹ (b₁ − B₁₂ x₂)
  (:meth:`SchurFactors.expand`),
- and between them a dense solve with S makes a full solve of B
  (:meth:`SchurFactors.solve_inplace`): iterative refinement, the condition estimate
  and every other reader of the :class:`~.factors.Factors` protocol work unchanged.
"""

from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
import scipy.linalg as la

from .. import _numeric
from ..errors import SingularMatrixError
from .factors import Footprint, LocalFactors
from .layout import SolvePlan


def assembled_schur(local, B, schur):
    """S of B, dense, in the order of ``schur``: B₂₂ plus the updates the factored
    cblks left in the last cblk's diagonal block (LLᵀ, LDLᵀ: its lower triangle,
    mirrored; LU: the whole block)."""
    k = local.layout.ncblk - 1
    updates = np.array(local.panel(k, "L"), dtype=local.dtype)
    if not local.kind.two_factors:
        lower = np.tril(updates)
        strict = np.tril(updates, -1)
        updates = lower + (strict.conj() if local.conj else strict).T
    S = np.ascontiguousarray(B[schur][:, schur].toarray().astype(local.dtype) + updates)
    if local.conj:  # Hermitian: the roundoff of the updates leaves no imaginary diagonal
        np.fill_diagonal(S, S.diagonal().real)
    return S


@dataclass(frozen=True)
class SchurFactors:
    """The :class:`~.factors.Factors` of a Schur complement factorization.

    Attributes
    ----------
    local : LocalFactors
        Every cblk but the last factored.
    schur : ndarray
        S of the factored matrix B (scaled, pivot order, which is the Schur
        unknowns' order as given), dense, in the factors' dtype, read-only.
    """

    local: LocalFactors
    schur: np.ndarray
    _lu: dict = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def complete(cls, local, B, schur):
        """The factors of ``local`` (factored but its last cblk) with S assembled from
        preprocessed ``B`` (original numbering) on the Schur unknowns ``schur``."""
        S = assembled_schur(local, B, schur)
        S.setflags(write=False)
        return cls(local, S)

    def __getstate__(self):
        return {"local": self.local, "schur": self.schur}

    def __setstate__(self, state):
        object.__setattr__(self, "local", state["local"])
        schur = np.array(state["schur"])
        schur.setflags(write=False)
        object.__setattr__(self, "schur", schur)
        object.__setattr__(self, "_lu", {})

    kind = property(lambda self: self.local.kind)
    layout = property(lambda self: self.local.layout)
    pivots = property(lambda self: self.local.pivots)
    threads = property(lambda self: self.local.threads)
    dtype = property(lambda self: self.local.dtype)
    perturbed = property(lambda self: self.local.perturbed)
    conj = property(lambda self: self.local.conj)

    @property
    def size(self):
        """The number of Schur unknowns."""
        return self.schur.shape[0]

    @property
    def first(self):
        """The first Schur unknown's pivot position."""
        return int(self.layout.fcol[-2])

    def footprint(self):
        f = self.local.footprint()
        return Footprint(f.entries + self.schur.size, f.nbytes + self.schur.nbytes, 0)

    def tiles(self):
        return self.local.tiles()

    def panel(self, k, factor="L"):
        return self.local.panel(k, factor)

    @cached_property
    def _plan(self):
        """The factored cblks, in order on one thread (the last, S's, left out)."""
        return SolvePlan.serial(np.arange(self.layout.ncblk - 1, dtype=np.int64))

    def _check(self, X):
        if not X.flags.c_contiguous:
            raise ValueError("a Schur solve needs a row-major (C-contiguous) X")
        if X.dtype != self.dtype:
            raise ValueError(f"a Schur solve needs X in the factors' dtype {self.dtype}")

    def reduce(self, X, trans="N"):
        """Forward elimination in place: X (n, nrhs, pivot order) becomes
        [D₁₁⁻¹ L₁₁⁻¹ b₁; y₂] with y₂ = b₂ − B₂₁ B₁₁⁻¹ b₁ (``trans="T"``: with Bᵀ, LU)."""
        self._check(X)
        flat = X.reshape(-1)
        nrhs = X.shape[1]
        storage, kind, pivots = self.local.storage, self.kind, self.pivots
        forward, _ = kind.sweeps(self.dtype, pivots.lperm, trans)
        _numeric.solve_forward(flat, nrhs, storage, forward, self._plan)
        if kind.block_diagonal:
            # D's solve covers every cblk held: the Schur rows are kept out of it.
            y2 = X[self.first :].copy()
            _numeric.solve_diagonal(flat, nrhs, storage, pivots.dsub, self.conj, pivots.pivtype)
            X[self.first :] = y2
        return X

    def expand(self, X, trans="N"):
        """Back substitution in place: X holding :meth:`reduce`'s interior rows and x₂
        in the Schur rows becomes [B₁₁⁻¹ (b₁ − B₁₂ x₂); x₂]."""
        self._check(X)
        _, backward = self.kind.sweeps(self.dtype, self.pivots.lperm, trans)
        _numeric.solve_backward(X.reshape(-1), X.shape[1], self.local.storage, backward, self._plan)
        return X

    def lu(self):
        """S's dense LU factorization (LAPACK getrf), made at the first full solve.

        Raises
        ------
        SingularMatrixError
            S is exactly singular: B is, since B₁₁ was factored.
        """
        if "lu" not in self._lu:
            lu, piv = la.lu_factor(self.schur, check_finite=False)
            zero = np.flatnonzero(np.diagonal(lu) == 0)
            if zero.size:
                raise SingularMatrixError(
                    f"the Schur complement is singular (a zero pivot at its row "
                    f"{int(zero[0])}), so the matrix is",
                    columns=[],
                )
            self._lu["lu"] = (lu, piv)
        return self._lu["lu"]

    def solve_inplace(self, X, trans="N"):
        """Solve (P B Pᵀ) X = R in place: :meth:`reduce`, S x₂ = y₂ densely,
        :meth:`expand`."""
        self.reduce(X, trans)
        first = self.first
        lu_piv = self.lu()
        # Bᵀ's Schur complement is Sᵀ; the symmetric kinds' S is symmetric (Hermitian).
        X[first:] = la.lu_solve(lu_piv, X[first:], trans=1 if trans == "T" else 0)
        return self.expand(X, trans)

    def diagonal(self):
        raise NotImplementedError(
            "the last cblk of a Schur complement factorization (schur=) is not factored: "
            "determinants and inertia are not available; factor without schur="
        )

    def d_blocks(self):
        self.diagonal()
