"""Which rank owns which cblk: proportional mapping of the block tree (Pothen and Sun;
PaStiX's blend).

Every node of the cblk tree gets an interval of "rank space", [a, b) within
[0, ranks): the roots share [0, ranks) in proportion to the work of their subtrees,
and each node's children share its interval the same way. A node whose interval lies
inside one rank belongs to it with its whole subtree; the nodes above, whose
intervals span several ranks (the top separators, cut into several cblks by the
analysis), go one by one, heaviest first, to the least loaded rank of their span once
the subtrees are placed. So each rank owns
whole subtrees at the bottom and a share of the separators above them, and the
updates between ranks are those of the top of the tree.
"""

import numpy as np


def cblk_work(layout):
    """Estimated flops of each cblk's factorization and updates: w³/3 for its diagonal
    block, w m² for the panel below (m its rows below the block, w its width)."""
    w = np.diff(layout.fcol).astype(np.float64)
    below = layout.stride.astype(np.float64) - w
    return w**3 / 3 + w * below * (below + w)


def proportional_mapping(layout, ranks, work=None):
    """The owner of each cblk (int32 array) for ``ranks`` ranks.

    Parameters
    ----------
    layout : PanelLayout
        The block structure (its ``parent`` tree: cblks in postorder).
    ranks : int
    work : ndarray, optional
        Work of each cblk (default :func:`cblk_work`).

    Returns
    -------
    ndarray of int32
    """
    if ranks < 1:
        raise ValueError(f"ranks must be >= 1, got {ranks}")
    ncblk = layout.ncblk
    if ranks == 1:
        return np.zeros(ncblk, dtype=np.int32)
    work = cblk_work(layout) if work is None else np.asarray(work, dtype=np.float64)
    parent = layout.parent
    subtree = work.copy()
    for k in range(ncblk):  # postorder: children before their parent
        if parent[k] >= 0:
            subtree[parent[k]] += subtree[k]
    children = [[] for _ in range(ncblk)]
    for k in range(ncblk):
        if parent[k] >= 0:
            children[parent[k]].append(k)
    lo = np.zeros(ncblk)
    hi = np.zeros(ncblk)
    _share(np.flatnonzero(parent < 0), 0.0, float(ranks), subtree, lo, hi)
    for k in range(ncblk - 1, -1, -1):  # parents before their children
        if children[k]:
            _share(np.array(children[k]), lo[k], hi[k], subtree, lo, hi)
    first = np.minimum(np.floor(lo + 1e-9).astype(np.int64), ranks - 1)
    last = np.maximum(first, np.minimum(np.ceil(hi - 1e-9).astype(np.int64) - 1, ranks - 1))
    # The subtrees inside one rank first; then the cblks spanning several ranks.
    owner = first.astype(np.int32)
    alone = first == last
    load = np.bincount(owner[alone], weights=work[alone], minlength=ranks)
    runs = _in_runs(owner.copy(), load.copy(), first, last, work)
    dealt = _dealt(owner.copy(), load.copy(), first, last, work)
    # Runs unless they leave the ranks much less even than dealing out does (a few
    # heavy cblks at the top of a small problem).
    even = [np.bincount(o, weights=work, minlength=ranks).max() for o in (runs, dealt)]
    return runs if even[0] <= 1.1 * even[1] else dealt


def _in_runs(owner, load, first, last, work):
    """Each separator's cblks (consecutive, spanning the same ranks) in contiguous runs,
    the separator's start to the least loaded rank: each cblk of a separator updates
    the next ones, and a run on one rank sends its sums to the next rank once, where
    cblks dealt out in turn would wait for each other at every step."""
    spans = {}
    for k in np.flatnonzero(first < last):
        spans.setdefault((int(first[k]), int(last[k])), []).append(int(k))
    for (f, g), cblks in sorted(spans.items(), key=lambda item: -work[item[1]].sum()):
        span = np.arange(f, g + 1)
        quota = _fill(load[span], float(work[cblks].sum()))
        by_load = np.argsort(load[span], kind="stable")  # the least loaded first
        bounds = np.cumsum(quota[by_load])
        at, done = 0, 0.0
        for k in cblks:  # ascending
            while at < len(span) - 1 and done + 0.5 * work[k] > bounds[at]:
                at += 1
            owner[k] = span[by_load[at]]
            load[owner[k]] += work[k]
            done += work[k]
    return owner


def _dealt(owner, load, first, last, work):
    """The cblks spanning several ranks dealt out one by one, heaviest first, each to
    the least loaded rank of its span."""
    for k in sorted(np.flatnonzero(first < last), key=lambda k: -work[k]):
        span = np.arange(first[k], last[k] + 1)
        owner[k] = span[np.argmin(load[span])]
        load[owner[k]] += work[k]
    return owner


def _fill(load, total):
    """How much of ``total`` each rank takes so that their loads end as even as they can
    (water-filling)."""
    levels = np.sort(load)
    for i in range(len(levels), 0, -1):
        top = (total + levels[:i].sum()) / i
        if top >= levels[i - 1]:
            return np.maximum(top - load, 0.0)
    return np.zeros_like(load)


def _share(nodes, a, b, subtree, lo, hi):
    """Split [a, b) among ``nodes`` in proportion to their subtrees' work."""
    total = float(subtree[nodes].sum())
    at = a
    for k in nodes:
        width = (b - a) * (subtree[k] / total if total > 0 else 1.0 / len(nodes))
        lo[k], hi[k] = at, at + width
        at += width
