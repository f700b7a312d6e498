"""Permutation helpers: inverse, validation of a user's permutation, the expansion of a
quotient graph's order to its members, and the parity (for determinants' signs).

A permutation ``perm`` lists original indices in pivot order: ``perm[k]`` is the
original index of the k-th pivot; its inverse gives each original index's position.
"""

import numpy as np
import scipy.sparse as sp

from .errors import InvalidInputError


def inverse_permutation(perm):
    """Inverse of a permutation array, as int64."""
    iperm = np.empty_like(perm)
    iperm[perm] = np.arange(perm.size, dtype=perm.dtype)
    return iperm


def check_permutation(p, n, argname="ordering"):
    """Validate a user permutation of range(n) and return it as int64.

    Raises
    ------
    InvalidInputError
        Wrong length, non-integer values, out of range, or a repeated index.
    """
    p = np.asarray(p)
    if p.ndim != 1 or p.shape[0] != n:
        raise InvalidInputError(
            f"{argname} must be a permutation of range({n}) (1-D, length {n}); got shape {p.shape}"
        )
    if p.dtype.kind not in "iu":
        if p.dtype.kind == "f" and np.all(np.isfinite(p)) and np.all(p == np.round(p)):
            p = p.astype(np.int64)
        else:
            raise InvalidInputError(f"{argname} must hold integers, got dtype {p.dtype}")
    p = p.astype(np.int64)
    if n and (p.min() < 0 or p.max() >= n):
        raise InvalidInputError(f"{argname} has values outside range({n})")
    seen = np.bincount(p, minlength=n)
    if n and seen.max() > 1:
        raise InvalidInputError(
            f"{argname} is not a permutation: index {int(np.argmax(seen))} appears "
            f"{int(seen.max())} times and {int(np.sum(seen == 0))} indices are missing"
        )
    return p


def expand_permutation(qperm, groups, ngroups):
    """Order the members of each group consecutively, in the group order ``qperm``."""
    rank = np.empty(ngroups, dtype=np.int64)
    rank[qperm] = np.arange(ngroups, dtype=np.int64)
    return np.argsort(rank[groups], kind="stable").astype(np.int64)


def parity(p):
    """1 if the permutation is odd, 0 if even."""
    n = p.size
    graph = sp.csr_array((np.ones(n), (np.arange(n), p)), shape=(n, n))
    ncycles = sp.csgraph.connected_components(graph, directed=True, connection="weak")[0]
    return (n - ncycles) % 2
