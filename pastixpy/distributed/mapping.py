"""Which rank owns which cblk: proportional mapping of the block tree (Pothen and Sun;
PaStiX's blend).

Every node of the cblk tree gets a range of ranks: the roots share all of them, and a
node's children share its range in proportion to the work of their subtrees, a child
worth half a rank or more a range of whole ranks, the lighter ones packed one rank
each, heaviest first onto the least loaded. A node whose range is one rank belongs to
it with its whole subtree: each rank owns whole subtrees, none waiting for another
rank's cblks. The nodes above, whose ranges span several ranks (the top separators,
which the analysis cuts into several cblks), are placed once the subtrees are: each
separator's cblks in contiguous runs over its ranks, sized to even the loads out (a
run sends its sums to the next rank once, where cblks dealt out in turn would wait
for each other at every step), or, where a few heavy cblks make runs uneven, dealt out
one by one to the least loaded rank. The updates between ranks are those of the top
of the tree.
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
    first = np.zeros(ncblk, dtype=np.int64)
    last = np.zeros(ncblk, dtype=np.int64)
    _share(np.flatnonzero(parent < 0), 0, ranks - 1, subtree, first, last)
    for k in range(ncblk - 1, -1, -1):  # parents before their children
        if not children[k]:
            continue
        kids = np.array(children[k])
        if first[k] == last[k] or kids.shape[0] == 1:
            first[kids], last[kids] = first[k], last[k]
        else:
            _share(kids, first[k], last[k], subtree, first, last)
    # The subtrees inside one rank first; then the cblks spanning several ranks.
    owner = first.astype(np.int32)
    alone = first == last
    load = np.bincount(owner[alone], weights=work[alone], minlength=ranks)
    spans = {int(k): (int(first[k]), int(last[k])) for k in np.flatnonzero(~alone)}
    runs = _in_runs(owner.copy(), load.copy(), spans, work)
    dealt = _dealt(owner.copy(), load.copy(), spans, work)
    # Runs unless they leave the ranks much less even than dealing out does (a few
    # heavy cblks at the top of a small problem).
    even = [np.bincount(o, weights=work, minlength=ranks).max() for o in (runs, dealt)]
    return runs if even[0] <= 1.1 * even[1] else dealt


def _share(nodes, lo, hi, subtree, first, last):
    """Give ``nodes`` ranks of ``lo..hi`` in proportion to their subtrees' work: a node
    worth half a rank or more a range of whole ranks, the lighter ones one rank each,
    packed heaviest first onto the least loaded."""
    ranks = hi - lo + 1
    order = sorted(nodes.tolist(), key=lambda k: -subtree[k])
    total = float(subtree[order].sum()) or 1.0
    big = [k for k in order if subtree[k] / total * ranks >= 0.5][:ranks]
    load = np.zeros(ranks)
    if big:
        heavy = float(subtree[big].sum()) or 1.0
        share = np.array([subtree[k] / heavy * ranks for k in big])
        count = np.maximum(1, np.floor(share)).astype(np.int64)
        while count.sum() > ranks:
            count[np.argmax(np.where(count > 1, count - share, -np.inf))] -= 1
        while count.sum() < ranks:  # the largest remainders take the ranks left
            count[np.argmax(share - count)] += 1
        at = 0
        for k, c in zip(big, count.tolist(), strict=True):
            first[k], last[k] = lo + at, lo + at + c - 1
            load[at : at + c] += subtree[k] / c
            at += c
    for k in order[len(big) :]:
        r = int(np.argmin(load))
        first[k] = last[k] = lo + r
        load[r] += subtree[k]


def _in_runs(owner, load, spans, work):
    """Each separator's cblks (consecutive, over the same ranks: ``spans``, each
    cblk's first and last rank) in contiguous runs, the separator's start to the least
    loaded rank."""
    groups = {}
    for k, span in spans.items():
        groups.setdefault(span, []).append(k)
    for (f, g), cblks in sorted(groups.items(), key=lambda item: -work[item[1]].sum()):
        span = np.arange(f, g + 1)
        cblks = sorted(cblks)
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


def _dealt(owner, load, spans, work):
    """The cblks spanning several ranks dealt out one by one, heaviest first, each to
    the least loaded rank of its span."""
    for k in sorted(spans, key=lambda k: -work[k]):
        span = np.arange(spans[k][0], spans[k][1] + 1)
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
