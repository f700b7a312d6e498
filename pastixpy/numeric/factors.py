"""The numeric factors of one factorization and what is read from them: the
:class:`Factors` interface every backend's factors offer, the one-process
:class:`LocalFactors`, the pivots, and the one triangular :func:`sweep` of every backend."""

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import numpy as np

from .. import _numeric
from ..runtime import blas_threads, kernel_threads
from ..symbolic import ReadOnlyArrays


@dataclass(frozen=True)
class Pivots(ReadOnlyArrays):
    """What the factorization records about its pivots, in pivot order.

    Attributes
    ----------
    lperm : ndarray of int64
        LDLᵀ and LU: pivot order after the interchanges inside diagonal blocks
        (Bunch-Kaufman's symmetric ones, LU's row interchanges); empty for LLᵀ.
    pivtype : ndarray of int8
        LDLᵀ only: 1 for a 1x1 pivot, 2 and 0 for the columns of a 2x2 pivot.
    dsub : ndarray
        LDLᵀ only: D's off-diagonal entry of the 2x2 pivot starting at each column.
    pert : ndarray of int8
        1 where static pivoting replaced the pivot.
    """

    lperm: np.ndarray
    pivtype: np.ndarray
    dsub: np.ndarray
    pert: np.ndarray

    @classmethod
    def empty(cls, kind, n, dtype):
        """The arrays a factorization of this kind fills (identity, no 2x2, none replaced)."""
        return cls(
            np.arange(n if kind.local_pivots else 0, dtype=np.int64),
            np.ones(n if kind.block_diagonal else 0, dtype=np.int8),
            np.zeros(n if kind.block_diagonal else 0, dtype=dtype),
            np.zeros(n, dtype=np.int8),
        )

    def freeze(self):
        for a in (self.lperm, self.pivtype, self.dsub, self.pert):
            a.setflags(write=False)


@dataclass(frozen=True)
class Footprint:
    """What a factorization's factors take: scalars stored (``entries``), bytes, and
    how many cblks are held compressed."""

    entries: int
    nbytes: int
    compressed_cblks: int


@runtime_checkable
class Factors(Protocol):
    """The numeric factors of P B Pᵀ as the rest of the package reads them, whichever
    backend made them: :class:`LocalFactors` (one process) or the distributed ones
    (:class:`pastixpy.distributed.backend.DistributedFactors`, which hold this rank's
    :class:`~pastixpy.distributed.numeric.RankFactors` and make each solve collective).

    The solver reads ``dtype``, ``conj``, ``kind`` and :meth:`solve_inplace`; the
    pipeline's checks and statistics ``perturbed``, ``threads``, :meth:`footprint` and
    :meth:`tiles`; the determinants and inertia :meth:`diagonal` and :meth:`d_blocks`,
    which factors spread over ranks do not offer (NotImplementedError).
    """

    kind: object
    layout: object
    pivots: Pivots
    threads: int

    @property
    def dtype(self) -> np.dtype:
        """The factors' precision."""

    @property
    def perturbed(self) -> np.ndarray:
        """Pivots replaced by static pivoting (bool, pivot order)."""

    @property
    def conj(self) -> bool:
        """Whether transposes in this factorization are conjugate (Hermitian kinds)."""

    def footprint(self) -> Footprint:
        """Entries, bytes and compressed cblks of the factors (every rank's)."""

    def tiles(self) -> dict:
        """The compressed tiles (:meth:`pastixpy._numeric.Storage.tiles`, every rank's)."""

    def solve_inplace(self, X, trans="N"):
        """Solve (P B Pᵀ) X = R in place (see :meth:`LocalFactors.solve_inplace`)."""

    def diagonal(self) -> np.ndarray:
        """The diagonal of the diagonal blocks in pivot order."""

    def d_blocks(self) -> tuple:
        """D's diagonal, 1x1 positions, 2x2 starts and determinants (LDLᵀ, LDLᴴ)."""


def storage_footprint(storage):
    """The :class:`Footprint` of a kernels' Storage (None: nothing allocated)."""
    if storage is None:
        return Footprint(0, 0, 0)
    return Footprint(int(storage.entries), int(storage.nbytes), int(storage.compressed_cblks))


def sweep(X, storage, kind, pivots, trans, forward_plans, backward_plans):
    """op(P B Pᵀ) X = R solved in place: X (n, nrhs) row-major in the factors' dtype.

    The one triangular solve of every backend: the forward sweep over
    ``forward_plans``' cblks, D's blocks (LDLᵀ, LDLᴴ), the backward sweep over
    ``backward_plans``' (:class:`~.layout.SolvePlan`, each solved when the iteration
    yields it). A one-process solve passes its thread plan and the tree above it; a
    rank of a distributed solve passes generators that exchange rows with the other
    ranks between the steps they yield.
    """
    nrhs = X.shape[1]
    flat = X.reshape(-1)
    dtype = storage.dtype
    forward, backward = kind.sweeps(dtype, pivots.lperm, trans)
    for plan in forward_plans:
        _numeric.solve_forward(flat, nrhs, storage, forward, plan)
    if kind.block_diagonal:
        _numeric.solve_diagonal(flat, nrhs, storage, pivots.dsub, kind.conj(dtype), pivots.pivtype)
    for plan in backward_plans:
        _numeric.solve_backward(flat, nrhs, storage, backward, plan)
    return X


@dataclass(frozen=True)
class LocalFactors:
    """Numeric factors of P B Pᵀ in this process, cblk by cblk (see
    :class:`pastixpy._numeric.Storage`): the one-process backend's :class:`Factors`.

    Pickling and ``copy.deepcopy`` copy them whole and bit for bit: the storage's
    panels, diagonal blocks and tiles, the pivots (read-only, as made), the layout.

    Attributes
    ----------
    kind : Kind
    layout : PanelLayout
    storage : Storage
        The panels, one descriptor per cblk: their storage, precision and owner.
    pivots : Pivots
    threads : int
        Threads the factorization ran on (its solves run on as many).
    """

    kind: object
    layout: object
    storage: object
    pivots: Pivots
    threads: int = 1

    @property
    def dtype(self):
        """The factors' precision."""
        return self.storage.dtype

    @property
    def perturbed(self):
        """Pivots replaced by static pivoting (bool, pivot order)."""
        return self.pivots.pert.astype(bool)

    @property
    def conj(self):
        """Whether transposes in this factorization are conjugate (Hermitian kinds)."""
        return self.kind.conj(self.dtype)

    def footprint(self):
        return storage_footprint(self.storage)

    def tiles(self):
        return self.storage.tiles()

    def panel(self, k, factor="L"):
        """Cblk k's panel (stride x width, read-only), ``factor`` "L" or "U" (Uᵀ)."""
        return self.storage.panel(k, factor)

    def solve_inplace(self, X, trans="N"):
        """Solve (P B Pᵀ) X = R in place, X in pivot order, (n, nrhs) row-major, in the
        factors' dtype.

        Row-major keeps the right-hand sides of an unknown together, so the rows
        of a block are one contiguous run for the kernels. ``trans`` is ``"N"`` or
        ``"T"`` (LU); symmetric kinds ignore it. Runs on the factorization's threads:
        disjoint subtrees in parallel, then the tree above them (forward), and the
        other way round backward.
        """
        if not X.flags.c_contiguous:
            raise ValueError("solve_inplace needs a row-major (C-contiguous) X")
        if X.dtype != self.dtype:
            raise ValueError(f"solve_inplace needs X in the factors' dtype {self.dtype}")
        plan = self.layout.solve_plan(kernel_threads(self.threads))
        plans = [plan, plan.top_plan] if plan.top.size else [plan]
        # With threads over subtrees the BLAS runs on one, the top part too: a BLAS
        # thread left spinning after it would take a core from the next sweep.
        with blas_threads(1 if plan.threads > 1 else None):
            return sweep(X, self.storage, self.kind, self.pivots, trans, plans, plans[::-1])

    def diagonal(self):
        """Diagonal of the diagonal blocks in pivot order: L's (LLᵀ), D's (LDLᵀ), U's (LU)."""
        out = np.empty(self.layout.fcol[-1], dtype=self.dtype)
        _numeric.diagonal_entries(self.storage, out)
        return out

    def d_blocks(self):
        """D's diagonal, the 1x1 pivot positions, the 2x2 pivot starts and the 2x2
        determinants (LDLᵀ, LDLᴴ)."""
        d = self.diagonal()
        one = np.flatnonzero(self.pivots.pivtype == 1)
        two = np.flatnonzero(self.pivots.pivtype == 2)
        off = self.pivots.dsub[two]
        det2 = d[two] * d[two + 1] - (np.conj(off) if self.conj else off) * off
        return d, one, two, det2
