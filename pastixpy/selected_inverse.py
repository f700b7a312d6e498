"""Selected inversion: the entries of A⁻¹ on the factor's block pattern, from the factors.

:meth:`pastixpy.Factorization.inv_diag` and ``inv_selected`` call these functions with
the factorization's solver. The algorithm is Takahashi, Fagan and Chin's recurrence
(Erisman and Tinney's for sparse matrices) run on the supernodal blocks, as Amestoy et
al. (MUMPS) and Lin et al. (SelInv, PEXSI) do: for M = P B Pᵀ = L D Lᵀ and Z = M⁻¹, cblk
by cblk from the last to the first, with S the rows of cblk k's panel below its diagonal
block and L_S those panel rows,

    Y      = L_S L_kk⁻¹
    Z_S,k  = -Z_S,S Y
    Z_k,k  = L_kk⁻ᵀ D_k⁻¹ L_kk⁻¹ - Yᵀ Z_S,k

Z_S,S is read from the panels of Z already made: the rows of a panel lie in the
pattern of every cblk they face (the symbolic factorization closes it), so every
entry it needs was computed. Each step is a few dense products of the sizes the
factorization's own updates have, so the arithmetic is a small multiple of the
factorization's (3 to 3.5 times on Laplacians), not n solves: the small cblks (most
of them: the leaves of nested dissection) in batches of like sizes, padded, one numpy
call per product for the batch (:func:`schedule`); the large ones alone, with BLAS's
symm (hemm) and LAPACK's trtri, on one thread. Z_S,S is gathered by a
compiled kernel (:mod:`pastixpy._selinv`), blok pair by blok pair; what costs more
than the factorization is numpy's calls on the small blocks and the arithmetic itself.

In LDLᴴ and LLᴴ the transposes are conjugate; an LU's Z_k,S = -U_kk⁻¹ U_k,S Z_S,S is kept
transposed, in panels of Zᵀ after those of Z, and Z_k,k gains -U_kk⁻¹ U_k,S Z_S,k.
Single-precision factors (mixed precision) and compressed ones (their tiles expanded)
are read in the working precision.

The factors' bookkeeping is undone here: the interchanges inside diagonal blocks
(LDLᵀ's Bunch-Kaufman pivots and LU's rows, ``Pivots.lperm``: panel rows below a
diagonal block keep the numbering of the cblk they belong to, while a block's own
columns are interchanged), D's 2x2 pivots, then the preprocessing: the fill-reducing
permutation, the scalings and LU's row matching (B = D_r A[row_perm] D_c, so
A⁻¹ = D_c B⁻¹ D_r R with R that row permutation).
"""

import warnings

import numpy as np
import scipy.sparse as sp
from scipy.linalg import blas, lapack

from . import _selinv, _symbolic
from .errors import PastixError, PastixWarning
from .kinds import admissible
from .matrix import symmetry_of
from .numeric import LocalFactors, SchurFactors
from .runtime import blas_threads
from .solve_policy import perturbed_message

__all__ = ["inv_diag", "inv_selected", "selected_panels"]

#: Columns solved at once for LU's diagonal entries of A⁻¹ that lie outside the factor's
#: pattern (a matched row whose diagonal entry A does not store).
SOLVE_BLOCK = 64


def inv_diag(solver):
    """The diagonal of A⁻¹ in A's numbering, in the working dtype (see
    :meth:`pastixpy.Factorization.inv_diag`)."""
    Z = selected_panels(solver)
    prep, n = solver.prep, solver.n
    perm = solver.gathers["N"][1]
    zdiag = Z.diagonal()
    out = np.empty(n, dtype=solver.dtype)
    if prep.row_perm is None:
        # A⁻¹[perm[p], perm[p]] = dc Z[p, p] dr (as inv_selected rounds it).
        out[perm] = zdiag * prep.dc[perm] * prep.dr[perm]
        if solver.kind.hermitian and np.iscomplexobj(out):
            out.imag = 0.0  # a Hermitian inverse's diagonal is real
        return out
    # LU with a row matching: A⁻¹[i, i] = dc[i] Z[iperm[i], iperm[irow[i]]] dr[irow[i]].
    iperm = np.argsort(perm)
    irow = np.argsort(prep.row_perm)
    rows, cols = iperm, iperm[irow]
    vals, found = Z.entries(rows, cols)
    out[:] = vals * prep.dc * prep.dr[irow]
    missing = np.flatnonzero(~found)
    if missing.size:
        out[missing] = _diagonal_by_solves(solver, missing)
    return out


def inv_selected(solver):
    """The entries of A⁻¹ on the factor's pattern, in A's numbering, as a canonical
    ``scipy.sparse.csc_array`` of the working dtype (see
    :meth:`pastixpy.Factorization.inv_selected`)."""
    Z = selected_panels(solver)
    prep, n = solver.prep, solver.n
    perm = solver.gathers["N"][1]
    p, q, v = Z.triplets()
    # Z[p, q] = B⁻¹[perm[p], perm[q]]; A⁻¹ = D_c B⁻¹ D_r R, R the row matching.
    i, k = perm[p], perm[q]
    v = v * prep.dc[i] * prep.dr[k]
    j = k if prep.row_perm is None else prep.row_perm[k]
    return sp.csc_array((v, (i, j)), shape=(n, n), dtype=solver.dtype)


def selected_panels(solver):
    """Z = M⁻¹ (M = P B Pᵀ, the factored matrix) on the factor's block pattern, as
    :class:`ZPanels`, after the checks and warnings of :func:`_check`."""
    _check(solver)
    factors = solver.factors
    return recurrence(factors, solver.dtype)


# ---------------------------------------------------------------------- checks


def _check(solver):
    """Errors for factors this module cannot read, warnings for entries that are not
    those of A⁻¹ to the working precision."""
    factors = solver.factors
    if isinstance(factors, SchurFactors):
        raise PastixError(
            "the selected inverse needs a factorization of every unknown; this one leaves "
            "the Schur complement unfactored (schur=): factorize without schur= for "
            "inv_diag() and inv_selected()"
        )
    if not isinstance(factors, LocalFactors):
        raise PastixError(
            "the selected inverse needs the whole factor in this process; this "
            "factorization is distributed over the ranks of its communicator (comm=): "
            "factorize without comm= for inv_diag() and inv_selected()"
        )
    if solver.perturbed_columns:
        warnings.warn(
            "the selected inverse is that of the matrix with perturbed pivots, not of A "
            "(which refinement corrects in solves, but not here). " + perturbed_message(solver),
            PastixWarning,
            stacklevel=5,
        )
    if solver.compressed:
        warnings.warn(
            "the factors are compressed (compress=): the selected inverse is that of a "
            "matrix within the compression tolerance of A, its entries accurate to about "
            "the condition number times that tolerance; factor without compress= for "
            "entries of A⁻¹ to the working precision",
            PastixWarning,
            stacklevel=5,
        )
    if solver.mixed:
        eps = np.finfo(factors.dtype).eps
        warnings.warn(
            f"the factors are in {factors.dtype}, below the working precision "
            f"{np.dtype(solver.dtype)} (precision='mixed' or 'single'): the selected "
            f"inverse is computed from them, its entries accurate to about the condition "
            f"number times {eps:.0e} (solves are refined, these entries cannot be); "
            "factor with precision='double' for entries of A⁻¹ in double",
            PastixWarning,
            stacklevel=5,
        )
    if solver.kind.symmetric and not solver.exact:
        symmetry = symmetry_of(solver.C)
        if solver.kind.name not in admissible(solver.C, symmetry.kind):
            warnings.warn(
                f"kind={solver.kind.name!r} factored the {symmetry.kind} matrix's lower "
                "triangle: the selected inverse is that of the symmetric matrix it "
                "defines, not of A; factor with kind='lu' for A's",
                PastixWarning,
                stacklevel=5,
            )


# ---------------------------------------------------------------------- the panels of Z


class ZPanels:
    """Z = M⁻¹ on the block pattern of M's factor, in pivot order (before the
    interchanges inside diagonal blocks): cblk k's panel of Z at ``data[off[k]:off[k+1]]``,
    column-major, ``stride[k]`` x width like L's (its diagonal block in full, then the
    bloks below); for LU, the panels of Zᵀ's strictly lower part follow at ``uoff``
    (the rows below the diagonal block only are read).

    Attributes
    ----------
    data : ndarray
        The panels, then zeros (at least one) that gathers read where Z is not held.
    layout : PanelLayout
    off : ndarray of int64
        Each cblk's panel offset, then the end of L's part.
    uoff : int
        Where Zᵀ's panels start (LU), else -1.
    symmetric : bool
    conj : bool
        Z is Hermitian (a symmetric kind on complex values with conjugate transposes).
    """

    def __init__(self, data, layout, off, uoff, symmetric, conj):
        self.data, self.layout, self.off = data, layout, off
        self.uoff, self.symmetric, self.conj = uoff, symmetric, conj

    @property
    def n(self):
        return int(self.layout.fcol[-1])

    def diagonal(self):
        """Z's diagonal, pivot order."""
        fcol, stride, off = self.layout.fcol, self.layout.stride, self.off
        col = np.arange(self.n, dtype=np.int64)
        k = self.layout.col2cblk
        c = col - fcol[k]
        return self.data[off[k] + c * stride[k] + c]

    def entries(self, rows, cols):
        """Z[rows, cols] (pivot order) and whether each lies in the pattern (0 where not)."""
        rows = np.asarray(rows, dtype=np.int64)
        cols = np.asarray(cols, dtype=np.int64)
        c2 = self.layout.col2cblk
        lower = c2[rows] >= c2[cols]
        r = np.where(lower, rows, cols)
        c = np.where(lower, cols, rows)
        pos, found = _positions_or_missing(self.layout, r, c, self.off)
        if not self.symmetric:
            pos = np.where(lower, pos, pos + self.uoff)
        vals = np.where(found, self.data[np.where(found, pos, 0)], 0)
        if self.symmetric and self.conj:
            vals = np.where(lower, vals, np.conj(vals))
        return vals, found

    def triplets(self):
        """Every stored entry of Z as ``(row, col, value)``, pivot order: the diagonal
        blocks in full, the bloks below them and their mirror images (conjugated for a
        Hermitian Z; Zᵀ's panels for LU)."""
        layout = self.layout
        fcol, stride = layout.fcol, layout.stride
        width = np.diff(fcol)
        rows_all = panel_rows(layout)
        # Entry (r, c) of cblk k's panel: flat index off[k] + c stride[k] + r.
        ncol = int(fcol[-1])
        per_col = np.repeat(stride, width)  # entries of each column
        col = np.repeat(np.arange(ncol, dtype=np.int64), per_col)
        k = layout.col2cblk[col]
        rowptr = np.concatenate(([0], np.cumsum(stride)))
        within = _ranges(per_col)
        row = rows_all[rowptr[k] + within]
        flat = self.off[k] + (col - fcol[k]) * stride[k] + within
        below = row >= fcol[k + 1]
        if self.symmetric:
            keep = row >= col  # the bloks and the lower triangle of the diagonal blocks
            row, col, flat = row[keep], col[keep], flat[keep]
            vals = self.data[flat]
            mirror = row > col
            upper = vals[mirror]
            if self.conj:
                upper = np.conj(upper)
                d = ~mirror
                vals[d] = vals[d].real
            return (
                np.concatenate((row, col[mirror])),
                np.concatenate((col, row[mirror])),
                np.concatenate((vals, upper)),
            )
        vals = self.data[flat]
        return (
            np.concatenate((row, col[below])),
            np.concatenate((col, row[below])),
            np.concatenate((vals, self.data[self.uoff + flat[below]])),
        )


def panel_rows(layout):
    """The rows (pivot order) of every cblk's panel, the cblks one after the other:
    cblk k's are ``[sum(stride[:k]), sum(stride[:k + 1]))``, its diagonal block's
    first, then each blok's (the panel's row order, ``bcoef``)."""
    h = layout.lrow - layout.frow + 1
    return np.repeat(layout.frow, h) + _ranges(h)


def _ranges(lengths):
    """0, 1, ..., lengths[0] - 1, 0, 1, ..., lengths[1] - 1, ... as one array."""
    lengths = np.asarray(lengths, dtype=np.int64)
    total = int(lengths.sum())
    starts = np.cumsum(lengths) - lengths
    return np.arange(total, dtype=np.int64) - np.repeat(starts, lengths)


def _positions(layout, rows, cols, off):
    """Flat index of entries (rows, cols) (row >= the column's cblk's first column) in
    panels placed at ``off``: :meth:`PanelLayout.position` with offsets."""
    return _symbolic.panel_positions(
        rows,
        cols,
        layout.fcol,
        layout.col2cblk,
        layout.bloknum,
        layout.frow,
        layout.lrow,
        layout.bcoef,
        off,
        layout.stride,
    )


def _positions_or_missing(layout, rows, cols, off):
    """:func:`_positions` of the entries in the block pattern, and which are (0 for the
    others): a row inside a blok of the column's cblk, or inside its diagonal block."""
    fcol, bloknum, frow, lrow = layout.fcol, layout.bloknum, layout.frow, layout.lrow
    k = layout.col2cblk[cols]
    inside = rows < fcol[k + 1]
    # The last blok of k starting at or above the row, by a search over all bloks'
    # first rows made increasing per cblk (cblk index first).
    key = k * (fcol[-1] + 1) + rows
    bkey = np.repeat(np.arange(layout.ncblk, dtype=np.int64), np.diff(bloknum)) * (fcol[-1] + 1)
    bkey += frow
    b = np.searchsorted(bkey, key, side="right") - 1
    found = inside | ((b > bloknum[k]) & (b < bloknum[k + 1]) & (rows <= lrow[np.maximum(b, 0)]))
    pos = np.zeros(rows.shape, dtype=np.int64)
    if found.any():
        pos[found] = _positions(layout, rows[found], cols[found], off)
    return pos, found


# ---------------------------------------------------------------------- the recurrence

#: Cblks are computed in batches of like sizes, their blocks padded to the next of these
#: widths and heights (zero rows and columns, a unit diagonal), one numpy call per step
#: for the whole batch: most cblks are small (the leaves of nested dissection have one
#: to a few columns), and a call per cblk would cost more than their arithmetic. Sizes
#: past the last are not padded.
SIZE_CLASSES = (1, 2, 3, 4, 5, 6, 8, 10, 12, 16, 20, 24, 32, 40, 48, 64)

#: A batch holds at most this many scalars in its largest padded array (nb x S x S).
BATCH_SCALARS = 1 << 22


def schedule(layout):
    """The batches of cblks computed together, in order: a cblk's batch comes after
    those of every cblk its panel faces (its ancestors in the block tree), as batches go
    by depth in the tree, the roots first; within a depth, cblks of one size class
    (:data:`SIZE_CLASSES`) of width and of rows below their diagonal block.

    Returns
    -------
    list of (cblks, width, rows)
        The cblks (int64) and the padded width and rows below.
    """
    ncblk = layout.ncblk
    parent = layout.parent
    depth = np.zeros(ncblk, dtype=np.int64)
    for k in range(ncblk - 1, -1, -1):  # postorder: a parent comes after its children
        if parent[k] >= 0:
            depth[k] = depth[parent[k]] + 1
    width = np.diff(layout.fcol)
    below = layout.stride - width
    wpad, spad = _padded(width), _padded(below)
    order = np.lexsort((spad, wpad, depth))
    keys = np.stack((depth[order], wpad[order], spad[order]))
    cuts = np.flatnonzero(np.any(keys[:, 1:] != keys[:, :-1], axis=0)) + 1
    batches = []
    for ks in np.split(order, cuts):
        W, S = int(wpad[ks[0]]), int(spad[ks[0]])
        per = max(1, BATCH_SCALARS // max(1, (S + W) * max(S, W)))
        batches.extend((ks[i : i + per], W, S) for i in range(0, ks.size, per))
    return batches


def _padded(sizes):
    """Each size rounded up to its class in :data:`SIZE_CLASSES` (kept past the last)."""
    classes = np.asarray(SIZE_CLASSES, dtype=np.int64)
    i = np.minimum(np.searchsorted(classes, sizes), classes.size - 1)
    return np.where(sizes <= classes[-1], classes[i], sizes)


def _panel_reader(factors, dtype):
    """A function of k giving cblk k's panels (L's, and Uᵀ's for LU, else None) as
    F-ordered arrays of ``dtype``: dense panels as stored, compressed ones expanded (their
    diagonal block, then each tile's U Bt)."""
    storage, layout = factors.storage, factors.layout
    compressed = set()
    if factors.footprint().compressed_cblks:
        compressed = set(factors.tiles()["cblks"].tolist())
    two = factors.kind.two_factors

    def expand(k, factor):
        w = int(layout.fcol[k + 1] - layout.fcol[k])
        parts = [storage.diagonal_block(k) if factor == "L" else np.zeros((w, w), dtype)]
        for b in range(layout.bloknum[k] + 1, layout.bloknum[k + 1]):
            U, Bt = storage.tile(k, b, factor)
            parts.append(U if Bt is None else U @ Bt)
        return np.asfortranarray(np.vstack(parts), dtype=dtype)

    def read(k):
        if k in compressed:
            return expand(k, "L"), expand(k, "U") if two else None
        lp = np.asarray(storage.panel(k, "L"), dtype=dtype, order="F")
        up = np.asarray(storage.panel(k, "U"), dtype=dtype, order="F") if two else None
        return lp, up

    return read


class _Structure:
    """What the recurrence reads of the layout, made once: each cblk's width and panel
    offset (``off``: Z's panels, Zᵀ's after them at ``uoff`` for LU, else -1; from
    ``zero`` on, ``tail`` zeros), every panel's rows (``rows``, cblk k's from
    ``rowptr[k]``) and the blok of each."""

    def __init__(self, layout, two):
        self.layout = layout
        self.width = np.diff(layout.fcol)
        sizes = layout.stride * self.width
        self.off = np.concatenate(([0], np.cumsum(sizes))).astype(np.int64)
        size = int(self.off[-1])
        self.uoff = size if two else -1
        # Z's zero tail: entries read where Z[S, S] is not held, at most a panel on.
        self.zero = 2 * size if two else size
        self.tail = int(sizes.max()) if sizes.size else 1
        self.rows = panel_rows(layout)
        self.rowptr = np.concatenate(([0], np.cumsum(layout.stride))).astype(np.int64)
        heights = layout.lrow - layout.frow + 1
        self.blok_of_row = np.repeat(np.arange(heights.size, dtype=np.int64), heights)


class _Batch:
    """Cblks ``ks`` computed together, their blocks padded to width W and S rows below
    the diagonal block: per cblk (arrays of the batch's length) its width ``w``, rows
    below ``s``, stride ``m``, first column ``fc`` and panel offset ``off``;
    ``col_ok`` and ``row_ok`` mask the padded columns and rows below."""

    def __init__(self, st, ks, W, S):
        layout = st.layout
        self.st, self.ks, self.W, self.S = st, ks, W, S
        self.w = st.width[ks]
        self.m = layout.stride[ks]
        self.s = self.m - self.w
        self.fc = layout.fcol[ks]
        self.off = st.off[ks]
        self.col_ok = np.arange(W) < self.w[:, None]  # (nb, W)
        self.row_ok = np.arange(S) < self.s[:, None]  # (nb, S)

    def load(self, read, two, dtype):
        """The padded diagonal blocks as stored (a unit diagonal in the padding), the
        rows below (L's, and Uᵀ's for LU, else None)."""
        nb, W, S = self.ks.size, self.W, self.S
        if nb == 1 and self.w[0] == W and self.s[0] == S:  # no padding: the panels
            L, U = read(int(self.ks[0]))
            return L[None, :W], L[None, W:], U[None, W:] if two else None
        out = [np.zeros((nb, W + S, W), dtype) for _ in range(2 if two else 1)]
        for i, k in enumerate(self.ks.tolist()):
            w = int(self.w[i])
            for f, panel in enumerate(read(k)[: len(out)]):
                out[f][i, :w, :w] = panel[:w]
                out[f][i, W : W + panel.shape[0] - w, :w] = panel[w:]
        T = out[0][:, :W]
        pad = np.nonzero(~self.col_ok)
        T[pad[0], pad[1], pad[1]] = 1  # a unit diagonal in the padding
        return T, out[0][:, W:], out[1][:, W:] if two else None

    def gather(self, Z, uoff, mirror=None):
        """Z[S, S] for each cblk, S its rows below the diagonal block, where the panels
        of Z hold it (at ``uoff`` >= 0: those of Zᵀ), 0 elsewhere and in the padding;
        with ``mirror`` (not None: conjugate or not), a symmetric Z's whole, what the
        panels do not hold read at its mirror image (conjugated).

        Entry (a, b) is held in the panel of b's cblk when a's cblk is not before b's;
        so the panels of Z give the lower triangle of Z[S, S] (its diagonal blocks
        whole where two rows share a cblk), those of Zᵀ the transpose of its strict
        upper one (their diagonal blocks are not written: 0). The kernel
        (:func:`pastixpy._selinv.gather_lower`) copies it blok pair by blok pair, each
        a block of a panel. A batch of one cblk comes F-ordered, as BLAS's symm takes it.
        """
        layout = self.st.layout
        order = "F" if self.ks.size == 1 else "C"
        G = np.zeros((self.ks.size, self.S, self.S), dtype=Z.dtype, order=order)
        ks = np.ascontiguousarray(self.ks, dtype=np.int64)
        arrays = (layout.fcol, layout.bloknum, layout.stride, layout.frow, layout.lrow)
        _selinv.gather_lower(
            Z, max(uoff, 0), ks, *arrays, layout.fcblk, layout.bcoef, self.st.off, G
        )
        if mirror is not None:
            _selinv.mirror_upper(
                ks, layout.bloknum, layout.frow, layout.lrow, layout.fcblk, bool(mirror), G
            )
        return G

    def gather_full(self, Z, conj):
        """Z[S, S] whole for each cblk (0 in the padding): :meth:`gather`'s lower
        triangle, and its mirror image for a symmetric Z (conjugated with ``conj``) or
        from the panels of Zᵀ for LU."""
        if self.st.uoff < 0:
            return self.gather(Z, -1, mirror=conj)
        return self.gather(Z, -1) + np.swapaxes(self.gather(Z, self.st.uoff), 1, 2)


def _apply_dinv(T, X, batch, pivots, conj):
    """D⁻¹ X for each cblk of a batch (padded (nb, W, W) blocks): D's 1x1 pivots on T's
    diagonal (1 in the padding), its 2x2 pivots' (2, 1) entries in ``pivots.dsub`` at
    their first column (pivtype 2), the (1, 2) entry that one conjugated with ``conj``."""
    cols = batch.fc[:, None] + np.arange(batch.W)[None, :]
    cols = np.where(batch.col_ok, cols, 0)
    d = np.diagonal(T, axis1=1, axis2=2)
    out = X / d[:, :, None]
    i, j = np.nonzero(batch.col_ok & (pivots.pivtype[cols] == 2))
    if i.size:
        d11, d22 = d[i, j, None], d[i, j + 1, None]
        d21 = pivots.dsub[cols[i, j]].astype(T.dtype)[:, None]
        d12 = np.conj(d21) if conj else d21
        det = d11 * d22 - d12 * d21
        x1, x2 = X[i, j], X[i, j + 1]
        out[i, j] = (d22 * x1 - d12 * x2) / det
        out[i, j + 1] = (d11 * x2 - d21 * x1) / det
    return out


def _lower_inverse(T, unit):
    """The inverses of the lower triangles of T's blocks (a unit diagonal with ``unit``),
    exactly lower triangular: LAPACK's trtri on wide blocks, numpy's batched inverse
    on a batch of narrow ones (one call for the batch)."""
    W = T.shape[-1]
    if W > SIZE_CLASSES[-1]:
        (trtri,) = lapack.get_lapack_funcs(("trtri",), (T,))
        out = np.empty_like(T)
        for i in range(T.shape[0]):
            inv, info = trtri(T[i], lower=1, unitdiag=int(unit))
            if info > 0:
                raise PastixError(f"a diagonal block of the factor is singular (pivot {info})")
            out[i] = inv
    else:
        L = np.tril(T, -1 if unit else 0)
        if unit:
            L[:, np.arange(W), np.arange(W)] = 1
        out = np.linalg.inv(L)
    out = np.tril(out)  # trtri leaves the upper triangle and a unit diagonal as they were
    if unit:
        out[:, np.arange(W), np.arange(W)] = 1
    return out


def _h(X, conj):
    """Xᵀ (Xᴴ with ``conj``) of each block of a batch."""
    X = np.swapaxes(X, 1, 2)
    return np.conj(X) if conj else X


def recurrence(factors, dtype):
    """Z = M⁻¹ on the block pattern (:class:`ZPanels`), batch by batch of
    :func:`schedule` (the module docstring's recurrence), in ``dtype``."""
    layout, kind, pivots = factors.layout, factors.kind, factors.pivots
    two = kind.two_factors
    conj = factors.conj
    st = _Structure(layout, two)
    Z = np.zeros(st.zero + st.tail, dtype=dtype)
    read = _panel_reader(factors, dtype)
    # One thread, as the factorization's kernels call the BLAS: on these blocks, most
    # small, a second BLAS thread cost more than it saved (benchmarks/selected_inverse.py).
    with blas_threads(1):
        for ks, W, S in schedule(layout):
            batch = _Batch(st, ks, W, S)
            _store(Z, batch, pivots, kind, *_step(batch, Z, read, kind, pivots, conj, dtype))
    return ZPanels(Z, layout, st.off, st.uoff, not two, conj)


def _step(batch, Z, read, kind, pivots, conj, dtype):
    """The recurrence for the cblks of a batch: Z_k,k, Z_S,k (None without rows below)
    and LU's Z_k,Sᵀ (else None), padded, before the interchanges are undone."""
    two = kind.two_factors
    T, LS, US = batch.load(read, two, dtype)
    Linv = _lower_inverse(T, unit=kind.block_diagonal or two)
    if two:
        Uinv = np.swapaxes(_lower_inverse(np.swapaxes(T, 1, 2), unit=False), 1, 2)
        Zkk = Uinv @ Linv  # U_kk⁻¹ L_kk⁻¹
    elif kind.block_diagonal:
        Zkk = _h(Linv, conj) @ _apply_dinv(T, Linv, batch, pivots, conj)
    else:
        Zkk = _h(Linv, conj) @ Linv
    if not batch.S:
        return Zkk, None, None
    Y = LS @ Linv  # L_S L_kk⁻¹
    if batch.ks.size == 1 and not two:
        ZSk = _symmetric_product(batch.gather(Z, -1)[0], Y[0], conj)[None]
        Zss = None
    else:
        Zss = batch.gather_full(Z, conj)
        ZSk = Zss @ Y
    np.negative(ZSk, out=ZSk)
    if not two:
        Zkk -= _h(Y, conj) @ ZSk
        return Zkk, ZSk, None
    Xt = US @ np.swapaxes(Uinv, 1, 2)  # (U_kk⁻¹ U_k,S)ᵀ
    ZkS_t = np.swapaxes(Zss, 1, 2) @ Xt  # -Z_k,Sᵀ
    np.negative(ZkS_t, out=ZkS_t)
    Zkk -= np.swapaxes(Xt, 1, 2) @ ZSk
    return Zkk, ZSk, ZkS_t


def _symmetric_product(G, Y, conj):
    """Z_S,S Y for one cblk, with BLAS's symm (hemm with ``conj``), from G's lower
    triangle (:meth:`_Batch.gather`'s). A C-ordered G is read as its transpose, which
    is F-ordered and holds it as an upper triangle, conjugated for a Hermitian Z: hemm
    reads that as conj(Z_S,S), and conj(conj(Z_S,S) conj(Y)) = Z_S,S Y."""
    symm = blas.get_blas_funcs("hemm" if conj else "symm", (G,))
    if G.flags.f_contiguous:
        return symm(1, G, Y, side=0, lower=1)
    if conj:
        return np.conj(symm(1, G.T, np.conj(Y), side=0, lower=0))
    return symm(1, G.T, Y, side=0, lower=0)


def _store(Z, batch, pivots, kind, Zkk, ZSk, ZkS_t):
    """Write a batch's blocks into the panels of Z: the diagonal blocks and the rows
    below, their columns (and a symmetric kind's rows) back from the order of the
    interchanges inside the blocks (Z[lperm[i], lperm[j]] = Z~[i, j]); LU's Z_k,Sᵀ into
    Zᵀ's panels."""
    W, S = batch.W, batch.S
    if batch.ks.size == 1:
        _store_one(Z, batch, pivots, kind, Zkk[0], ZSk, ZkS_t)
        return
    plain = np.broadcast_to(np.arange(W), (batch.ks.size, W))
    cols = plain
    if kind.local_pivots:
        first = np.where(batch.col_ok, batch.fc[:, None] + plain, 0)
        cols = np.where(batch.col_ok, pivots.lperm[first] - batch.fc[:, None], 0)
    rows_kk = cols if kind.symmetric else plain
    m = batch.m[:, None, None]
    base = batch.off[:, None, None]
    index = base + cols[:, None, :] * m + rows_kk[:, :, None]
    valid = batch.col_ok[:, :, None] & batch.col_ok[:, None, :]
    Z[index[valid]] = Zkk[valid]
    if ZSk is None:
        return
    below = batch.w[:, None, None] + np.arange(S)[None, :, None]
    valid = batch.row_ok[:, :, None] & batch.col_ok[:, None, :]
    Z[(base + cols[:, None, :] * m + below)[valid]] = ZSk[valid]
    if ZkS_t is not None:
        Z[(batch.st.uoff + base + plain[:, None, :] * m + below)[valid]] = ZkS_t[valid]


def _store_one(Z, batch, pivots, kind, Zkk, ZSk, ZkS_t):
    """:func:`_store` for a batch of one cblk: through views of its panels."""
    w, m, off = int(batch.w[0]), int(batch.m[0]), int(batch.off[0])
    s = m - w
    panel = Z[off : off + m * w].reshape(w, m).T
    Zkk = Zkk[:w, :w]
    if kind.local_pivots:
        fc = int(batch.fc[0])
        lp = pivots.lperm[fc : fc + w] - fc
        if kind.symmetric:
            panel[lp[:, None], lp[None, :]] = Zkk
        else:
            panel[:w, lp] = Zkk
        if ZSk is not None:
            panel[w:, lp] = ZSk[0, :s, :w]
    else:
        panel[:w] = Zkk
        if ZSk is not None:
            panel[w:] = ZSk[0, :s, :w]
    if ZkS_t is not None:
        uoff = batch.st.uoff + off
        Z[uoff : uoff + m * w].reshape(w, m).T[w:] = ZkS_t[0, :s, :w]


def _diagonal_by_solves(solver, columns):
    """A⁻¹[j, j] for the given columns, by solves with the factors (no refinement, as
    the selected inverse's other entries), :data:`SOLVE_BLOCK` columns at a time."""
    n = solver.n
    out = np.empty(columns.size, dtype=solver.dtype)
    for start in range(0, columns.size, SOLVE_BLOCK):
        cols = columns[start : start + SOLVE_BLOCK]
        E = np.zeros((n, cols.size), dtype=solver.dtype)
        E[cols, np.arange(cols.size)] = 1
        X = solver.apply_inverse(E, "N")
        out[start : start + cols.size] = X[cols, np.arange(cols.size)]
    return out
