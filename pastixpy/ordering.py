"""Ordering phase: a fill-reducing permutation of the graph of A + Aᵀ.

Methods: nested dissection through METIS (``"metis"``), approximate minimum
degree (``"amd"``, our kernel in ``ordering/amd.pyx``), reverse Cuthill-McKee
(``"rcm"``), ``"natural"``, or a user permutation; ``"auto"`` (the default) is
AMD on small graphs and, on the others, AMD or METIS, whichever is forecast to cost less
ordering plus factorization time. Before METIS or AMD, vertices
with identical closed adjacency (the unknowns of one node of a multi-dof mesh)
are merged into one weighted vertex; the quotient graph is ordered and expanded.
METIS runs once per balance tolerance in ``ufactor``; the caller's ``cost``
(the analysis passes the factorization's flops) picks the ordering kept.
"""

import os
import signal
import sys
import time
import warnings
from dataclasses import dataclass, field
from numbers import Integral

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components, reverse_cuthill_mckee

from ._graph import farthest_vertex, indistinguishable_groups, quotient_adjacency
from .errors import InvalidInputError, OptionError
from .options import parse_option
from .permutation import check_permutation, expand_permutation, inverse_permutation

#: Accepted ordering names and the parameters each accepts.
ORDERINGS = {
    "auto": {"seed", "compress", "ufactor"},
    "metis": {"seed", "compress", "ufactor"},
    "amd": {"dense", "aggressive", "compress"},
    "rcm": set(),
    "natural": set(),
}

#: Compress the graph when it shrinks at least this much (METIS uses the same fraction).
COMPRESSION_FRACTION = 0.85

#: ``"auto"`` orders graphs of at most this many vertices (after compression) with AMD:
#: below it, METIS costs several times AMD's time (more than the whole factorization of
#: a small grid) for a fill within about 1.3x of AMD's.
AUTO_AMD_MAX = 5000

#: Above :data:`AUTO_AMD_MAX`, ``"auto"`` orders with AMD first and keeps its ordering
#: unless nested dissection is forecast (:func:`forecast_flops`) to save more time in the
#: factorization, at this rate (flops per second, a conservative one-thread figure for
#: mid-sized factorizations here), than a METIS run costs (these seconds per entry of
#: the graph's adjacency, measured on 2D and 3D meshes). 2D meshes and small 3D ones
#: then keep AMD (METIS cost more than the whole factorization); large 3D ones go on to
#: METIS, AMD's ordering remaining a candidate.
FACTOR_RATE = 1e10
METIS_SECONDS_PER_ENTRY = 1e-6

#: ``"auto"`` skips AMD and runs METIS at once where nested dissection's forecast saving
#: over AMD (its flops by :func:`forecast_flops`, AMD's taken as those over one minus
#: :func:`nd_saving`) is at least this many METIS runs: AMD would be ordered, costed and
#: dropped (3D meshes of 40³ and more, elasticity). Closer calls run AMD first as above.
METIS_SURE = 4.0

#: METIS's separator balance tolerances (``ufactor``: parts may differ by x/1000) tried by
#: default. 200 is METIS's own default; 400 lets the refinement find smaller separators on
#: meshes: 7-12% fewer flops on 3D Laplacians of 60³ and 80³, 17% on a 2D one, but 5-15%
#: more on elasticity and on real matrices of the SuiteSparse collection, hence both.
METIS_UFACTORS = (200, 400)

#: With the default ``ufactor``, the second METIS run starts alongside the first only
#: when it can run on another core, the graph has this many vertices (after
#: compression) and its factorization is forecast (:func:`forecast_flops`) to take at
#: least half of :data:`METIS_SECOND_RUN_FLOPS`. The two runs share the memory bus, so
#: the first takes somewhat longer, which graphs quick to factor do not win back (see
#: docs/analysis.md).
METIS_SECOND_RUN_MIN_VERTICES = 100_000

#: ... and the second run counts only if the first ordering's factorization takes at
#: least this many flops; otherwise it is stopped. Waiting for it costs about a fifth
#: of a METIS run, which the 7-12% fewer flops it may bring repay on factorizations
#: this large and not on smaller ones.
METIS_SECOND_RUN_FLOPS = 5e11


@dataclass(frozen=True)
class Ordering:
    """Result of the ordering phase.

    Attributes
    ----------
    perm : ndarray of int64
        ``perm[k]`` is the original index of the k-th pivot.
    method : str
        ``"metis"``, ``"amd"``, ``"rcm"``, ``"natural"`` or ``"user"`` (``"auto"``
        resolved to the method it chose).
    n_ordered : int
        Vertices of the graph that was ordered: fewer than n when indistinguishable
        vertices were compressed.
    seconds : dict
        Time spent in ``compress`` and ``order`` (wall-clock: with candidates
        ordered in parallel, less than their sum).
    candidates : tuple of (dict, float)
        The METIS runs compared, each as its parameters and its ``cost``; empty
        when there was one ordering only.
    """

    perm: np.ndarray
    method: str
    n_ordered: int
    seconds: dict = field(default_factory=dict)
    candidates: tuple = ()

    @property
    def iperm(self):
        """Inverse permutation: ``iperm[i]`` is the pivot position of original index i."""
        return inverse_permutation(self.perm)


def order(xadj, adjncy, ordering="auto", pairs=None, *, cost=None, threads=1):
    """Compute a fill-reducing ordering of a symmetric graph.

    Parameters
    ----------
    xadj, adjncy : int64 arrays
        Adjacency of the pattern of A + Aᵀ without the diagonal.
    ordering : str, (str, dict) or array_like
        A method name, a ``(name, {kwargs})`` pair, or a permutation array.
        ``"auto"`` takes METIS's keyword arguments and uses them when it picks
        METIS (graphs of more than :data:`AUTO_AMD_MAX` vertices). METIS's
        ``ufactor`` is one balance tolerance or several, all run and the
        cheapest kept. By default, :data:`METIS_UFACTORS`: the second only
        on another core, for graphs of :data:`METIS_SECOND_RUN_MIN_VERTICES`
        or more whose factorization is forecast to be long, and kept in view
        only if the first ordering costs at least :data:`METIS_SECOND_RUN_FLOPS`.
    pairs : (m, 2) int64 array, optional
        Vertices METIS and AMD order as one (2x2 pivots); see :func:`keep_pairs_adjacent`.
    cost : callable, optional
        ``cost(perm)`` of a candidate permutation (the first of equals wins).
        Without it, only the first ``ufactor`` is used.
    threads : int
        Cores for the METIS runs. With two or more (on Linux), the runs after the
        first go to forked child processes while this process runs the first:
        pymetis holds the GIL, and METIS seeds libc's one random generator, so
        threads would run one after another and mix their random streams.

    Returns
    -------
    Ordering
    """
    n = xadj.shape[0] - 1
    if not isinstance(ordering, (str, tuple)):
        return Ordering(check_permutation(ordering, n), "user", n)
    name, kwargs = parse_option(ordering, ORDERINGS, "ordering")
    t0 = time.perf_counter()
    if name == "natural":
        return Ordering(np.arange(n, dtype=np.int64), name, n, {"order": 0.0})
    if name == "rcm":
        graph = sp.csr_array((np.ones(adjncy.size, dtype=np.int8), adjncy, xadj), shape=(n, n))
        perm = reverse_cuthill_mckee(graph, symmetric_mode=True).astype(np.int64)
        return Ordering(perm, name, n, {"order": time.perf_counter() - t0})

    # METIS and AMD order the quotient graph of indistinguishable vertices.
    groups, ngroups = indistinguishable_groups(n, xadj, adjncy)
    compress = kwargs.pop("compress", True)
    explicit = "ufactor" in kwargs
    ufactors = _ufactors(kwargs.pop("ufactor", METIS_UFACTORS))
    if pairs is not None and pairs.size:
        groups, ngroups = _merge_groups(groups, ngroups, pairs)
    if (compress and ngroups <= COMPRESSION_FRACTION * n) or pairs is not None:
        qxadj, qadjncy, weights = quotient_graph(xadj, adjncy, groups, ngroups)
    else:
        groups, ngroups = np.arange(n, dtype=np.int64), n
        qxadj, qadjncy, weights = xadj, adjncy, None
    t1 = time.perf_counter()
    amd_first = name == "auto" and ngroups > AUTO_AMD_MAX and cost is not None
    diameter = None
    if amd_first and qadjncy.size:
        diameter = pseudo_diameter(qxadj, qadjncy)
        saving = nd_saving(qxadj, qadjncy, diameter)
        nd_flops = forecast_flops(qxadj, qadjncy, n, diameter)
        metis_seconds = METIS_SECONDS_PER_ENTRY * qadjncy.size
        amd_first = nd_flops * saving / (1 - saving) / FACTOR_RATE < METIS_SURE * metis_seconds
    if name == "auto" and not amd_first:
        name = "amd" if ngroups <= AUTO_AMD_MAX or qadjncy.size == 0 else "metis"
    if name in ("amd", "auto") or qadjncy.size == 0:
        from ._amd import amd_order

        amd_kwargs = {k: v for k, v in kwargs.items() if k in ORDERINGS["amd"]}
        qperm = amd_order(qxadj, qadjncy, ngroups, weights=weights, **amd_kwargs)
        perm = expand_permutation(qperm, groups, ngroups)
        if not amd_first or qadjncy.size == 0:
            seconds = {"compress": t1 - t0, "order": time.perf_counter() - t1}
            return Ordering(perm, "amd", ngroups, seconds)
        # "auto" on a large graph: AMD's ordering is kept unless nested dissection is
        # forecast to save more factorization time than a METIS run costs.
        amd_flops = cost(perm)
        saving = amd_flops * nd_saving(qxadj, qadjncy, diameter) / FACTOR_RATE
        if saving <= METIS_SECONDS_PER_ENTRY * qadjncy.size:
            seconds = {"compress": t1 - t0, "order": time.perf_counter() - t1}
            return Ordering(perm, "amd", ngroups, seconds, (({"method": "amd"}, amd_flops),))
        name = "metis"
    else:
        perm = amd_flops = None
    seed = int(kwargs.get("seed", 0))
    concurrent = threads > 1 and sys.platform.startswith("linux")
    speculate = (
        concurrent
        and cost is not None
        and not explicit
        and ngroups >= METIS_SECOND_RUN_MIN_VERTICES
        and forecast_flops(qxadj, qadjncy, n, diameter) >= METIS_SECOND_RUN_FLOPS / 2
    )
    if cost is None or not (explicit or speculate):
        ufactors = ufactors[:1]

    def run(ufactor):
        qperm = _metis(qxadj, qadjncy, weights, seed, ufactor)
        return expand_permutation(qperm, groups, ngroups)

    import pymetis  # noqa: F401  (imported before any fork: the children only call it)

    children = threads - 1 if concurrent else 0
    min_cost = 0 if explicit else METIS_SECOND_RUN_FLOPS
    # Runs the user asked for are all made; a speculative one that failed in its child
    # (out of memory, most likely) is dropped, not made again here.
    perms, costs, done = _cheapest_runs(run, ufactors, cost, children, min_cost, explicit)
    if amd_flops is not None and not costs:  # "auto" ran AMD first: it stays a candidate
        costs = [cost(perms[0])]
    seconds = {"compress": t1 - t0, "order": time.perf_counter() - t1}
    if len(costs) < 2 and amd_flops is None:
        return Ordering(perms[0], name, ngroups, seconds)
    candidates = tuple(
        ({"seed": seed, "ufactor": ufactors[i]}, c) for i, c in zip(done, costs, strict=True)
    )
    if amd_flops is not None:
        best = int(np.argmin(costs))
        if amd_flops < costs[best]:
            return Ordering(
                perm, "amd", ngroups, seconds, (({"method": "amd"}, amd_flops),) + candidates
            )
        return Ordering(
            perms[best], name, ngroups, seconds, (({"method": "amd"}, amd_flops),) + candidates
        )
    return Ordering(perms[int(np.argmin(costs))], name, ngroups, seconds, candidates)


def pseudo_diameter(xadj, adjncy):
    """A graph's pseudo-diameter: two breadth-first searches, from vertex 0 and from the
    farthest vertex found (tens of milliseconds on 10⁶ vertices)."""
    xadj = np.ascontiguousarray(xadj, dtype=np.int64)
    adjncy = np.ascontiguousarray(adjncy, dtype=np.int64)
    nv = xadj.shape[0] - 1
    if nv == 0:
        return 0
    far, _ = farthest_vertex(nv, xadj, adjncy, 0)
    return farthest_vertex(nv, xadj, adjncy, far)[1]


def nd_saving(xadj, adjncy, diameter=None):
    """The fraction of AMD's factorization flops nested dissection is expected to save
    on this graph, from its dimension log(vertices) / log(pseudo-diameter): a quarter
    on 2D meshes, 60% on 3D ones (and on graphs of few hops, whose "dimension" is high),
    linearly between (AMD's flops over METIS's: 1.0-1.3 on 2D Laplacians 100² to 1000²
    and Helmholtz, 1.7-2.7 on 3D Laplacians 25³ to 60³). ``diameter``: the graph's
    :func:`pseudo_diameter`, when known."""
    nv = xadj.shape[0] - 1
    if nv < 2:
        return 0.0
    if diameter is None:
        diameter = pseudo_diameter(xadj, adjncy)
    dimension = np.log(nv) / np.log(max(diameter, 2))
    # Hop counts on grids run along the axes: a 2D m x m mesh measures about 1.75, a 3D
    # m³ mesh 2.2 to 2.45 (7-point; 27-point stencils measure near 3).
    return float(np.interp(dimension, [1.9, 2.2], [0.25, 0.6]))


#: Nested dissection's factorization flops over (n / D)³ on meshes of n vertices and
#: (pseudo-)diameter D, whose separators have about n / D vertices: 101-135 on 2D and
#: 3D Laplacians (1000², 60³ to 80³, a 200 x 200 x 8 slab) and 2D Helmholtz 500²; 350 on
#: a 20 x 20 x 400 channel, 51 on a random graph, 6 on 3D elasticity (27 neighbours).
ND_FLOPS_PER_CUBE = 100


def forecast_flops(xadj, adjncy, n, diameter=None):
    """A forecast of nested dissection's flops on a mesh-like graph, before ordering it:
    :data:`ND_FLOPS_PER_CUBE` (n / D)³ for ``n`` unknowns (the graph may be a quotient
    graph) and the graph's pseudo-diameter D (two breadth-first searches, from vertex 0
    and from the farthest vertex found; tens of milliseconds on 10⁶ vertices).

    Accurate within about 3x on meshes; above the flops of graphs with more neighbours
    or fewer hops (elasticity, random graphs: no harm where it only starts a run or
    skips AMD for METIS). ``diameter``: the graph's :func:`pseudo_diameter`, when known.
    """
    if xadj.shape[0] <= 1:
        return 0.0
    if diameter is None:
        diameter = pseudo_diameter(xadj, adjncy)
    return ND_FLOPS_PER_CUBE * (n / max(diameter, 1)) ** 3


#: Largest ``ufactor`` accepted: from 1000 on (a part twice the other) METIS's nested
#: dissection did not finish on a 40³ grid; 999 took a hundred times the flops there.
MAX_UFACTOR = 999


def _ufactors(value):
    """METIS's ``ufactor`` option as a tuple of ints in 1..MAX_UFACTOR."""
    values = (value,) if isinstance(value, Integral) else value
    try:
        values = tuple(values)
    except TypeError:
        values = ()
    if not values or not all(
        isinstance(u, Integral) and not isinstance(u, bool) and 0 < u <= MAX_UFACTOR for u in values
    ):
        raise OptionError(
            f"METIS's ufactor must be an integer in 1..{MAX_UFACTOR} or a sequence of them, "
            f"got {value!r}; 200 is METIS's default, 100-600 the useful range (from 1000 on "
            "METIS's nested dissection may not finish)"
        )
    return tuple(int(u) for u in values)


def _metis(xadj, adjncy, weights, seed, ufactor):
    """METIS's nested-dissection permutation of one (possibly weighted) graph."""
    import pymetis

    options = pymetis.Options(seed=seed, ufactor=ufactor)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        perm, _ = pymetis.nested_dissection(
            pymetis.CSRAdjacency(xadj, adjncy), vweights=weights, options=options
        )
    return np.asarray(perm, dtype=np.int64)


def _cheapest_runs(run, ufactors, cost, children, min_cost, redo=True):
    """``run(u)`` for each ufactor and the ``cost`` of each result: the first run here
    while up to ``children`` others run in forked processes (see :func:`order`). The
    others count only if the first costs at least ``min_cost`` (then, with ``redo``, a
    child that failed or had no process is run here; without, it is left out); else
    the children are stopped. Returns the permutations, their costs and the indices
    of their ufactors."""
    started = {}
    try:
        for i in range(1, min(children + 1, len(ufactors))):
            try:
                started[i] = _start_child(lambda u=ufactors[i]: run(u))
            except OSError:  # no process to spare (limits, memory)
                break
        perms = [run(ufactors[0])]
        costs = [cost(perms[0])] if len(ufactors) > 1 else []
        if not costs or costs[0] < min_cost:
            return perms, costs, [0]
        done = [0]
        for i, u in enumerate(ufactors[1:], start=1):
            perm = started.pop(i).wait() if i in started else None
            if perm is None or perm.size != perms[0].size:
                if not redo:
                    continue
                perm = run(u)
            perms.append(perm)
            costs.append(cost(perm))
            done.append(i)
        return perms, costs, done
    finally:
        for child in started.values():
            child.kill()


class _Child:
    """A forked process computing an int64 array, sent back through a pipe."""

    def __init__(self, pid, pipe):
        self.pid, self.pipe = pid, pipe

    def wait(self):
        """The array, or None if the child failed."""
        try:
            with os.fdopen(self.pipe, "rb") as pipe:
                data = pipe.read()
        except BaseException:  # Ctrl-C while waiting: do not wait for METIS to finish
            os.kill(self.pid, signal.SIGKILL)
            raise
        finally:
            _, status = os.waitpid(self.pid, 0)
        ok = status == 0 and len(data) % 8 == 0
        return np.frombuffer(data, dtype=np.int64) if ok else None

    def kill(self):
        """Stop a child that will not be waited for (an exception in the parent)."""
        os.kill(self.pid, signal.SIGKILL)
        os.close(self.pipe)
        os.waitpid(self.pid, 0)


def _start_child(compute):
    """Fork a child that writes ``compute()``'s int64 array to a pipe and exits."""
    read_fd, write_fd = os.pipe()
    try:
        with warnings.catch_warnings():
            # Python 3.12+ warns on fork with threads alive (BLAS, OpenMP pools): the child
            # runs METIS's C code and writes to the pipe, touching no lock those threads hold.
            warnings.simplefilter("ignore", DeprecationWarning)
            pid = os.fork()
    except OSError:
        os.close(read_fd)
        os.close(write_fd)
        raise
    if pid == 0:
        status = 1
        try:
            os.close(read_fd)
            data = memoryview(np.ascontiguousarray(compute(), dtype=np.int64)).cast("B")
            while data:
                data = data[os.write(write_fd, data) :]
            status = 0
        finally:
            os._exit(status)
    os.close(write_fd)
    return _Child(pid, read_fd)


def _merge_groups(groups, ngroups, pairs):
    """Groups joined wherever a pair links two of them (connected components)."""
    links = sp.coo_array(
        (np.ones(pairs.shape[0], dtype=np.int8), (groups[pairs[:, 0]], groups[pairs[:, 1]])),
        shape=(ngroups, ngroups),
    )
    ncomp, label = connected_components(links, directed=False)
    return label[groups].astype(np.int64), ncomp


def quotient_graph(xadj, adjncy, groups, ngroups):
    """Graph whose vertices are the groups, weighted by their sizes."""
    weights = np.bincount(groups, minlength=ngroups).astype(np.int64)
    members = np.argsort(groups, kind="stable").astype(np.int64)
    mptr = np.zeros(ngroups + 1, dtype=np.int64)
    np.cumsum(weights, out=mptr[1:])
    qxadj, qadjncy = quotient_adjacency(ngroups, xadj, adjncy, groups, members, mptr)
    return qxadj, qadjncy, weights


def check_pairs(pairs, n, xadj, adjncy):
    """Validate 2x2 pivot pairs: an (m, 2) int array of adjacent, distinct, unshared vertices."""
    pairs = np.asarray(pairs)
    if pairs.size == 0:
        return np.empty((0, 2), dtype=np.int64)
    if pairs.ndim != 2 or pairs.shape[1] != 2 or pairs.dtype.kind not in "iu":
        raise InvalidInputError(f"pairs must be an (m, 2) integer array, got shape {pairs.shape}")
    pairs = pairs.astype(np.int64)
    if pairs.min() < 0 or pairs.max() >= n:
        raise InvalidInputError(f"pairs hold an index outside 0..{n - 1}")
    if np.unique(pairs).size != pairs.size:
        raise InvalidInputError("pairs must not share a vertex or pair a vertex with itself")
    graph = sp.csr_array((np.ones(adjncy.size, dtype=bool), adjncy, xadj), shape=(n, n))
    apart = ~np.asarray(graph[pairs[:, 0], pairs[:, 1]]).ravel().astype(bool)
    if apart.any():
        a, b = pairs[np.argmax(apart)]
        raise InvalidInputError(
            f"pair ({a}, {b}) is not an entry of A: only coupled unknowns can form a 2x2 pivot"
        )
    return pairs


def keep_pairs_adjacent(perm, pairs):
    """Move each pair's earlier vertex next to the later one, so both pivot together.

    Every other vertex keeps its relative order; since a pair is coupled, the
    earlier vertex's elimination-tree parent becomes the later one.
    """
    pos = inverse_permutation(perm)
    key = pos.copy()
    later = np.maximum(pos[pairs[:, 0]], pos[pairs[:, 1]])
    key[pairs[:, 0]] = later
    key[pairs[:, 1]] = later
    return perm[np.lexsort((pos[perm], key[perm]))]
