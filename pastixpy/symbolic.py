"""Symbolic phase: elimination tree, supernodes, and the block structure of the factor.

Pipeline, each step a function below:

1. :func:`elimination_tree` — etree of the permuted pattern, postorder (a
   fill-equivalent renumbering that makes subtrees and supernodes contiguous),
   column counts, and the separator tree (the etree's chains).
2. :func:`supernode_partition` — fundamental supernodes, relaxed amalgamation,
   and splitting of wide supernodes into panels.
3. :func:`block_symbol` — supernodal symbolic factorization of that partition
   into a :class:`SymbolMatrix` of column blocks (cblk) and blocks (blok), in
   PaStiX's vocabulary.
"""

from dataclasses import dataclass

import numpy as np

from . import _symbolic
from .errors import OptionError, PastixError
from .permutation import inverse_permutation

#: Amalgamation: subtrees of at most ``subtree`` columns become one supernode; then
#: CHOLMOD's rules merge a child into its parent up to widths ``nrelax`` with the
#: zero fractions ``zrelax`` (see :func:`pastixpy._symbolic.amalgamate`).
AMALGAMATION = {"subtree": 16, "nrelax": (4, 16, 48), "zrelax": (0.8, 0.1, 0.05)}


def amalgamation_parameters(amalgamation):
    """The amalgamation rules for ``amalgamation`` = True, False, or a dict overriding some."""
    if amalgamation is True:
        return AMALGAMATION
    if amalgamation is False or amalgamation is None:
        return None
    if not isinstance(amalgamation, dict) or set(amalgamation) - set(AMALGAMATION):
        raise OptionError(
            f"amalgamation must be True, False or a dict with keys among "
            f"{sorted(AMALGAMATION)}, got {amalgamation!r}"
        )
    return {**AMALGAMATION, **amalgamation}


def cblk_parents(bloknum, fcblk):
    """Parent of each cblk in the block tree: the cblk its first off-diagonal blok
    faces, -1 when it has none (a root)."""
    first_off = bloknum[:-1] + 1
    has = first_off < bloknum[1:]
    return np.where(has, fcblk[np.minimum(first_off, fcblk.shape[0] - 1)], -1).astype(np.int64)


def column_cblks(fcol):
    """The cblk of each column, for cblks starting at columns ``fcol`` (then n)."""
    return np.repeat(np.arange(fcol.shape[0] - 1, dtype=np.int64), np.diff(fcol))


def _frozen(*arrays):
    """Make arrays read-only so that a result object cannot be changed behind its back."""
    for a in arrays:
        a.setflags(write=False)


class ReadOnlyArrays:
    """Pickling (and ``copy.deepcopy``) of a result object that keeps its read-only
    arrays read-only: numpy's own pickling gives writeable copies."""

    def __getstate__(self):
        state = dict(self.__dict__)
        state["_read_only"] = [
            name
            for name, value in self.__dict__.items()
            if isinstance(value, np.ndarray) and not value.flags.writeable
        ]
        return state

    def __setstate__(self, state):
        state = dict(state)
        read_only = state.pop("_read_only", ())
        self.__dict__.update(state)
        for name in read_only:
            self.__dict__[name].setflags(write=False)


@dataclass(frozen=True)
class EliminationTree(ReadOnlyArrays):
    """Elimination tree of the permuted pattern, in postorder.

    Attributes
    ----------
    perm : ndarray of int64
        ``perm[k]`` is the original index of pivot k (the ordering, postordered).
    parent : ndarray of int64
        Parent of each pivot in the elimination tree, -1 at roots.
    colcount : ndarray of int64
        Entries in each column of the Cholesky factor, diagonal included.
    sep_ptr, sep_parent : ndarray of int64
        Separator tree: node s holds pivots ``sep_ptr[s]:sep_ptr[s+1]`` and has
        parent ``sep_parent[s]`` (-1 at roots). Each node is a maximal chain of
        the elimination tree; for a nested-dissection ordering these chains are
        the separators, eliminated after the two halves they separate.
    """

    perm: np.ndarray
    parent: np.ndarray
    colcount: np.ndarray
    sep_ptr: np.ndarray
    sep_parent: np.ndarray

    @property
    def iperm(self):
        return inverse_permutation(self.perm)

    @property
    def nnz(self):
        """Exact number of structural nonzeros of the Cholesky factor, diagonal included."""
        return int(self.colcount.sum())

    @property
    def flops(self):
        """Floating-point operations of a column Cholesky factorization (LLᵀ).

        Column j with c entries costs one square root, c - 1 divisions and a
        symmetric rank-1 update of (c - 1)c/2 multiply-adds: c² in all.
        """
        return float(np.sum(self.colcount.astype(np.float64) ** 2))


def elimination_tree(xadj, adjncy, perm, *, keep_order=False):
    """Etree, postorder, column counts and separator tree of a permuted pattern.

    Parameters
    ----------
    xadj, adjncy : int64 arrays
        Adjacency of A + Aᵀ without the diagonal, original numbering.
    perm : int64 array
        Fill-reducing ordering; the result holds it renumbered in postorder,
        which changes neither the fill nor the flops.
    keep_order : bool
        Keep ``perm`` as it is (not postordered); the tree and the counts are
        given for it. Used after :func:`reorder_supernodes`.

    Returns
    -------
    EliminationTree
    """
    n = xadj.shape[0] - 1
    gxadj, gadjncy, gperm, giperm = pivot_pattern(xadj, adjncy, perm)
    parent0 = _symbolic.etree(n, gxadj, gadjncy, gperm, giperm)
    post = _symbolic.postorder(n, parent0)
    postperm = perm[post]
    # Column counts need a postordered tree; each pivot keeps its count in any
    # topological order of the same tree. Orderings often come postordered already.
    if np.array_equal(post, np.arange(n)):
        ipost = post
        parent = parent0.copy()
    else:
        ipost = inverse_permutation(post)
        parent = parent0[post]
        parent[parent >= 0] = ipost[parent[parent >= 0]]
        if gperm is None:  # a pattern in pivot order: renumber it in postorder
            gxadj, gadjncy = _symbolic.permuted_graph(n, gxadj, gadjncy, post, ipost)
        else:
            gperm, giperm = postperm, inverse_permutation(postperm)
    colcount = _symbolic.column_counts(n, gxadj, gadjncy, parent, gperm, giperm)
    if keep_order:
        parent, colcount = parent0, colcount[ipost]
    else:
        perm = postperm
    nchild = np.bincount(parent[parent >= 0], minlength=n)
    # A chain continues at j when j's only child is j - 1.
    continues = np.zeros(n, dtype=bool)
    continues[1:] = (parent[:-1] == np.arange(1, n)) & (nchild[1:] == 1)
    sep_ptr, sep_parent = _coarsen_tree(~continues, parent)
    perm = perm.copy() if keep_order else perm
    _frozen(perm, parent, colcount, sep_ptr, sep_parent)
    return EliminationTree(perm, parent, colcount, sep_ptr, sep_parent)


#: From this many vertices on, the symbolic kernels read the pattern from a copy
#: renumbered in pivot order (:func:`pivot_pattern`): beyond the caches, reading the
#: original numbering through the permutation costs more per pass than the copy once
#: (etree and column counts 1.5-3x faster on 2D and 3D meshes of 10⁵-10⁶ vertices);
#: below, it costs less than the copy.
PERMUTE_MIN_VERTICES = 32768

#: ... and at most this many neighbours per vertex on average (27-point stencils have
#: 26): the copy costs per entry and saves mostly per row, so on denser graphs (3D
#: elasticity, 80) it costs more than it saves.
PERMUTE_MAX_DEGREE = 32


def pivot_pattern(xadj, adjncy, perm, iperm=None):
    """The pattern as the symbolic kernels read it in the pivot order ``perm``:
    ``(xadj, adjncy, perm, iperm)``, either the original numbering with the
    permutation, or a copy renumbered in pivot order (rows unsorted) with ``perm`` and
    ``iperm`` None, on graphs of :data:`PERMUTE_MIN_VERTICES` vertices or more and
    :data:`PERMUTE_MAX_DEGREE` neighbours per vertex or fewer."""
    n = xadj.shape[0] - 1
    if iperm is None:
        iperm = inverse_permutation(perm)
    if n < PERMUTE_MIN_VERTICES or adjncy.size > PERMUTE_MAX_DEGREE * n:
        return xadj, adjncy, perm, iperm
    return (*_symbolic.permuted_graph(n, xadj, adjncy, perm, iperm), None, None)


def _coarsen_tree(starts, parent):
    """Cut a postordered tree into contiguous pieces where ``starts``; their ranges and parents."""
    n = parent.shape[0]
    ptr = np.append(np.flatnonzero(starts), n).astype(np.int64)
    owner = np.repeat(np.arange(ptr.size - 1, dtype=np.int64), np.diff(ptr))
    top = parent[ptr[1:] - 1]
    coarse_parent = np.where(top >= 0, owner[np.maximum(top, 0)], -1).astype(np.int64)
    return ptr, coarse_parent


def supernode_partition(tree, *, amalgamation=True, together=None):
    """Column partition into supernodes: fundamental supernodes, then amalgamated.

    Parameters
    ----------
    tree : EliminationTree
    amalgamation : bool or dict
        Merge small subtrees, and supernodes into their parent when few zeros
        are added (see :data:`AMALGAMATION`; a dict overrides its entries).
    together : bool array, optional
        ``together[j]``: column j must share column j - 1's cblk (the second
        column of a 2x2 pivot pair; its etree parent is j).

    Returns
    -------
    fcol : ndarray of int64
        First column of each supernode, then n.
    n_zeros : int
        Explicit zeros that amalgamation added to the factor's structure.
    """
    parent, colcount = tree.parent, tree.colcount
    n = parent.shape[0]
    joins = fundamental_joins(tree)
    rules = amalgamation_parameters(amalgamation)
    if rules is not None:
        joins |= _relaxed_subtrees(parent, rules["subtree"])
    if together is not None:
        joins |= together
    sptr, sparent = _coarsen_tree(~joins, parent)
    n_zeros = 0
    if rules is not None:
        # A supernode's rows below it are those of its last column (children's
        # structures nest in their parent's), so its panel height is known.
        width = np.diff(sptr)
        count = width + colcount[sptr[1:] - 1] - 1
        stored = width * count - width * (width - 1) // 2
        true_nz = np.add.reduceat(colcount, sptr[:-1]) if n else colcount
        zeros = (stored - true_nz).astype(np.float64)
        sptr, n_zeros = _symbolic.amalgamate(
            sptr, sparent, count, zeros, rules["nrelax"], rules["zrelax"]
        )
    return sptr, n_zeros


def fundamental_joins(tree):
    """``joins[j]``: column j is in column j - 1's fundamental supernode.

    That is when j - 1's parent is j, j has no other child, and the structure
    shrinks by exactly the diagonal: the supernode's diagonal block is dense and
    all its columns share the rows below it.
    """
    parent, colcount = tree.parent, tree.colcount
    n = parent.shape[0]
    nchild = np.bincount(parent[parent >= 0], minlength=n)
    joins = np.zeros(n, dtype=bool)
    joins[1:] = (
        (parent[:-1] == np.arange(1, n)) & (nchild[1:] == 1) & (colcount[:-1] == colcount[1:] + 1)
    )
    return joins


def split_partition(fcol, split, together=None):
    """Cut wide supernodes into panels (see :func:`split_panels`), never inside a 2x2 pair.

    ``split = (min_width, max_width)``: BLAS-3 calls stay cache-sized and threads
    get independent work; None keeps the supernodes whole.
    """
    if split is None:
        return fcol
    n = int(fcol[-1])
    fcol = split_panels(fcol, *split)
    if together is not None:
        # A cut between the two columns of a pair moves one column right.
        inside = together[np.minimum(fcol, n - 1)] & (fcol < n)
        fcol = np.unique(np.where(inside, fcol + 1, fcol))
    return fcol


def reorder_supernodes(xadj, adjncy, tree, fcol, together=None):
    """Reorder the columns inside each fundamental supernode so that the rows other
    cblks have there form few intervals: fewer, taller bloks (PaStiX's reordering).

    A fundamental supernode's diagonal block is dense and its columns share the
    rows below it, so permuting them changes neither the elimination tree, the
    column counts nor the fill. What changes is how descendant cblks see it:
    cblk d's rows inside supernode F form a set, and each maximal run of
    consecutive rows is one blok (one gemm group, one scatter run). The sets are
    applied to F by partition refinement, largest first (:func:`refine_order`),
    which makes a nested family of sets (the traces of nested-dissection
    subdomains on a separator) intervals. The two columns of a 2x2 pivot pair
    (``together``) move as one; a supernode a pair straddles keeps its order.

    Parameters
    ----------
    xadj, adjncy : int64 arrays
        Adjacency of A + Aᵀ without the diagonal, original numbering.
    tree : EliminationTree
    fcol : int64 array
        The supernode partition (before panel splitting) whose cblks' rows make the sets.
    together : bool array, optional
        As for :func:`supernode_partition`.

    Returns
    -------
    EliminationTree
        For the permutation reordered inside fundamental supernodes. Their blocks
        stay dense in the block structure, but the exact fill may shrink: part of a
        supernode's density can come from eliminating its own first column.
    """
    n = xadj.shape[0] - 1
    ncblk = fcol.shape[0] - 1
    if n < 3:
        return tree
    col2cblk = column_cblks(fcol)
    gxadj, gadjncy, gperm, giperm = pivot_pattern(xadj, adjncy, tree.perm)
    rowptr, rows, _ = _symbolic.block_rows(n, gxadj, gadjncy, fcol, col2cblk, gperm, giperm)
    # A unit is a column, or the two columns of a pair (named by the first).
    unit = np.arange(n, dtype=np.int64)
    if together is not None:
        unit[together] -= 1
    fund = np.cumsum(~fundamental_joins(tree)) - 1
    pinned = np.zeros(fund[-1] + 1, dtype=bool)
    if together is not None:
        # A pair across two fundamental supernodes pins both.
        second = np.flatnonzero(together)
        split = second[fund[second] != fund[second - 1]]
        pinned[fund[split]] = pinned[fund[split - 1]] = True
    # Sets: the units of each (cblk, fundamental supernode) pair, one run of ``rows``
    # each (a cblk's rows are sorted), without repeats of a pair's unit.
    owner = np.repeat(np.arange(ncblk, dtype=np.int64), np.diff(rowptr))
    u, f = unit[rows], fund[rows]
    keep = ~pinned[f]
    keep[1:] &= ~((u[1:] == u[:-1]) & (owner[1:] == owner[:-1]))
    u, f, owner = u[keep], f[keep], owner[keep]
    if u.size == 0:
        return tree
    new = np.ones(u.size, dtype=bool)
    new[1:] = (owner[1:] != owner[:-1]) | (f[1:] != f[:-1])
    start = np.flatnonzero(new)
    size = np.diff(np.append(start, u.size))
    # Sets in order of decreasing size, then by cblk (deterministic): their runs of
    # ``u`` laid end to end in that order, by one gather.
    by_rank = np.lexsort((owner[start], -size))
    setptr = np.zeros(start.size + 1, dtype=np.int64)
    np.cumsum(size[by_rank], out=setptr[1:])
    shift = start[by_rank] - setptr[:-1]  # where each set's run starts in u, less its new start
    elems = u[np.arange(u.size, dtype=np.int64) + np.repeat(shift, size[by_rank])]
    # Refine over the units, whose classes are their supernodes, then expand pairs.
    units = np.flatnonzero(unit == np.arange(n))
    index = np.full(n, -1, dtype=np.int64)
    index[units] = np.arange(units.size, dtype=np.int64)
    order = _symbolic.refine_order(fund[units], setptr, index[elems])
    cols = units[order]
    if together is not None:
        pair = together[np.minimum(cols + 1, n - 1)] & (cols + 1 < n)
        cols = np.insert(cols, np.flatnonzero(pair) + 1, cols[pair] + 1)
    if np.array_equal(cols, np.arange(n)):
        return tree  # no column moved: the tree and counts stand
    return elimination_tree(xadj, adjncy, tree.perm[cols], keep_order=True)


def _relaxed_subtrees(parent, size_limit):
    """Columns that join the previous one because both lie in one small subtree.

    Every maximal subtree of at most ``size_limit`` columns becomes one
    supernode (SuperLU's relaxed supernodes): the leaves of a minimum-degree
    ordering are otherwise width-1 cblks, each costing BLAS calls for a few flops.
    """
    n = parent.shape[0]
    size = _symbolic.subtree_sizes(parent)
    small = size <= size_limit
    top = small & ((parent < 0) | ~small[np.maximum(parent, 0)])
    roots = np.flatnonzero(top)
    inside = np.zeros(n + 1, dtype=np.int64)
    np.add.at(inside, roots - size[roots] + 1, 1)
    np.add.at(inside, roots + 1, -1)
    joins = np.cumsum(inside[:n]) > 0
    joins[roots - size[roots] + 1] = False
    return joins


def split_panels(fcol, min_width, max_width):
    """Cut every cblk wider than ``max_width`` into near-equal panels.

    Examples
    --------
    >>> split_panels(np.array([0, 10, 610]), 128, 256).tolist()
    [0, 10, 210, 410, 610]
    """
    if not 1 <= min_width <= max_width:
        raise ValueError(f"split=(min, max) needs 1 <= min <= max, got ({min_width}, {max_width})")
    widths = np.diff(fcol)
    pieces = [fcol[:-1]]
    for k in np.flatnonzero(widths > max_width):
        w = int(widths[k])
        nparts = max(1, min(-(-w // max_width), w // min_width))
        cuts = fcol[k] + (np.arange(1, nparts, dtype=np.int64) * w) // nparts
        pieces.append(cuts)
    return np.append(np.sort(np.concatenate(pieces)), fcol[-1]).astype(np.int64)


@dataclass(frozen=True, repr=False)
class SymbolMatrix(ReadOnlyArrays):
    """Block structure of the factor L (and Uᵀ for LU), in PaStiX's vocabulary.

    Column block (cblk) k holds columns ``cblk_fcolnum[k]..cblk_lcolnum[k]``
    (inclusive) and blocks ``cblk_bloknum[k]:cblk_bloknum[k+1]``; its first
    block is the dense diagonal block. Block (blok) b holds rows
    ``blok_frownum[b]..blok_lrownum[b]`` of cblk ``blok_lcblknm[b]`` and faces
    cblk ``blok_fcblknm[b]``, whose columns contain those rows: the update
    computed from b lands in that cblk.

    The numeric phase stores each cblk as a dense column-major panel of
    ``cblk_stride[k]`` rows (its bloks stacked, blok b starting at row
    ``blok_coefind[b]``) by ``width`` columns.
    """

    n: int
    cblk_fcolnum: np.ndarray
    cblk_lcolnum: np.ndarray
    cblk_bloknum: np.ndarray
    blok_frownum: np.ndarray
    blok_lrownum: np.ndarray
    blok_lcblknm: np.ndarray
    blok_fcblknm: np.ndarray

    @property
    def ncblk(self):
        return int(self.cblk_fcolnum.shape[0])

    @property
    def nblok(self):
        return int(self.blok_frownum.shape[0])

    @property
    def cblk_width(self):
        return self.cblk_lcolnum - self.cblk_fcolnum + 1

    @property
    def blok_height(self):
        return self.blok_lrownum - self.blok_frownum + 1

    @property
    def cblk_stride(self):
        """Rows of each cblk's panel: the heights of its bloks, diagonal included."""
        return (
            np.add.reduceat(self.blok_height, self.cblk_bloknum[:-1])
            if self.nblok
            else (np.zeros(0, dtype=np.int64))
        )

    @property
    def blok_coefind(self):
        """Row offset of each blok inside its cblk's panel."""
        h = self.blok_height
        ends = np.cumsum(h)
        return (
            ends
            - h
            - np.repeat(
                ends[self.cblk_bloknum[:-1]] - h[self.cblk_bloknum[:-1]], np.diff(self.cblk_bloknum)
            )
        )

    @property
    def cblk_parent(self):
        """The cblk faced by each cblk's first off-diagonal blok, -1 when it has none."""
        return cblk_parents(self.cblk_bloknum, self.blok_fcblknm)

    @property
    def nnz_stored(self):
        """Entries of L the numeric phase stores: every panel in full, padding included."""
        return int(np.sum(self.cblk_width * self.cblk_stride))

    def col2cblk(self):
        """The cblk of every column."""
        return column_cblks(np.append(self.cblk_fcolnum, self.n))

    def check(self):
        """Verify every invariant of the block structure; raise PastixError on a violation.

        Checked: the cblks partition the columns in order; each cblk's first
        blok is its diagonal block; off-diagonal bloks lie strictly below the
        diagonal block, in increasing and non-overlapping row order, each inside
        the columns of the cblk it faces, which comes later; and the structure
        is closed under elimination (the rows of a cblk below its parent are
        rows of the parent), so every update lands inside the structure.
        """
        n, nc, nb = self.n, self.ncblk, self.nblok
        f, l, bn = self.cblk_fcolnum, self.cblk_lcolnum, self.cblk_bloknum
        fr, lr, lc, fc = self.blok_frownum, self.blok_lrownum, self.blok_lcblknm, self.blok_fcblknm

        def fail(what):
            raise PastixError(f"symbol matrix invariant violated: {what}")

        if nc == 0 or f[0] != 0 or l[-1] != n - 1 or np.any(f[1:] != l[:-1] + 1) or np.any(l < f):
            fail("cblks do not partition the columns 0..n-1 in order")
        if bn.shape[0] != nc + 1 or bn[0] != 0 or bn[-1] != nb or np.any(np.diff(bn) < 1):
            fail("cblk_bloknum is not increasing from 0 to nblok with one blok per cblk at least")
        owner = np.repeat(np.arange(nc), np.diff(bn))
        if np.any(lc != owner):
            fail("blok_lcblknm does not name the cblk that holds each blok")
        diag = bn[:-1]
        if np.any(fr[diag] != f) or np.any(lr[diag] != l) or np.any(fc[diag] != np.arange(nc)):
            fail("the first blok of a cblk is not its diagonal block")
        off = np.ones(nb, dtype=bool)
        off[diag] = False
        if np.any(lr < fr) or np.any(fr < 0) or np.any(lr >= n):
            fail("a blok has an empty or out-of-range row interval")
        if np.any(fr[off] <= l[lc[off]]):
            fail("an off-diagonal blok is not strictly below its cblk's diagonal block")
        if (
            np.any(fc[off] <= lc[off])
            or np.any(fr[off] < f[fc[off]])
            or np.any(lr[off] > l[fc[off]])
        ):
            fail("an off-diagonal blok does not lie inside the columns of a later cblk it faces")
        nxt = np.flatnonzero(off[1:] & (owner[1:] == owner[:-1]) & off[:-1])
        if np.any(fr[nxt + 1] <= lr[nxt]):
            fail("the bloks of a cblk overlap or are not in increasing row order")
        rowptr, rows = self.row_structure()
        bad = _symbolic.closure_violation(rowptr, rows, self.cblk_parent, np.append(f, n))
        if bad != -1:
            fail(f"cblk {bad} has rows below its parent that the parent lacks (not closed)")

    def row_structure(self):
        """Rows below each cblk's diagonal block, as (rowptr, rows) with sorted rows."""
        off = np.ones(self.nblok, dtype=bool)
        off[self.cblk_bloknum[:-1]] = False
        h = self.blok_height[off]
        starts = np.repeat(self.blok_frownum[off] - (np.cumsum(h) - h), h)
        rows = starts + np.arange(int(h.sum()), dtype=np.int64)
        counts = np.bincount(self.blok_lcblknm[off], weights=h, minlength=self.ncblk)
        rowptr = np.zeros(self.ncblk + 1, dtype=np.int64)
        np.cumsum(counts.astype(np.int64), out=rowptr[1:])
        return rowptr, rows

    def __repr__(self):
        w = self.cblk_width
        return (
            f"<SymbolMatrix n={self.n} ncblk={self.ncblk} nblok={self.nblok} "
            f"width min/median/max={int(w.min())}/{int(np.median(w))}/{int(w.max())} "
            f"stored={self.nnz_stored}>"
        )

    def draw(self, ax=None, *, max_cblk=2000):
        """Draw the block structure of L: one rectangle per blok (needs matplotlib).

        Parameters
        ----------
        ax : matplotlib Axes, optional
        max_cblk : int
            Refuse structures with more cblks, whose drawing would be unreadable.

        Returns
        -------
        matplotlib Axes
        """
        import matplotlib.pyplot as plt
        from matplotlib.collections import PatchCollection
        from matplotlib.patches import Rectangle

        if self.ncblk > max_cblk:
            raise ValueError(f"{self.ncblk} cblks is too many to draw (max_cblk={max_cblk})")
        if ax is None:
            _, ax = plt.subplots(figsize=(6, 6))
        f, w = self.cblk_fcolnum, self.cblk_width
        lc = self.blok_lcblknm
        diag = np.zeros(self.nblok, dtype=bool)
        diag[self.cblk_bloknum[:-1]] = True
        rects = [
            Rectangle((f[k], r0), w[k], r1 - r0 + 1)
            for k, r0, r1 in zip(lc, self.blok_frownum, self.blok_lrownum, strict=True)
        ]
        colors = np.where(diag, "tab:red", "tab:blue")
        ax.add_collection(PatchCollection(rects, facecolor=colors, edgecolor="k", linewidth=0.2))
        ax.set_xlim(0, self.n)
        ax.set_ylim(self.n, 0)
        ax.set_aspect("equal")
        ax.set_title(f"L: {self.ncblk} cblks, {self.nblok} bloks")
        return ax


def block_symbol(xadj, adjncy, tree, fcol):
    """Supernodal symbolic factorization of the partition ``fcol`` into a SymbolMatrix.

    Parameters
    ----------
    xadj, adjncy : int64 arrays
        Adjacency of A + Aᵀ without the diagonal, original numbering.
    tree : EliminationTree
        Supplies the (postordered) permutation.
    fcol : int64 array
        First column of each cblk, then n.
    """
    n = xadj.shape[0] - 1
    ncblk = fcol.shape[0] - 1
    col2cblk = column_cblks(fcol)
    gxadj, gadjncy, gperm, giperm = pivot_pattern(xadj, adjncy, tree.perm)
    rowptr, rows, _ = _symbolic.block_rows(n, gxadj, gadjncy, fcol, col2cblk, gperm, giperm)
    # A blok is a maximal run of consecutive rows facing one cblk.
    owner = np.repeat(np.arange(ncblk, dtype=np.int64), np.diff(rowptr))
    new = np.ones(rows.size, dtype=bool)
    if rows.size:
        new[1:] = (
            (owner[1:] != owner[:-1])
            | (rows[1:] != rows[:-1] + 1)
            | (col2cblk[rows[1:]] != col2cblk[rows[:-1]])
        )
    starts = np.flatnonzero(new)
    ends = np.append(starts[1:], rows.size)[: starts.size] - 1
    off_owner = owner[starts]
    nblok_per = 1 + np.bincount(off_owner, minlength=ncblk)
    bloknum = np.zeros(ncblk + 1, dtype=np.int64)
    np.cumsum(nblok_per, out=bloknum[1:])
    nblok = int(bloknum[-1])
    frow = np.empty(nblok, dtype=np.int64)
    lrow = np.empty(nblok, dtype=np.int64)
    fcblk = np.empty(nblok, dtype=np.int64)
    diag = bloknum[:-1]
    frow[diag], lrow[diag], fcblk[diag] = fcol[:-1], fcol[1:] - 1, np.arange(ncblk)
    # Off-diagonal bloks come sorted by owner then row: each owner's diagonal precedes them.
    pos = np.arange(starts.size, dtype=np.int64) + off_owner + 1
    frow[pos], lrow[pos], fcblk[pos] = rows[starts], rows[ends], col2cblk[rows[starts]]
    lcblk = np.repeat(np.arange(ncblk, dtype=np.int64), nblok_per)
    arrays = (fcol[:-1].copy(), fcol[1:] - 1, bloknum, frow, lrow, lcblk, fcblk)
    _frozen(*arrays)
    return SymbolMatrix(n, *arrays)
