"""C/F splittings: which unknowns stay on the coarse level (C) and which are eliminated (F).

The reduction framework wants A_ff, the block of the F points, to be easy to invert: then
the ideal interpolation ``−A_ff⁻¹ A_fc`` is local and the F-relaxation converges fast
(compatible relaxation). The algebraic splitting (``"cr"``, the default) therefore picks F
as a maximal independent set of the strength graph, then moves to C every F point whose
remaining F couplings exceed a budget ``gamma |a_ii|``, and finally adds to F every C point
that fits in the budget of itself and of its F neighbours. On the 5-point and 7-point
stencils this gives the red-black (checkerboard) splitting, whose A_ff is diagonal; on the
coarse levels' wider stencils it keeps ``Σ_{j∈F, j≠i} |a_ij| <= gamma |a_ii|`` on every F
row, so that Jacobi on A_ff contracts by ``gamma`` at least. When fewer than
``1 − max_ratio`` of the unknowns can be F, coarsening stops: on an indefinite Helmholtz
level with few points per wavelength, A_ff cannot be made diagonally dominant, and the
level becomes the coarsest.
"""

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from ..errors import InvalidInputError
from ..norms import norm2
from .options import fraction, grid_shape, optional

__all__ = [
    "COARSENINGS",
    "Splitting",
    "cr_split",
    "f_relaxation_rate",
    "geometric_split",
    "greedy_mis",
    "split",
]


@dataclass
class Splitting:
    """A C/F splitting of one level.

    Attributes
    ----------
    fmask : ndarray of bool
        True for the F points.
    shape : tuple or None
        The coarse level's grid shape, when the splitting is geometric.
    """

    fmask: np.ndarray
    shape: tuple | None = None
    stop: str = ""

    @property
    def fpoints(self):
        return np.flatnonzero(self.fmask)

    @property
    def cpoints(self):
        return np.flatnonzero(~self.fmask)

    @property
    def coarse_ratio(self):
        """Fraction of the unknowns kept on the coarse level."""
        return float((~self.fmask).mean()) if self.fmask.size else 1.0


#: Coarsening options: name → {parameter: (default, check)}.
COARSENINGS = {
    "cr": {
        "theta": (0.6, fraction),
        "gamma": (0.85, fraction),
        "extend": (0.6, fraction),
        "max_ratio": (0.6, fraction),
    },
    "mis": {"theta": (0.6, fraction), "max_ratio": (0.6, fraction)},
    "geometric": {
        "shape": (None, optional(grid_shape)),
        "max_rate": (0.9, fraction),
        "max_ratio": (0.6, fraction),
    },
}


def split(A, name, params, shape=None):
    """The splitting of a level by a named method (see :data:`COARSENINGS`).

    ``shape`` is the level's grid shape where known (geometric coarsening only).
    """
    if name == "cr":
        return Splitting(cr_split(A, params["theta"], params["gamma"], params["extend"]))
    if name == "mis":
        return Splitting(greedy_mis(strength_graph(A, params["theta"])))
    if name == "geometric":
        if shape is None:
            # Below the grid levels (or without one) the splitting goes algebraic.
            return Splitting(cr_split(A))
        splitting = geometric_split(shape)
        rate = f_relaxation_rate(A, splitting.fmask)
        if rate > params["max_rate"]:
            # Jacobi on this A_ff would not contract: the grid is too coarse for the
            # wavenumber, and this level is the coarsest.
            splitting.stop = f"F-relaxation would not contract (rate {rate:.2f})"
        return splitting
    raise InvalidInputError(f"unknown splitting {name!r}")


def strength_graph(A, theta):
    """The symmetric strength graph: i–j strong when |a_ij| >= theta max_{k≠i} |a_ik| (in
    the row of i or of j), as a CSR matrix of booleans without its diagonal."""
    A = sp.csr_array(A)
    n = A.shape[0]
    rows = np.repeat(np.arange(n), np.diff(A.indptr))
    off = rows != A.indices
    mag = np.where(off, abs(A.data), 0.0)
    rowmax = np.zeros(n)
    np.maximum.at(rowmax, rows, mag)
    # A tolerance below theta keeps ties (a coupling exactly theta times the largest,
    # common on regular stencils) on one side whatever the rounding.
    strong = off & (mag > (theta * (1 - 1e-8)) * rowmax[rows]) & (mag > 0)
    S = sp.csr_array(
        (np.ones(int(strong.sum()), bool), (rows[strong], A.indices[strong])), shape=A.shape
    )
    S = sp.csr_array(((S + S.T) > 0).astype(bool))
    S.sort_indices()
    return S


def greedy_mis(S):
    """A maximal independent set of the graph S, chosen greedily in the natural order
    (the checkerboard on a grid numbered row by row). True for members of the set."""
    n = S.shape[0]
    ptr, idx = memoryview(S.indptr), memoryview(S.indices)
    state = bytearray(n)  # 0 undecided, 1 in the set, 2 excluded
    for i in range(n):
        if state[i] == 0:
            state[i] = 1
            for p in range(ptr[i], ptr[i + 1]):
                j = idx[p]
                if state[j] == 0:
                    state[j] = 2
    return np.frombuffer(bytes(state), np.uint8) == 1


def cr_split(A, theta=0.6, gamma=0.85, extend=0.6):
    """Compatible-relaxation-guided splitting (see the module's description).

    The extension step runs only when the independent set leaves more than ``extend``
    of the points C (as on the face-centred lattice of a 3D red-black level, where an
    independent set is a quarter of the points): where the set is already half the
    points, a few more F points at the boundary would only make the next level
    irregular.

    Returns
    -------
    fmask : ndarray of bool
        The F points; every F row has ``Σ_{j∈F, j≠i} |a_ij| <= gamma |a_ii|`` and
        ``a_ii ≠ 0``.
    """
    A = sp.csr_array(A)
    n = A.shape[0]
    fmask = greedy_mis(strength_graph(A, theta))
    rows = np.repeat(np.arange(n), np.diff(A.indptr))
    off = rows != A.indices
    mag = np.where(off, abs(A.data), 0.0)
    budget = gamma * abs(A.diagonal())
    # A zero diagonal entry (an empty row among them) cannot be an F point: F-relaxation
    # and the ideal interpolation divide by it. Its budget of -1 puts it over budget
    # whatever its F couplings, including none.
    budget[budget == 0] = -1.0
    # F couplings of each row: Σ_{j∈F, j≠i} |a_ij|.
    used = np.bincount(rows, weights=mag * fmask[A.indices], minlength=n)
    ptr, idx = memoryview(A.indptr), memoryview(A.indices)
    mv = memoryview(mag)
    f = bytearray(fmask.astype(np.uint8).tobytes())
    u = array_of(used)
    bud = array_of(budget)
    # Repair: F points over budget (weak couplings adding up) go to C, worst first.
    over = np.flatnonzero(fmask & (used > budget))
    for i in over[np.argsort(-(used[over] - budget[over]))]:
        i = int(i)
        if u[i] > bud[i]:
            f[i] = 0
            for p in range(ptr[i], ptr[i + 1]):
                u[idx[p]] -= mv[p]
    # Extension: C points that fit in the budgets of themselves and their F neighbours.
    if 1.0 - sum(f) / n <= extend:
        return np.frombuffer(bytes(f), np.uint8) == 1
    for i in range(n):
        if f[i] or u[i] > bud[i]:
            continue
        lo, hi = ptr[i], ptr[i + 1]
        fits = True
        for p in range(lo, hi):
            j = idx[p]
            if f[j] and u[j] + mv[p] > bud[j]:
                fits = False
                break
        if fits:
            f[i] = 1
            for p in range(lo, hi):
                u[idx[p]] += mv[p]
    return np.frombuffer(bytes(f), np.uint8) == 1


def f_relaxation_rate(A, fmask, steps=15, seed=0):
    """An estimate of ρ(I − D_ff⁻¹ A_ff), the convergence factor of Jacobi F-relaxation
    (compatible relaxation), by a few steps of the power method."""
    A = sp.csr_array(A)
    F = np.flatnonzero(fmask)
    if F.size == 0:
        return 0.0
    Aff = sp.csr_array(A[F][:, F])
    d = Aff.diagonal()
    if np.any(d == 0):
        return float("inf")
    v = np.random.default_rng(seed).standard_normal(F.size).astype(Aff.dtype)
    rate = 0.0
    for _ in range(steps):
        w = v - (Aff @ v) / d
        norm = norm2(w)
        if norm == 0:
            return 0.0
        rate = norm / norm2(v)
        v = w / norm
    return float(rate)


def array_of(values):
    """A float64 copy of ``values`` whose items Python loops can read and write quickly."""
    return memoryview(np.array(values, dtype=np.float64))


def geometric_split(shape):
    """Standard coarsening, 2x per direction, of a tensor grid numbered in C order: the C
    points are those whose every index is odd, so the coarse grid keeps the boundary's
    neighbours F. Returns the splitting with the coarse grid's shape."""
    shape = tuple(int(s) for s in shape)
    grids = np.indices(shape).reshape(len(shape), -1)
    cmask = np.all(grids % 2 == 1, axis=0)
    return Splitting(~cmask, tuple(s // 2 for s in shape))
