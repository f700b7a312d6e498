"""Ordering phase: a fill-reducing permutation of the graph of A + Aᵀ, and the policy
that chooses it.

Methods (computed in :mod:`pastixpy.ordering_methods`): nested dissection through
METIS (``"metis"``), approximate minimum degree (``"amd"``, our kernel in
``ordering/amd.pyx``), reverse Cuthill-McKee (``"rcm"``), ``"natural"``, or a user
permutation. Before METIS or AMD, vertices with identical closed adjacency (the
unknowns of one node of a multi-dof mesh) are merged into one weighted vertex; the
quotient graph is ordered and expanded.

The policy, here: ``"auto"`` (the default) is AMD on small graphs and, on the others,
AMD or METIS, whichever is forecast to cost less ordering plus factorization time
(:func:`nd_saving`, :func:`forecast_flops`). METIS runs once per balance tolerance in
``ufactor`` (by default a second one, speculatively, where the process may fork and
the factorization is forecast to be long); the caller's ``cost`` (the analysis passes
the factorization's flops) picks the ordering kept. Where the process may fork and no
second run starts, METIS's ``parallel`` option (:data:`METIS_PARALLEL`) has the two
halves of the top separator ordered at the same time, one in a forked child.
"""

import time
from dataclasses import dataclass, field

import numpy as np

from ._graph import farthest_vertex
from .errors import OptionError
from .options import parse_option
from .ordering_methods import (
    amd_perm,
    compress_graph,
    metis_runs,
    metis_split_perm,
    natural_perm,
    parse_ufactors,
    rcm_perm,
)
from .permutation import check_permutation, inverse_permutation
from .runtime import Allowance

#: Accepted ordering names and the parameters each accepts.
ORDERINGS = {
    "auto": {"seed", "compress", "ufactor", "parallel"},
    "metis": {"seed", "compress", "ufactor", "parallel"},
    "amd": {"dense", "aggressive", "compress"},
    "rcm": set(),
    "natural": set(),
}

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

#: ... on graphs of at least this average degree (adjacency entries per vertex). The
#: mesh forecast reads few hops as a high dimension, but on sparser graphs (trees,
#: chains, power networks) few hops mean little fill: a random tree of 20,000 vertices
#: (diameter about 30) was forecast 3·10¹⁰ flops and sent to METIS, where AMD orders it
#: without fill. There AMD runs first, and METIS only where AMD's flops make it pay.
METIS_SURE_MIN_DEGREE = 3.0

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


#: METIS's ``parallel`` option by default. True orders the two halves of the top vertex
#: separator at the same time, one in a forked child, where the process may fork and the
#: graph has :data:`SPLIT_MIN_VERTICES` or more
#: (:func:`pastixpy.ordering_methods.metis_split_perm`); None (the default) does so where
#: it is forecast to pay (:data:`SPLIT_MAX_FLOPS_PER_ENTRY`) and no speculative second
#: run starts; False never. With a second core free the split shortens factorize by
#: about a seventh on 3D Laplacians of 40³-60³ (docs/analysis.md).
METIS_PARALLEL = None

#: The split orders graphs of at least this many vertices (after compression) only: on
#: smaller ones a METIS run takes too little for a fork and a separator to pay, and the
#: hand-made separator costs more fill (a 3D Laplacian 30³: 12% more entries in L than
#: METIS's own nested dissection; 40³: 3.5%).
SPLIT_MIN_VERTICES = 50_000

#: Where ``parallel`` is None, the split is made when nested dissection's forecast flops
#: (:func:`forecast_flops`) are at most this many per entry of the graph's adjacency. The
#: split's separator (an edge bisection's cut covered) costs 2-7% more flops than
#: METIS's own on 3D meshes, and the halves ordered at once save about 45% of a METIS
#: run: that pays where the factorization is short beside the ordering (3D Laplacians up
#: to 60³: forecast 4e4 and 1.4e5 per entry), not where it is long (elasticity: 6e6;
#: 80³, where the speculative second run starts instead: 3e5).
SPLIT_MAX_FLOPS_PER_ENTRY = 2e5


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


def order(xadj, adjncy, ordering="auto", pairs=None, *, cost=None, allowance=None):
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
        METIS's ``parallel`` (:data:`METIS_PARALLEL`) orders the two halves of the
        top separator at the same time, one in a forked child, in place of the
        second run.
    pairs : (m, 2) int64 array, optional
        Vertices METIS and AMD order as one (2x2 pivots); see
        :func:`pastixpy.ordering_methods.keep_pairs_adjacent`.
    cost : callable, optional
        ``cost(perm)`` of a candidate permutation (the first of equals wins).
        Without it, only the first ``ufactor`` is used.
    allowance : pastixpy.runtime.Allowance, optional
        What this process may do (default: one core, no fork). Where it may fork, up
        to :attr:`~pastixpy.runtime.Allowance.children` METIS runs after the first
        go to forked child processes while this process runs the first
        (:func:`pastixpy.ordering_methods.metis_runs`).

    Returns
    -------
    Ordering
    """
    n = xadj.shape[0] - 1
    if not isinstance(ordering, (str, tuple)):
        return Ordering(check_permutation(ordering, n), "user", n)
    name, kwargs = parse_option(ordering, ORDERINGS, "ordering")
    allowance = Allowance.process(1) if allowance is None else allowance
    t0 = time.perf_counter()
    if name == "natural":
        return Ordering(natural_perm(n), name, n, {"order": 0.0})
    if name == "rcm":
        return Ordering(rcm_perm(xadj, adjncy), name, n, {"order": time.perf_counter() - t0})
    # METIS and AMD order the quotient graph of indistinguishable vertices.
    compress = kwargs.pop("compress", True)
    metis = _MetisRequest(
        seed=kwargs.get("seed", 0),
        ufactors=parse_ufactors(kwargs.get("ufactor", METIS_UFACTORS)),
        explicit="ufactor" in kwargs,
        parallel=_parse_parallel(kwargs.get("parallel", METIS_PARALLEL)),
    )
    graph = compress_graph(xadj, adjncy, pairs, compress)
    clock = _Clock(t0, time.perf_counter())
    amd_kwargs = {k: v for k, v in kwargs.items() if k in ORDERINGS["amd"]}
    if name == "amd" or graph.empty:
        return Ordering(amd_perm(graph, **amd_kwargs), "amd", graph.nv, clock.seconds())
    if name == "metis":
        return _metis(graph, metis, cost, allowance, clock)
    return _auto(graph, amd_kwargs, metis, cost, allowance, clock)


@dataclass(frozen=True)
class _MetisRequest:
    """METIS's parameters as asked: ``explicit`` when the caller gave ``ufactor``;
    ``parallel``, whether the halves of the top separator are ordered at once (True,
    False, or None: where :func:`_split_pays`)."""

    seed: object
    ufactors: tuple
    explicit: bool
    parallel: bool | None = None


def _parse_parallel(value):
    """METIS's ``parallel`` option: True, False or None."""
    if value is not None and not isinstance(value, (bool, np.bool_)):
        raise OptionError(
            f"METIS's parallel must be True, False or None, got {value!r}: True orders the "
            "two halves of the top separator at the same time where the process may fork, "
            "None where that is forecast to pay"
        )
    return None if value is None else bool(value)


def _split_pays(graph, diameter):
    """Whether ordering the top separator's halves at once is forecast to save more
    ordering time than the factorization loses to the hand-made separator
    (:data:`SPLIT_MAX_FLOPS_PER_ENTRY`)."""
    flops = forecast_flops(graph.xadj, graph.adjncy, graph.n, diameter)
    return flops <= SPLIT_MAX_FLOPS_PER_ENTRY * graph.adjncy.size


@dataclass(frozen=True)
class _Clock:
    """Start of the ordering and end of the graph compression."""

    start: float
    compressed: float

    def seconds(self):
        """:attr:`Ordering.seconds`: ``compress``, and ``order`` until now."""
        now = time.perf_counter()
        return {"compress": self.compressed - self.start, "order": now - self.compressed}


def _auto(graph, amd_kwargs, metis, cost, allowance, clock):
    """``"auto"`` on a graph with edges: AMD on small graphs; on larger ones METIS at once
    where nested dissection surely pays (:data:`METIS_SURE`), else AMD first, then
    METIS only where its forecast saving exceeds a METIS run's cost, AMD's ordering
    remaining a candidate. Without ``cost``, METIS on larger graphs."""
    if graph.nv <= AUTO_AMD_MAX:
        return Ordering(amd_perm(graph, **amd_kwargs), "amd", graph.nv, clock.seconds())
    if cost is None:
        return _metis(graph, metis, cost, allowance, clock)
    diameter = pseudo_diameter(graph.xadj, graph.adjncy)
    saving = nd_saving(graph.xadj, graph.adjncy, diameter)
    nd_flops = forecast_flops(graph.xadj, graph.adjncy, graph.n, diameter)
    metis_seconds = METIS_SECONDS_PER_ENTRY * graph.adjncy.size
    meshlike = graph.adjncy.size >= METIS_SURE_MIN_DEGREE * graph.nv
    if meshlike and nd_flops * saving / (1 - saving) / FACTOR_RATE >= METIS_SURE * metis_seconds:
        return _metis(graph, metis, cost, allowance, clock, diameter)
    perm = amd_perm(graph, **amd_kwargs)
    flops = cost(perm)
    if flops * saving / FACTOR_RATE <= metis_seconds:
        return Ordering(perm, "amd", graph.nv, clock.seconds(), (({"method": "amd"}, flops),))
    return _metis(graph, metis, cost, allowance, clock, diameter, (perm, flops))


def _metis(graph, metis, cost, allowance, clock, diameter=None, amd=None):
    """METIS on a graph with edges, on the ufactors asked for or, by default, on
    :data:`METIS_UFACTORS` as the second run's rules allow, and the cheapest ordering
    kept (``amd``: AMD's ordering and its cost, from ``"auto"``, among the candidates)."""
    seed, ufactors = int(metis.seed), metis.ufactors
    if diameter is None and allowance.children >= 1 and graph.nv >= SPLIT_MIN_VERTICES:
        diameter = pseudo_diameter(graph.xadj, graph.adjncy)  # once, for both forecasts
    if metis.parallel and metis.explicit and len(ufactors) > 1:
        raise OptionError(
            "METIS's parallel=True takes one ufactor (the second core orders a half, not "
            f"another candidate), got {ufactors}"
        )
    split = metis.parallel is not False and allowance.children >= 1
    split = split and graph.nv >= SPLIT_MIN_VERTICES
    speculate = (
        metis.parallel is not True
        and allowance.may_fork
        and cost is not None
        and not metis.explicit
        and graph.nv >= METIS_SECOND_RUN_MIN_VERTICES
        and forecast_flops(graph.xadj, graph.adjncy, graph.n, diameter)
        >= METIS_SECOND_RUN_FLOPS / 2
    )
    if cost is None or not (metis.explicit or speculate):
        ufactors = ufactors[:1]
    split = split and len(ufactors) == 1
    if split and metis.parallel is None:
        split = _split_pays(graph, diameter)
    # Runs the user asked for are all made; a speculative one that failed in its child
    # (out of memory, most likely) is dropped, not made again here.
    if split:
        perm = metis_split_perm(graph, seed, ufactors[0], allowance.children)
        perms, costs, done = [perm], [], [0]
    else:
        perms, costs, done = metis_runs(
            graph,
            seed,
            ufactors,
            cost,
            allowance.children,
            min_cost=0 if metis.explicit else METIS_SECOND_RUN_FLOPS,
            redo=metis.explicit,
        )
    if amd is not None and not costs:  # AMD ran first: it stays a candidate
        costs = [cost(perms[0])]
    seconds = clock.seconds()
    if amd is None and len(costs) < 2:
        return Ordering(perms[0], "metis", graph.nv, seconds)
    candidates = tuple(
        ({"seed": seed, "ufactor": ufactors[i]}, c) for i, c in zip(done, costs, strict=True)
    )
    if amd is None:
        return Ordering(perms[int(np.argmin(costs))], "metis", graph.nv, seconds, candidates)
    perm, flops = amd
    candidates = (({"method": "amd"}, flops),) + candidates
    best = int(np.argmin(costs))
    if flops < costs[best]:
        return Ordering(perm, "amd", graph.nv, seconds, candidates)
    return Ordering(perms[best], "metis", graph.nv, seconds, candidates)


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
