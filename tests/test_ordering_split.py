"""Nested dissection split at the top separator, its halves ordered at the same time:
the vertex separator (METIS's edge bisection, its cut covered), the permutation, and the
ordering policy's ``parallel`` option."""

import itertools
import os

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pastixpy
from pastixpy import ordering, ordering_methods
from pastixpy.gallery import elasticity3d, laplacian
from pastixpy.ordering_methods import (
    SEPARATORS,
    _cut_cover,
    compress_graph,
    induced_subgraph,
    metis_perm,
    metis_split_perm,
    vertex_separator,
)

from conftest import random_pattern


def _graph(A):
    """The int64 adjacency of A + Aᵀ without the diagonal, as the ordering gets it."""
    from pastixpy._graph import symmetric_adjacency

    C = sp.csc_array(A)
    C.sort_indices()
    n = C.shape[0]
    return symmetric_adjacency(n, C.indptr.astype(np.int64), C.indices.astype(np.int64))


def _edges(xadj, adjncy):
    src = np.repeat(np.arange(xadj.size - 1), np.diff(xadj))
    return src, adjncy


def _assert_separates(xadj, adjncy, side):
    src, dst = _edges(xadj, adjncy)
    assert set(np.unique(side)) <= {0, 1, 2}
    joined = ((side[src] == 0) & (side[dst] == 1)) | ((side[src] == 1) & (side[dst] == 0))
    assert not joined.any()


def _min_cover_size(src, dst):
    """Brute force: the fewest endpoints that touch every edge."""
    edges = {(min(a, b), max(a, b)) for a, b in zip(src.tolist(), dst.tolist(), strict=True)}
    ends = sorted({v for e in edges for v in e})
    for k in range(len(ends) + 1):
        for chosen in itertools.combinations(ends, k):
            c = set(chosen)
            if all(a in c or b in c for a, b in edges):
                return k
    raise AssertionError("unreachable")


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(n=st.integers(2, 60), density=st.floats(0.0, 0.3), seed=st.integers(0, 2**32 - 1))
def test_separator_separates_random_graphs(n, density, seed):
    xadj, adjncy = _graph(random_pattern(n, density, seed, symmetric=True))
    for how in SEPARATORS:
        side = vertex_separator(xadj, adjncy, None, 0, 200, how)
        assert side.shape == (n,)
        _assert_separates(xadj, adjncy, side)
        assert np.array_equal(side, vertex_separator(xadj, adjncy, None, 0, 200, how))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(n=st.integers(2, 14), density=st.floats(0.05, 0.5), seed=st.integers(0, 2**32 - 1))
def test_cut_cover_is_a_minimum_vertex_cover(n, density, seed):
    # Any bipartition: the cover touches every cut edge with as few vertices as can.
    xadj, adjncy = _graph(random_pattern(n, density, seed, symmetric=True))
    side = np.random.default_rng(seed).integers(0, 2, n).astype(np.int8)
    src, dst = _edges(xadj, adjncy)
    cut = side[src] != side[dst]
    if not cut.any():
        return
    cover = _cut_cover(src[cut], dst[cut], side, n)
    assert np.unique(cover).size == cover.size
    chosen = np.zeros(n, dtype=bool)
    chosen[cover] = True
    assert (chosen[src[cut]] | chosen[dst[cut]]).all()
    assert cover.size == _min_cover_size(src[cut], dst[cut])


@pytest.mark.parametrize("shape", [(30, 30), (12, 12, 12), (40, 5, 3)])
def test_separator_of_a_grid_is_small(shape):
    xadj, adjncy = _graph(laplacian(shape))
    for how in SEPARATORS:
        side = vertex_separator(xadj, adjncy, None, 0, 200, how)
        _assert_separates(xadj, adjncy, side)
        n = np.prod(shape)
        # A plane across the grid (its smallest cross-section), with some slack.
        assert (side == 2).sum() <= 1.5 * n / max(shape)
        assert min((side == 0).sum(), (side == 1).sum()) >= 0.35 * n


def test_induced_subgraph_keeps_the_edges_inside():
    A = laplacian((6, 5))
    xadj, adjncy = _graph(A)
    keep = np.random.default_rng(3).random(30) < 0.6
    sxadj, sadjncy, vertices = induced_subgraph(xadj, adjncy, keep)
    dense = (A != 0).toarray()
    np.fill_diagonal(dense, False)
    sub = np.zeros((vertices.size, vertices.size), dtype=bool)
    src, dst = _edges(sxadj, sadjncy)
    sub[src, dst] = True
    assert np.array_equal(vertices, np.flatnonzero(keep))
    assert np.array_equal(sub, dense[np.ix_(vertices, vertices)])


def _split_graph(A):
    return compress_graph(*_graph(A))


@pytest.mark.parametrize(
    "make",
    [lambda: laplacian((14, 14, 14)), lambda: elasticity3d((5, 5, 5)), lambda: laplacian((40, 40))],
)
def test_split_permutation_is_valid_deterministic_and_fork_free_of_effect(make):
    A = make()
    graph = _split_graph(A)
    forked = metis_split_perm(graph, 0, 200, children=1)
    assert np.array_equal(np.sort(forked), np.arange(A.shape[0]))
    assert np.array_equal(forked, metis_split_perm(graph, 0, 200, children=1))
    assert np.array_equal(forked, metis_split_perm(graph, 0, 200, children=0))
    # Nested dissection's: the separator comes last, then the halves each in METIS's order.
    side = vertex_separator(graph.xadj, graph.adjncy, graph.weights, 0, 200)
    qside = side[graph.groups[forked]]
    assert np.all(np.diff(qside) >= 0)


def test_split_fill_is_close_to_metis():
    A = laplacian((16, 16, 16))
    xadj, adjncy = _graph(A)
    graph = _split_graph(A)
    whole = pastixpy.analysis.elimination_tree(xadj, adjncy, metis_perm(xadj, adjncy, None, 0, 200))
    split = pastixpy.analysis.elimination_tree(xadj, adjncy, metis_split_perm(graph, 0, 200))
    assert split.flops < 1.3 * whole.flops


def test_split_orders_empty_and_edgeless_halves():
    # Two disconnected cliques: the cut is empty, the separator too; a star: one side
    # may be a single vertex.
    blocks = sp.block_diag([np.ones((5, 5)), np.ones((6, 6))], format="csc")
    star = sp.lil_array((9, 9))
    star[0, :] = 1
    star[:, 0] = 1
    star.setdiag(1)
    for A in (blocks, sp.csc_array(star)):
        graph = _split_graph(A)
        perm = metis_split_perm(graph, 0, 200)
        assert np.array_equal(np.sort(perm), np.arange(A.shape[0]))


def _recording(monkeypatch):
    started = []
    fork_child = ordering_methods.fork_child

    def recording(work):
        started.append(True)
        return fork_child(work)

    monkeypatch.setattr(ordering_methods, "fork_child", recording)
    return started


PARALLEL = ("metis", {"parallel": True})


def test_parallel_splits_on_two_cores_only(monkeypatch):
    monkeypatch.setattr(ordering, "SPLIT_MIN_VERTICES", 0)
    A = laplacian((14, 14, 14))
    started = _recording(monkeypatch)
    one = pastixpy.analyze(A, ordering="metis", threads=1)
    # One core: the same METIS run, bit for bit, whatever parallel says.
    for parallel in (True, False, None):
        an = pastixpy.analyze(A, ordering=("metis", {"parallel": parallel}), threads=1)
        assert np.array_equal(an.perm, one.perm)
    assert started == []
    two = pastixpy.analyze(A, ordering=PARALLEL, threads=2)
    assert started == [True]
    assert np.array_equal(two.ordering.perm, metis_split_perm(_split_graph(A), 0, 200))
    assert np.array_equal(two.perm, pastixpy.analyze(A, ordering=PARALLEL, threads=2).perm)
    assert two.ordering.method == "metis" and two.stats["ordering_candidates"] == []
    two.check()
    off = pastixpy.analyze(A, ordering=("metis", {"parallel": False}), threads=2)
    assert np.array_equal(off.perm, one.perm)


def test_parallel_default_splits_where_the_forecast_says(monkeypatch):
    monkeypatch.setattr(ordering, "SPLIT_MIN_VERTICES", 0)
    A = laplacian((14, 14, 14))
    started = _recording(monkeypatch)
    # False leaves the split off.
    monkeypatch.setattr(ordering, "METIS_PARALLEL", False)
    off = pastixpy.analyze(A, ordering="metis", threads=2)
    assert started == []
    assert np.array_equal(off.perm, pastixpy.analyze(A, ordering="metis", threads=1).perm)
    # The default (None) splits where the forecast says it pays.
    monkeypatch.undo()
    monkeypatch.setattr(ordering, "SPLIT_MIN_VERTICES", 0)
    started = _recording(monkeypatch)
    assert ordering.METIS_PARALLEL is None
    split = pastixpy.analyze(A, ordering="metis", threads=2)
    assert started == [True]
    assert np.array_equal(split.perm, pastixpy.analyze(A, ordering=PARALLEL, threads=2).perm)
    monkeypatch.setattr(ordering, "SPLIT_MAX_FLOPS_PER_ENTRY", 0)
    whole = pastixpy.analyze(A, ordering="metis", threads=2)
    assert np.array_equal(whole.perm, pastixpy.analyze(A, ordering="metis", threads=1).perm)
    # Not below the size limit.
    monkeypatch.setattr(ordering, "SPLIT_MAX_FLOPS_PER_ENTRY", 1e30)
    monkeypatch.setattr(ordering, "SPLIT_MIN_VERTICES", A.shape[0] + 1)
    small = pastixpy.analyze(A, ordering="metis", threads=2)
    assert np.array_equal(small.perm, whole.perm)


def test_parallel_falls_back_to_this_process_when_fork_fails(monkeypatch):
    monkeypatch.setattr(ordering, "SPLIT_MIN_VERTICES", 0)
    A = laplacian((14, 14, 14))
    forked = pastixpy.analyze(A, ordering=PARALLEL, threads=2)

    def no_fork(work):
        raise OSError(11, "Resource temporarily unavailable")

    monkeypatch.setattr(ordering_methods, "fork_child", no_fork)
    assert np.array_equal(pastixpy.analyze(A, ordering=PARALLEL, threads=2).perm, forked.perm)


def test_a_failed_half_is_ordered_in_the_parent(monkeypatch):
    monkeypatch.setattr(ordering, "SPLIT_MIN_VERTICES", 0)
    A = laplacian((14, 14, 14))
    forked = pastixpy.analyze(A, ordering=PARALLEL, threads=2)
    parent, metis = os.getpid(), ordering_methods.metis_perm

    def fails_in_child(*args):
        if os.getpid() != parent:
            os._exit(3)
        return metis(*args)

    monkeypatch.setattr(ordering_methods, "metis_perm", fails_in_child)
    assert np.array_equal(pastixpy.analyze(A, ordering=PARALLEL, threads=2).perm, forked.perm)


def test_parallel_on_weighted_graphs_and_with_auto(monkeypatch):
    monkeypatch.setattr(ordering, "SPLIT_MIN_VERTICES", 0)
    A = elasticity3d((6, 6, 6))  # three unknowns a node: a compressed, weighted graph
    an = pastixpy.analyze(A, ordering=PARALLEL, threads=2)
    an.check()
    assert np.array_equal(an.ordering.perm, metis_split_perm(_split_graph(A), 0, 200))
    # "auto" passes the option on where it picks METIS.
    monkeypatch.setattr(ordering, "AUTO_AMD_MAX", 0)
    monkeypatch.setattr(ordering, "METIS_SURE", 0)
    auto = pastixpy.analyze(A, ordering=("auto", {"parallel": True}), threads=2)
    assert auto.ordering.method == "metis" and np.array_equal(auto.perm, an.perm)


@pytest.mark.parametrize("bad", ["yes", 1, 0.5])
def test_parallel_must_be_a_bool_or_none(bad):
    with pytest.raises(pastixpy.OptionError, match="parallel"):
        pastixpy.analyze(laplacian((10, 10)), ordering=("metis", {"parallel": bad}))


def test_parallel_takes_one_ufactor():
    with pytest.raises(pastixpy.OptionError, match="one ufactor"):
        pastixpy.analyze(
            laplacian((10, 10)), ordering=("metis", {"parallel": True, "ufactor": (200, 400)})
        )


def test_separator_kind_is_checked():
    xadj, adjncy = _graph(laplacian((5, 5)))
    with pytest.raises(pastixpy.OptionError, match="separator"):
        vertex_separator(xadj, adjncy, None, 0, 200, "halves")
