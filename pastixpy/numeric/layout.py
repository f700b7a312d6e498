"""The numeric phase's view of an analysis: the block structure as the kernels read it
(:class:`PanelLayout`), where A's entries go in the panels (:class:`AssemblyMap`), and how
the triangular solves split over threads (:class:`SolvePlan`)."""

from dataclasses import dataclass
from functools import cached_property

import numpy as np
import scipy.sparse as sp

from .. import _symbolic
from .._numeric import Structure
from ..matrix import compact_index
from ..permutation import inverse_permutation
from ..symbolic import cblk_parents, column_cblks


class PanelLayout:
    """The block structure of a SymbolMatrix as the numeric kernels read it.

    Cblk k's panel has ``stride[k]`` rows (its diagonal block, then its bloks
    stacked, blok b from row ``bcoef[b]``) and ``fcol[k + 1] - fcol[k]`` columns.
    Made once per analysis; :attr:`structure` is the kernels' typed copy.
    """

    def __init__(self, fcol, bloknum, stride, frow, lrow, fcblk, bcoef):
        self._hold(Structure(fcol, bloknum, stride, frow, lrow, fcblk, bcoef))

    def _hold(self, structure):
        self.structure = s = structure
        self.fcol, self.bloknum, self.stride = s.fcol, s.bloknum, s.stride
        self.frow, self.lrow, self.fcblk, self.bcoef = s.frow, s.lrow, s.fcblk, s.bcoef
        self._plans = {}

    @classmethod
    def around(cls, structure):
        """The layout of a kernels' Structure (that one, not a copy)."""
        layout = cls.__new__(cls)
        layout._hold(structure)
        return layout

    def __reduce__(self):
        """Pickled as its Structure, which a pickled Storage of the same factors shares
        (the solve plans and other caches are made again)."""
        return PanelLayout.around, (self.structure,)

    @classmethod
    def from_symbol(cls, symbol):
        return cls(
            np.append(symbol.cblk_fcolnum, symbol.n),
            symbol.cblk_bloknum,
            symbol.cblk_stride,
            symbol.blok_frownum,
            symbol.blok_lrownum,
            symbol.blok_fcblknm,
            symbol.blok_coefind,
        )

    @property
    def ncblk(self):
        return self.fcol.shape[0] - 1

    @cached_property
    def panel_sizes(self):
        """Scalars of each cblk's panel."""
        return self.stride * np.diff(self.fcol)

    @property
    def size(self):
        """Scalars of all panels of one factor."""
        return int(self.panel_sizes.sum())

    @cached_property
    def parent(self):
        """Parent of each cblk in the block tree, -1 at roots (cblks are in postorder:
        a parent comes after its children)."""
        return cblk_parents(self.bloknum, self.fcblk)

    def solve_plan(self, threads):
        """How the triangular solves split over ``threads`` threads (see :class:`SolvePlan`)."""
        if threads not in self._plans:
            self._plans[threads] = SolvePlan.build(self, threads)
        return self._plans[threads]

    @cached_property
    def col2cblk(self):
        """The cblk of each column (pivot order)."""
        return column_cblks(self.fcol)

    def position(self, rows, cols):
        """Index of entries (row, col), pivot order, inside their cblk's panel, with row >=
        col's cblk's first column.

        Rows inside the column's cblk address its diagonal block (both triangles);
        rows below it address the blok that contains them.
        """
        return _symbolic.panel_positions(
            np.ascontiguousarray(rows, dtype=np.int64),
            np.ascontiguousarray(cols, dtype=np.int64),
            self.fcol,
            self.col2cblk,
            self.bloknum,
            self.frow,
            self.lrow,
            self.bcoef,
            np.zeros(self.ncblk + 1, dtype=np.int64),  # offsets inside each panel
            self.stride,
        )

    def entries(self, indptr, indices, source, perm, iperm, keep):
        """``(src, pos, ptr)`` of the entries of a CSC pattern that ``keep`` selects
        (:func:`pastixpy._symbolic.assembly_entries`), walked column by column in the
        pivot order ``perm`` (``iperm`` its inverse): their index in the CSC arrays
        (``source`` of it, where given), their index in their cblk's panel, and where
        each cblk's run starts (then the end)."""
        return _symbolic.assembly_entries(
            indptr,
            indices,
            source,
            perm,
            iperm,
            keep,
            self.fcol,
            self.bloknum,
            self.frow,
            self.lrow,
            self.bcoef,
            self.stride,
        )


#: A solve runs its subtrees on several threads when the heaviest thread's share
#: is at most this much above an even split; the subtrees are split further until
#: it is, moving their roots into the part above, which runs on one.
SOLVE_BALANCE = 1.1

#: At most this many subtrees per thread are split looking for that balance.
SOLVE_MAX_SPLITS = 64


@dataclass(frozen=True)
class SolvePlan:
    """Disjoint subtrees of the block tree for each thread of a triangular solve, and
    the cblks above them.

    Attributes
    ----------
    cblks, ptr : ndarray of int64
        Thread t's cblks are ``cblks[ptr[t]:ptr[t + 1]]``, ascending: whole subtrees.
    top : ndarray of int64
        The other cblks, ascending: the tree above the subtrees, solved after them
        (forward) or before them (backward), on one thread.
    topoff : ndarray of int64
        Row of each top cblk in the buffers where the threads collect their updates
        to the top's rows (forward), -1 for the others; ``ntop`` rows in all.
    """

    cblks: np.ndarray
    ptr: np.ndarray
    top: np.ndarray
    topoff: np.ndarray
    ntop: int

    @property
    def threads(self):
        return self.ptr.shape[0] - 1

    @cached_property
    def top_plan(self):
        """The top cblks as a plan of their own, on one thread."""
        return SolvePlan.serial(self.top)

    @classmethod
    def serial(cls, cblks):
        """The given cblks (ascending) solved in order on one thread."""
        cblks = np.ascontiguousarray(cblks, dtype=np.int64)
        none = np.empty(0, np.int64)
        return cls(cblks, np.array([0, cblks.shape[0]], dtype=np.int64), none, none, 0)

    @classmethod
    def build(cls, layout, threads):
        """Proportional split (Geist and Ng): from the roots, give the subtrees to the
        least loaded thread, heaviest first; while that leaves a thread more than
        :data:`SOLVE_BALANCE` times its share, replace the heaviest subtree by its
        children. Work is panel entries, as a solve streams its panels."""
        ncblk = layout.ncblk
        parent = layout.parent
        serial = cls(
            np.arange(ncblk, dtype=np.int64),
            np.array([0, ncblk], dtype=np.int64),
            np.empty(0, np.int64),
            np.full(ncblk, -1, dtype=np.int64),
            0,
        )
        if threads <= 1 or ncblk < 2:
            return serial
        work = layout.panel_sizes.astype(np.float64)
        first = subtree_first(parent)
        cum = np.concatenate(([0.0], np.cumsum(work)))
        subtree = cum[np.arange(1, ncblk + 1)] - cum[first]
        order = np.argsort(parent, kind="stable")
        child_ptr = np.searchsorted(parent[order], np.arange(-1, ncblk + 1))
        layer = list(order[child_ptr[0] : child_ptr[1]])  # the roots
        # Nested dissection balances within a few levels (the top separator's
        # panels, then a level or two); a chain of cblks never would.
        for _ in range(SOLVE_MAX_SPLITS * threads):
            bins, loads = greedy_bins(layer, subtree, threads)
            if loads.max() <= SOLVE_BALANCE * loads.sum() / threads:
                break
            heaviest = max(layer, key=lambda k: subtree[k])
            children = order[child_ptr[heaviest + 1] : child_ptr[heaviest + 2]]
            if children.size == 0:
                break
            layer.remove(heaviest)  # into the top: all cblks in no subtree of the layer
            layer.extend(children.tolist())
        if (loads > 0).sum() < 2:
            return serial
        owner = np.full(ncblk, -1, dtype=np.int64)
        for k, t in zip(layer, bins, strict=True):
            owner[first[k] : k + 1] = t
        cblks = np.argsort(owner, kind="stable")[np.count_nonzero(owner < 0) :]
        ptr = np.searchsorted(owner[cblks], np.arange(threads + 1)).astype(np.int64)
        top = np.flatnonzero(owner < 0)
        widths = np.diff(layout.fcol)[top]
        topoff = np.full(ncblk, -1, dtype=np.int64)
        topoff[top] = np.cumsum(widths) - widths
        return cls(cblks.astype(np.int64), ptr, top, topoff, int(widths.sum()))


def subtree_first(parent):
    """First cblk of each cblk's subtree (a postordered tree: the subtree of k is
    ``first[k]..k``), by pointer jumping from each node to its first child."""
    n = parent.shape[0]
    first = np.arange(n, dtype=np.int64)
    has = parent >= 0
    np.minimum.at(first, parent[has], np.flatnonzero(has))
    while True:
        nxt = first[first]
        if np.array_equal(nxt, first):
            return first
        first = nxt


def greedy_bins(items, weight, nbins):
    """Each item to the least loaded bin, heaviest first: (bin of each item, loads)."""
    loads = np.zeros(nbins)
    bins = [0] * len(items)
    for i in sorted(range(len(items)), key=lambda i: -weight[items[i]]):
        t = int(np.argmin(loads))
        bins[i] = t
        loads[t] += weight[items[i]]
    return bins, loads


@dataclass(frozen=True)
class AssemblyMap:
    """Where each stored entry of B goes: L panels (``*_l``) or Uᵀ panels (``*_u``).

    ``src_*`` index B's data array (canonical CSC), ``pos_*`` the entry's place in its
    cblk's panel; both int32 when the sizes allow (a factorization keeps them for
    refactorize: two indices per entry of A). Entries are grouped by the cblk whose
    panel holds them: cblk k's are ``ptr_*[k]:ptr_*[k + 1]``, so that the kernels add A
    into a panel just before factoring it (on the thread that factors it, which also
    takes the first-touch page faults of that panel).
    """

    src_l: np.ndarray
    pos_l: np.ndarray
    ptr_l: np.ndarray
    src_u: np.ndarray
    pos_u: np.ndarray
    ptr_u: np.ndarray

    def __post_init__(self):
        for name in ("src_l", "pos_l", "src_u", "pos_u"):
            object.__setattr__(self, name, compact_index(getattr(self, name)))

    def values(self, data, dtype):
        """B's values (``data``, canonical CSC order) in this map's order, as ``dtype``:
        the L part and the U part."""
        return (
            np.ascontiguousarray(data[self.src_l], dtype=dtype),
            np.ascontiguousarray(data[self.src_u], dtype=dtype),
        )

    def placement(self):
        """This map without its sources: where the entries go, which is all the kernels
        read once the values are gathered (what a distributed factorization sends)."""
        none = np.empty(0, dtype=np.int32)
        return AssemblyMap(none, self.pos_l, self.ptr_l, none, self.pos_u, self.ptr_u)

    @classmethod
    def build(cls, B, iperm, layout, two_factors):
        """Map the entries of canonical CSC ``B`` under the symmetric permutation ``iperm``;
        with ``two_factors`` (LU) the upper ones outside diagonal blocks go to Uᵀ, else
        only the lower triangle is read. One kernel pass per factor
        (:func:`pastixpy._symbolic.assembly_entries`)."""
        iperm = np.ascontiguousarray(iperm, dtype=np.int64)
        perm = inverse_permutation(iperm)
        indptr = np.ascontiguousarray(B.indptr, dtype=np.int64)
        indices = np.ascontiguousarray(B.indices, dtype=np.int64)
        if not two_factors:
            lower = layout.entries(indptr, indices, None, perm, iperm, _symbolic.KEEP_LOWER)
            none = np.empty(0, dtype=np.int64)
            return cls(*lower, none, none, np.zeros(layout.ncblk + 1, dtype=np.int64))
        # L's panels take the lower entries and the upper ones inside the diagonal
        # blocks (rows from the column's cblk down); the rest go to Uᵀ: the lower ones
        # of Bᵀ outside the diagonal blocks, grouped by their column in Bᵀ (B's row).
        n = B.shape[0]
        T = sp.csc_array((np.arange(B.nnz), indices, indptr), shape=(n, n)).T.tocsc()
        return cls(
            *layout.entries(indptr, indices, None, perm, iperm, _symbolic.KEEP_FROM_CBLK),
            *layout.entries(
                np.asarray(T.indptr, dtype=np.int64),
                np.asarray(T.indices, dtype=np.int64),
                np.asarray(T.data, dtype=np.int64),
                perm,
                iperm,
                _symbolic.KEEP_BELOW_CBLK,
            ),
        )
