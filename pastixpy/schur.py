"""The analysis of a Schur complement factorization: the chosen unknowns ordered last,
as one cblk the numeric phase updates but does not factor.

With ``schur=idx`` the factorization eliminates every other unknown and leaves, in the
last cblk's diagonal block, S = A₂₂ − A₂₁ A₁₁⁻¹ A₁₂ on ``idx`` (PaStiX and MUMPS do the
same): S comes out of the updates the other cblks send it, not from ``len(idx)`` solves.
This module holds what the analysis needs for that: the index set checked
(:func:`check_schur`), the other unknowns ordered alone and ``idx`` appended in the order
given (:func:`schur_ordering`, :func:`schur_last`), and the partition that makes ``idx``
one cblk (:func:`schur_partition`).
"""

import numpy as np
import scipy.sparse as sp

from .errors import InvalidInputError, OptionError


def check_schur(schur, n=None):
    """``schur`` as an int64 array of distinct indices in ``0..n-1`` (its order kept), or
    None when it is None; without ``n``, everything but the upper bound is checked.

    Raises
    ------
    InvalidInputError
        Not a one-dimensional integer array, empty, an index out of range or repeated.
    """
    if schur is None:
        return None
    idx = np.asarray(schur)
    if idx.ndim != 1 or (idx.size and idx.dtype.kind not in "iu"):
        raise InvalidInputError(
            f"schur must be a one-dimensional array of unknown indices, got shape {idx.shape} "
            f"and dtype {idx.dtype}"
        )
    if idx.size == 0:
        raise InvalidInputError("schur is empty: give the unknowns to keep, or leave it out")
    idx = idx.astype(np.int64)
    bad = np.flatnonzero((idx < 0) | (idx >= (idx.max() + 1 if n is None else n)))
    if bad.size:
        raise InvalidInputError(
            f"schur[{int(bad[0])}] = {int(idx[bad[0]])} is not an unknown of a matrix with "
            f"{n} columns (0..{n - 1})"
            if n is not None
            else f"schur[{int(bad[0])}] = {int(idx[bad[0]])} is negative"
        )
    order = np.argsort(idx, kind="stable")
    twice = np.flatnonzero(idx[order][1:] == idx[order][:-1])
    if twice.size:
        i = int(order[twice[0] + 1])
        raise InvalidInputError(f"schur[{i}] = {int(idx[i])} repeats an index: give each once")
    return idx


def interior_graph(xadj, adjncy, schur):
    """The graph of the unknowns not in ``schur`` (induced subgraph) and their indices."""
    n = xadj.shape[0] - 1
    inside = np.ones(n, dtype=bool)
    inside[schur] = False
    keep = np.flatnonzero(inside)
    G = sp.csr_array((np.ones(adjncy.size, dtype=np.int8), adjncy, xadj), shape=(n, n))
    H = G[keep][:, keep].tocsr()
    H.sort_indices()
    return H.indptr.astype(np.int64), H.indices.astype(np.int64), keep


def interior_ordering(ordering, schur, n):
    """A user's permutation of all n unknowns as one of the interior graph (the Schur
    unknowns dropped, the others' relative order kept); other orderings unchanged."""
    if isinstance(ordering, (str, tuple)):
        return ordering
    perm = np.asarray(ordering)
    if perm.shape != (n,):
        raise InvalidInputError(
            f"ordering must be a permutation of the {n} unknowns, got shape {perm.shape}"
        )
    inside = np.ones(n, dtype=bool)
    inside[schur] = False
    local = np.cumsum(inside) - 1
    perm = perm.astype(np.int64)
    if np.any((perm < 0) | (perm >= n)):
        raise InvalidInputError("ordering holds an index outside 0..n-1")
    return local[perm[inside[perm]]]


def schur_last(interior_perm, keep, schur):
    """The full permutation: the interior unknowns (``keep``, ordered by
    ``interior_perm``) first, then ``schur`` in the order given."""
    return np.concatenate([keep[interior_perm], schur]).astype(np.int64)


def postorder_then_schur(tree_perm, schur):
    """A postordered permutation with the Schur unknowns moved to the end in the order
    given, every other unknown keeping its place in the postorder.

    Still a topological order of the elimination tree: the Schur unknowns were last,
    so their ancestors are Schur unknowns too; and every subtree without a Schur
    unknown stays contiguous.
    """
    n = tree_perm.shape[0]
    is_schur = np.zeros(n, dtype=bool)
    is_schur[schur] = True
    return np.concatenate([tree_perm[~is_schur[tree_perm]], schur]).astype(np.int64)


def schur_partition(fcol, n, size):
    """The cblk partition ``fcol`` with the last ``size`` columns as one cblk of their
    own (the columns before keep their cblks, cut at the boundary)."""
    first = n - size
    return np.concatenate([fcol[fcol < first], [first, n]]).astype(np.int64)


def check_schur_options(*, compress=None, mixed=False, comm=None):
    """An OptionError for what a Schur complement factorization does not combine with."""
    if compress is not None:
        raise OptionError(
            "schur= does not combine with compress=: the Schur complement is returned "
            "dense; factor without compression"
        )
    if mixed:
        raise OptionError(
            "schur= does not combine with factors in a lower precision than the matrix "
            "(precision='mixed' or 'single' on a double matrix): the Schur complement "
            "would carry single precision's roundoff; use precision='auto' or 'double'"
        )
    if comm is not None:
        raise OptionError(
            "schur= is not available with comm= (a distributed factorization): factor "
            "in one process"
        )
