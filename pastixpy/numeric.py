"""Numeric phase: assemble A's values into the panels of the block structure, factor, solve.

Works in pivot order on an already preprocessed matrix B (scaled, rows
matched); :mod:`pastixpy.api` maps user vectors to and from that space.
"""

import ctypes
import ctypes.util
import os
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cached_property

import numpy as np
import scipy.sparse as sp
from threadpoolctl import ThreadpoolController

from . import _numeric, _symbolic
from .errors import NotPositiveDefiniteError, OutOfMemoryError
from .matrix import compact_index
from .memory import check_memory
from .options import available_cores
from .ordering import inverse_permutation
from .symbolic import cblk_parents, column_cblks

#: Factorization kinds the kernels know.
KIND_CODES = _numeric.KIND_CODES

#: GNU OpenMP's thread pool does not survive fork(): in the child of a process that
#: ran the threaded factorization, another OpenMP region would hang, so it factors
#: on one thread.
_openmp = {"used": False, "forked": False}


def _after_fork_in_child():
    _openmp["forked"] = _openmp["forked"] or _openmp["used"]


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def _find_malloc_trim():
    """glibc's ``malloc_trim``, or None (other C libraries, other systems)."""
    name = ctypes.util.find_library("c")
    try:
        return ctypes.CDLL(name).malloc_trim if name else None
    except (OSError, AttributeError):
        return None


_malloc_trim = _find_malloc_trim()


def release_free_memory():
    """Give the memory that freed temporaries left in the C heap back to the system.

    glibc keeps freed blocks for reuse; after an analysis (METIS, sorts) that is
    about 100 MB on a 60³ Laplacian, which would count in the process's peak
    on top of the factor allocated next. A no-op where glibc is not used.
    """
    if _malloc_trim is not None:
        _malloc_trim(0)


@dataclass(frozen=True)
class PanelLayout:
    """Where each cblk's panel and each blok lies in the flat coefficient arrays.

    Derived once from a SymbolMatrix; every numeric kernel takes these arrays.
    """

    fcol: np.ndarray  # first column of each cblk, then n
    bloknum: np.ndarray
    coefind: np.ndarray  # offset of each cblk's panel, then the total size
    stride: np.ndarray  # rows of each panel
    frow: np.ndarray
    lrow: np.ndarray
    fcblk: np.ndarray
    bcoef: np.ndarray  # row of each blok inside its panel

    @classmethod
    def from_symbol(cls, symbol):
        stride = symbol.cblk_stride.astype(np.int64)
        coefind = np.zeros(symbol.ncblk + 1, dtype=np.int64)
        np.cumsum(stride * symbol.cblk_width, out=coefind[1:])
        return cls(
            np.append(symbol.cblk_fcolnum, symbol.n).astype(np.int64),
            symbol.cblk_bloknum,
            coefind,
            stride,
            symbol.blok_frownum,
            symbol.blok_lrownum,
            symbol.blok_fcblknm,
            symbol.blok_coefind.astype(np.int64),
        )

    @property
    def size(self):
        return int(self.coefind[-1])

    @property
    def block_args(self):
        """The structure arrays in the order the factorization kernel takes them."""
        return (
            self.fcol,
            self.bloknum,
            self.coefind[:-1],
            self.stride,
            self.frow,
            self.lrow,
            self.fcblk,
            self.bcoef,
        )

    @cached_property
    def parent(self):
        """Parent of each cblk in the block tree, -1 at roots (cblks are in postorder:
        a parent comes after its children)."""
        return cblk_parents(self.bloknum, self.fcblk)

    def solve_plan(self, threads):
        """How the triangular solves split over ``threads`` threads (see :class:`SolvePlan`)."""
        plans = self.__dict__.setdefault("_plans", {})
        if threads not in plans:
            plans[threads] = SolvePlan.build(self, threads)
        return plans[threads]

    @cached_property
    def col2cblk(self):
        """The cblk of each column (pivot order)."""
        return column_cblks(self.fcol)

    def cblk_ptr(self, cols):
        """Where each cblk's run of the ascending pivot columns ``cols`` starts, then the end."""
        return np.searchsorted(cols, self.fcol).astype(np.int64)

    def position(self, rows, cols):
        """Flat index of entries (row, col), pivot order, with row >= col's cblk's first column.

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
            self.coefind,
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

    @classmethod
    def build(cls, layout, threads):
        """Proportional split (Geist and Ng): from the roots, give the subtrees to the
        least loaded thread, heaviest first; while that leaves a thread more than
        :data:`SOLVE_BALANCE` times its share, replace the heaviest subtree by its
        children. Work is panel entries, as a solve streams its panels."""
        ncblk = layout.fcol.shape[0] - 1
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
        work = (np.diff(layout.coefind)).astype(np.float64)
        first = _subtree_first(parent)
        cum = np.concatenate(([0.0], np.cumsum(work)))
        subtree = cum[np.arange(1, ncblk + 1)] - cum[first]
        order = np.argsort(parent, kind="stable")
        child_ptr = np.searchsorted(parent[order], np.arange(-1, ncblk + 1))
        layer = list(order[child_ptr[0] : child_ptr[1]])  # the roots
        # Nested dissection balances within a few levels (the top separator's
        # panels, then a level or two); a chain of cblks never would.
        for _ in range(SOLVE_MAX_SPLITS * threads):
            bins, loads = _greedy_bins(layer, subtree, threads)
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


def _subtree_first(parent):
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


def _greedy_bins(items, weight, nbins):
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

    ``src_*`` index B's data array (canonical CSC), ``pos_*`` the flat panels; both
    int32 when the sizes allow (a factorization keeps them for refactorize: two
    indices per entry of A). Entries are grouped by the cblk whose panel holds
    them: cblk k's are ``ptr_*[k]:ptr_*[k + 1]``, so that the kernels add A into a
    panel just before factoring it (on the thread that factors it, which also
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

    @classmethod
    def build(cls, B, iperm, layout, kind):
        """Map the entries of canonical CSC ``B`` under the symmetric permutation ``iperm``."""
        perm = inverse_permutation(iperm)
        src, pr, pc = _entries_by_pivot_column(B.indptr, B.indices, perm, iperm)
        if kind != "lu":
            # Symmetric kinds read the lower triangle only.
            lower = pr >= pc
            pr, pc = pr[lower], pc[lower]
            no_entries = np.zeros(layout.fcol.size, dtype=np.int64)
            pos = layout.position(pr, pc)
            return cls(src[lower], pos, layout.cblk_ptr(pc), src[:0], src[:0], no_entries)
        # L's panels take the lower entries and the upper ones inside the diagonal
        # blocks (rows from the column's cblk down); the rest go to Uᵀ.
        col2cblk = layout.col2cblk
        to_l = pr >= layout.fcol[col2cblk[pc]]
        src, pr, pc = src[to_l], pr[to_l], pc[to_l]
        # Uᵀ holds the upper entries outside the diagonal blocks: the lower ones of Bᵀ,
        # grouped by their column in Bᵀ (B's row).
        n = B.shape[0]
        T = sp.csc_array((np.arange(B.nnz), B.indices, B.indptr), shape=(n, n)).T.tocsc()
        src_t, pr_t, pc_t = _entries_by_pivot_column(T.indptr, T.indices, perm, iperm)
        to_u = pr_t >= layout.fcol[col2cblk[pc_t] + 1]
        pr_t, pc_t = pr_t[to_u], pc_t[to_u]
        return cls(
            src,
            layout.position(pr, pc),
            layout.cblk_ptr(pc),
            T.data[src_t[to_u]],
            layout.position(pr_t, pc_t),
            layout.cblk_ptr(pc_t),
        )


def _entries_by_pivot_column(indptr, indices, perm, iperm):
    """The entries of a CSC pattern column by column in pivot order (``perm`` and its
    inverse ``iperm``).

    Returns their indices in the CSC arrays and their pivot rows and columns
    (``iperm[row]``, ``iperm[col]``), the columns ascending: a counting sort by
    column that the CSC layout already holds.
    """
    lengths = np.diff(indptr)[perm]
    starts = np.asarray(indptr[:-1], dtype=np.int64)[perm]
    total = int(lengths.sum())
    # Entry t of pivot column j is at starts[j] + (t - first[j]).
    first = np.cumsum(lengths) - lengths
    src = np.repeat(starts - first, lengths) + np.arange(total, dtype=np.int64)
    pc = np.repeat(np.arange(iperm.size, dtype=np.int64), lengths)
    return src, iperm[indices[src]], pc


@dataclass(frozen=True)
class Factors:
    """Numeric factors of P B Pᵀ in panel form.

    Attributes
    ----------
    kind : str
        ``"llt"``, ``"ldlt"``, ``"ldlh"`` or ``"lu"``.
    L, U : ndarray
        Flat panel arrays; ``U`` holds Uᵀ's panels for LU and is empty otherwise.
    lperm : ndarray of int64
        LDLᵀ and LU: pivot order after the interchanges inside diagonal blocks
        (Bunch-Kaufman's symmetric ones, LU's row interchanges); empty for LLᵀ.
    pivtype : ndarray of int8
        LDLᵀ only: 1 for a 1x1 pivot, 2 and 0 for the columns of a 2x2 pivot.
    dsub : ndarray
        LDLᵀ only: D's off-diagonal entry of the 2x2 pivot starting at each column.
    perturbed : ndarray of bool
        Pivots replaced by static pivoting, in pivot order.
    threads : int
        Threads the factorization ran on.
    """

    kind: str
    layout: PanelLayout
    L: np.ndarray
    U: np.ndarray
    lperm: np.ndarray
    pivtype: np.ndarray
    dsub: np.ndarray
    perturbed: np.ndarray
    threads: int = 1

    @property
    def conj(self):
        """Whether transposes in this factorization are conjugate (Hermitian kinds)."""
        return np.iscomplexobj(self.L) and self.kind in ("llt", "ldlh")

    def solve_inplace(self, X, trans="N"):
        """Solve (P B Pᵀ) X = R in place, X in pivot order, (n, nrhs) row-major.

        Row-major keeps the right-hand sides of an unknown together, so the rows
        of a block are one contiguous run for the kernels. ``trans`` is ``"N"`` or
        ``"T"`` (LU); symmetric kinds ignore it. Runs on the factorization's threads:
        disjoint subtrees in parallel, then the tree above them (forward), and the
        other way round backward.
        """
        if not X.flags.c_contiguous:
            raise ValueError("solve_inplace needs a row-major (C-contiguous) X")
        n, nrhs = X.shape
        flat = X.reshape(-1)
        lay = self.layout
        plan = lay.solve_plan(1 if _openmp["forked"] else self.threads)
        forward, backward = self._sweeps(trans)
        whole = np.array([0, plan.top.shape[0]], dtype=np.int64)
        no_top = np.empty(0, dtype=np.int64)
        if plan.threads > 1:
            _openmp["used"] = True
        # With threads over subtrees the BLAS runs on one, the top part too: a BLAS
        # thread left spinning after it would take a core from the next sweep.
        with blas_threads(1 if plan.threads > 1 else None):
            _numeric.solve_forward(
                flat,
                n,
                nrhs,
                *forward,
                plan.cblks,
                plan.ptr,
                plan.topoff,
                plan.ntop,
                *lay.block_args,
            )
            if plan.top.size:
                _numeric.solve_forward(
                    flat, n, nrhs, *forward, plan.top, whole, no_top, 0, *lay.block_args
                )
            if self.kind in ("ldlt", "ldlh"):
                _numeric.solve_diagonal(
                    flat,
                    n,
                    nrhs,
                    self.L,
                    self.dsub,
                    self.conj,
                    self.pivtype,
                    lay.fcol,
                    lay.coefind[:-1],
                    lay.stride,
                )
            if plan.top.size:
                _numeric.solve_backward(flat, n, nrhs, *backward, plan.top, whole, *lay.block_args)
            _numeric.solve_backward(flat, n, nrhs, *backward, plan.cblks, plan.ptr, *lay.block_args)
        return X

    def _sweeps(self, trans):
        """The forward and backward sweeps' panels and ops: (diagonal blocks' panels,
        off-diagonal panels, [their op,] uplo, trans, unit diagonal, local pivots)."""
        L, U = self.L, self.U
        N_, T_, L_, U_ = ord("N"), ord("T"), ord("L"), ord("U")
        tr = ord("C") if self.conj else ord("T")
        none = np.empty(0, dtype=np.int64)
        if self.kind == "llt":
            return (L, L, L_, N_, False, none), (L, L, tr, L_, tr, False, none)
        if self.kind in ("ldlt", "ldlh"):
            return (L, L, L_, N_, True, self.lperm), (L, L, tr, L_, tr, True, self.lperm)
        if trans == "N":  # LU: L unit lower, then U (its panels hold Uᵀ)
            return (L, L, L_, N_, True, self.lperm), (L, U, T_, U_, N_, False, none)
        return (L, U, U_, T_, False, none), (L, L, T_, L_, T_, True, self.lperm)

    def diagonal(self):
        """Diagonal of the diagonal blocks in pivot order: L's (LLᵀ), D's (LDLᵀ), U's (LU)."""
        lay = self.layout
        return _numeric.diagonal_entries(self.L, lay.fcol, lay.coefind[:-1], lay.stride)


def permuted_rows(a, index):
    """``a[index]`` of a 2-D array, as a new row-major array.

    One pass in the kernel module: numpy's take moves a row of k right-hand sides
    at a time, several times slower for k > 1. ``a`` has one of the factor dtypes.
    """
    a = np.ascontiguousarray(a)
    out = np.empty(a.shape, a.dtype)
    _numeric.gather_rows(a, np.ascontiguousarray(index, dtype=np.int64), out)
    return out


#: Un-permuting the solution gathers it into a new array when its rows take at most
#: this many bytes (one right-hand side): the gather's loads are independent, while
#: following the permutation's cycles in place waits on one load after another
#: (216,000 rows, one right-hand side: 1.0 ms against 4.4 ms). Wider rows go in
#: place: the walk costs about the same per row, a new array's fresh pages cost per
#: byte (40³ Laplacian, 16 right-hand sides, first solve of a fresh process: a new
#: array's 8 MB made it 15 ms slower, of 105 ms).
GATHER_MAX_ROW_BYTES = 16


def unpermute_rows(a, index, inverse, out=None):
    """``a[index] = a`` for a row-major 2-D ``a``; ``inverse`` is ``index``'s inverse.

    Returns ``out`` when given (a row-major array like ``a``, gathered into), else
    a new array when ``a``'s rows are narrow (see :data:`GATHER_MAX_ROW_BYTES`),
    else ``a`` itself, un-permuted in place.
    """
    if out is not None and out.shape == a.shape and out.dtype == a.dtype:
        _numeric.gather_rows(a, np.ascontiguousarray(inverse, dtype=np.int64), out)
        return out
    if a.shape[1] * a.itemsize <= GATHER_MAX_ROW_BYTES:
        return permuted_rows(a, inverse)
    return unpermute_rows_inplace(a, index)


def unpermute_rows_inplace(a, index):
    """``a[index] = a`` in place, for a row-major 2-D ``a`` and a permutation ``index``
    (the inverse of :func:`permuted_rows`, without a second array)."""
    _numeric.scatter_rows_inplace(a, np.ascontiguousarray(index, dtype=np.int64))
    return a


#: Below this many flops, starting threads costs more than they save.
PARALLEL_MIN_FLOPS = 1e8

_blas_controller = []


@contextmanager
def blas_threads(limit):
    """Limit the BLAS to ``limit`` threads inside a ``with`` block (None: leave it).

    One threadpoolctl controller serves the process: building one scans the
    loaded libraries, milliseconds that small solves would pay each time.
    """
    if limit is None:
        yield
        return
    if not _blas_controller:
        _blas_controller.append(ThreadpoolController())
    with _blas_controller[0].limit(limits=int(limit), user_api="blas"):
        yield


def factorize_numeric(B, analysis, layout, amap, kind, pivot_tol, progress=None, threads=None):
    """Assemble B into panels and factor them.

    Parameters
    ----------
    B : canonical CSC array
        The preprocessed matrix, in the original numbering.
    analysis : Analysis
        Supplies the permutation; ``layout`` and ``amap`` derive from it.
    kind : str
    pivot_tol : float
        Static pivoting threshold: pivots smaller in magnitude are replaced.
    progress : callable, optional
        Called as ``progress(done_fraction)`` as the factorization advances.
    threads : int, optional
        Threads factoring cblks concurrently (BLAS then runs single-threaded in
        each); default: the cores this process may run on. ``1`` factors the
        cblks in order on the calling thread, the reference the threaded run
        agrees with to rounding (and what a process forked from one that ran
        threads gets: GNU OpenMP does not survive fork).

    Returns
    -------
    Factors

    Raises
    ------
    NotPositiveDefiniteError
        ``kind="llt"`` met a pivot that is not positive (column in B's numbering):
        the first failing column in pivot order, whatever the number of threads.
    """
    n = B.shape[0]
    release_free_memory()
    # The factors and the copy of B's entries in assembly order, before any of them.
    itemsize = B.dtype.itemsize
    needed = (2 if kind == "lu" else 1) * layout.size * itemsize + amap.src_l.size * itemsize
    check_memory(needed, "the factors", _memory_advice(kind, B.dtype))
    # Zero pages the kernels fill: each panel gets A's entries (``entries``) when its
    # cblk is factored, so its first touch happens on the thread that factors it.
    try:
        L = np.zeros(layout.size, dtype=B.dtype)
        U = np.zeros(layout.size if kind == "lu" else 0, dtype=B.dtype)
    except MemoryError:
        raise OutOfMemoryError(
            f"the factors need {needed / 2**30:.2f} GiB, which could not be allocated; "
            + _memory_advice(kind, B.dtype),
            needed=needed,
            available=0,
        ) from None
    entries = (
        B.data[amap.src_l],
        amap.pos_l,
        amap.ptr_l,
        B.data[amap.src_u],
        amap.pos_u,
        amap.ptr_u,
    )
    symmetric_pivots = kind in ("ldlt", "ldlh")
    # Local pivots: symmetric interchanges for LDLᵀ, row interchanges for LU.
    lperm = np.arange(n if kind != "llt" else 0, dtype=np.int64)
    pivtype = np.ones(n if symmetric_pivots else 0, dtype=np.int8)
    dsub = np.zeros(n if symmetric_pivots else 0, dtype=B.dtype)
    pert = np.zeros(n, dtype=np.int8)
    code = KIND_CODES[kind]
    # Small factorizations stay on one thread: starting more costs more.
    small = analysis.stats["flops"] < PARALLEL_MIN_FLOPS
    if threads is None:
        threads = 1 if small else available_cores()
    threads = int(threads)
    if layout.fcol.size <= 2 or _openmp["forked"]:
        threads = 1
    args = (code, L, U, *entries, *layout.block_args, pivot_tol, lperm, pivtype, dsub, pert)
    if threads > 1:
        _openmp["used"] = True
        with blas_threads(1):
            _, failed = _numeric.factorize_parallel(*args, threads, progress)
    else:
        _, failed = _numeric.factorize_cblks(*args, progress)
    _check_failed(failed, analysis)
    if progress is not None:
        progress(1.0)
    for a in (L, U, lperm, pivtype, dsub):
        a.setflags(write=False)
    return Factors(kind, layout, L, U, lperm, pivtype, dsub, pert.astype(bool), threads)


def _memory_advice(kind, dtype):
    """What to try when the factors do not fit."""
    tips = []
    if np.dtype(dtype).char in "dD":
        tips.append("a single-precision matrix (A.astype(numpy.float32)) halves the factors")
    if kind == "lu":
        tips.append(
            "a symmetric matrix factored as kind='llt' or 'ldlt' stores one factor, not two"
        )
    tips.append(
        "another ordering may fill less (pastixpy.analyze(A, ordering=...).stats"
        "['memory_bytes'] forecasts each before any allocation)"
    )
    return "; ".join(tips)


def _check_failed(failed, analysis):
    if failed >= 0:
        column = int(analysis.perm[failed])
        raise NotPositiveDefiniteError(
            f"the matrix is not positive definite: the pivot of column {column} is not "
            "positive; use kind='ldlt' (or kind='auto') for symmetric indefinite matrices",
            column=column,
        )
