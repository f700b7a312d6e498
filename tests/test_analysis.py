"""Analysis phase: exact fill against brute force, invariants, statistics, orderings."""

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pastixpy
from pastixpy.gallery import laplacian, vector_laplacian
from pastixpy.kinds import KINDS

from conftest import (
    GENERATED,
    brute_force_nnz_L,
    elimination_game_nnz_L,
    load_shared,
    random_pattern,
    shared_params,
)

ORDERINGS = ["metis", "amd", "rcm", "natural"]

STAT_KEYS = {
    "n",
    "nnz_A",
    "nnz_L",
    "nnz_L_stored",
    "flops",
    "n_cblk",
    "n_blok",
    "tree_height",
    "memory_bytes",
    "seconds",
}


@pytest.mark.parametrize("ordering", ORDERINGS)
@pytest.mark.parametrize("case", sorted(GENERATED))
def test_generated_nnz_L_matches_brute_force(case, ordering):
    A = GENERATED[case]()
    an = pastixpy.analyze(A, ordering=ordering)
    an.check()
    assert an.stats["nnz_L"] == brute_force_nnz_L(A, an.perm)
    assert an.stats["nnz_L_stored"] >= an.stats["nnz_L"]


@pytest.mark.parametrize("name", shared_params())
def test_shared_matrix_analysis(name):
    A = load_shared(name)
    an = pastixpy.analyze(A)
    an.check()
    assert an.stats["nnz_L"] == brute_force_nnz_L(A, an.perm)
    assert STAT_KEYS <= set(an.stats)


@pytest.mark.parametrize("name", ["west0479", "young4c", "mhd1280b"])
@pytest.mark.parametrize("ordering", ["amd", "rcm", "natural"])
def test_shared_matrix_other_orderings(name, ordering):
    A = load_shared(name)
    an = pastixpy.analyze(A, ordering=ordering)
    an.check()
    assert an.stats["nnz_L"] == brute_force_nnz_L(A, an.perm)


def test_brute_force_references_agree():
    A = random_pattern(40, 0.08, seed=1)
    perm = np.random.default_rng(2).permutation(40)
    assert brute_force_nnz_L(A, perm) == elimination_game_nnz_L(A, perm)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    n=st.integers(1, 45),
    density=st.floats(0.0, 0.3),
    seed=st.integers(0, 2**32 - 1),
    ordering=st.sampled_from(ORDERINGS + ["random"]),
    symmetric=st.booleans(),
)
def test_random_patterns(n, density, seed, ordering, symmetric):
    A = random_pattern(n, density, seed, symmetric=symmetric)
    if ordering == "random":
        ordering = np.random.default_rng(seed).permutation(n)
    an = pastixpy.analyze(A, ordering=ordering, split=(2, 3))
    an.check()
    assert an.stats["nnz_L"] == elimination_game_nnz_L(A, an.perm)
    assert sorted(an.perm.tolist()) == list(range(n))
    assert np.array_equal(an.perm[an.iperm], np.arange(n))


def test_user_permutation_is_kept_up_to_postorder():
    A = laplacian((9, 9))
    p = np.random.default_rng(0).permutation(81)
    an = pastixpy.analyze(A, ordering=p)
    assert an.ordering.method == "user"
    assert np.array_equal(an.ordering.perm, p)
    # Postordering is fill-equivalent.
    assert an.stats["nnz_L"] == brute_force_nnz_L(A, p)


def test_disconnected_graph_and_isolated_vertices():
    blocks = [laplacian((6, 6)), sp.eye_array(3), laplacian((4, 3, 2)), sp.csc_array([[5.0]])]
    A = sp.block_diag(blocks, format="csc")
    for ordering in ORDERINGS:
        an = pastixpy.analyze(A, ordering=ordering)
        an.check()
        assert an.stats["nnz_L"] == brute_force_nnz_L(A, an.perm)


def test_one_by_one():
    an = pastixpy.analyze(sp.csc_array([[3.0]]))
    an.check()
    assert an.stats["nnz_L"] == 1 and an.stats["n_cblk"] == 1


def test_graph_compression_of_multidof_problem():
    A = vector_laplacian((8, 8, 8), dofs=3)
    an = pastixpy.analyze(A, ordering="metis")
    an.check()
    assert an.stats["n_ordered"] == 8**3
    # The unknowns of one node stay consecutive.
    nodes = an.perm // 3
    assert np.all(nodes.reshape(-1, 3) == nodes[::3, None])
    plain = pastixpy.analyze(A, ordering=("metis", {"compress": False}))
    assert plain.stats["n_ordered"] == A.shape[0]
    assert an.stats["nnz_L"] <= 1.1 * plain.stats["nnz_L"]


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 60), st.integers(1, 60), st.floats(0.0, 0.4), st.integers(0, 2**31 - 1))
def test_quotient_graph_joins_the_neighbours_of_each_group(n, ngroups, density, seed):
    from pastixpy.matrix import canonical_csc, symmetric_pattern
    from pastixpy.ordering_methods import quotient_graph

    rng = np.random.default_rng(seed)
    A = sp.random_array((n, n), density=density, rng=rng, format="csc") + sp.eye_array(n)
    xadj, adjncy = symmetric_pattern(canonical_csc(A))
    groups = rng.integers(0, ngroups, n)
    qxadj, qadjncy, weights = quotient_graph(xadj, adjncy, groups, ngroups)
    # Reference: G ~ H when some member of G has a neighbour in H, G != H (dense).
    adj = np.zeros((n, n), dtype=bool)
    adj[np.repeat(np.arange(n), np.diff(xadj)), adjncy] = True
    member = np.zeros((ngroups, n), dtype=bool)
    member[groups, np.arange(n)] = True
    quotient = (member.astype(int) @ adj.astype(int) @ member.T.astype(int)) > 0
    np.fill_diagonal(quotient, False)
    got = np.zeros((ngroups, ngroups), dtype=bool)
    got[np.repeat(np.arange(ngroups), np.diff(qxadj)), qadjncy] = True
    assert np.array_equal(got, quotient)
    assert all(np.all(np.diff(qadjncy[qxadj[g] : qxadj[g + 1]]) > 0) for g in range(ngroups))
    assert np.array_equal(weights, np.bincount(groups, minlength=ngroups))


def test_quotient_adjacency_rejects_bad_groupings():
    from pastixpy._graph import quotient_adjacency

    xadj, adjncy = np.array([0, 1, 2]), np.array([1, 0])
    ok = (np.array([0, 1]), np.array([0, 1]), np.array([0, 1, 2]))
    assert quotient_adjacency(2, xadj, adjncy, *ok)[1].tolist() == [1, 0]
    for groups, members, mptr, message in [
        ([0, 5], [0, 1], [0, 1, 2], "not in range"),
        ([0, 1], [0, 7], [0, 1, 2], "not a vertex"),
        ([0, 1], [0, 1], [0, 2, 1, 2], "must not decrease"),
        ([0, 1], [0, 1], [0, 1, 2, 1], "do not describe"),
    ]:
        arrays = (np.array(a, dtype=np.int64) for a in (groups, members, mptr))
        with pytest.raises(ValueError, match=message):
            quotient_adjacency(len(mptr) - 1, xadj, adjncy, *arrays)


def test_unsymmetric_pattern_uses_a_plus_at():
    A = sp.csc_array(np.triu(np.ones((6, 6))) + np.eye(6))
    an = pastixpy.analyze(A, ordering="natural")
    assert an.kind == "lu"
    assert an.stats["nnz_L"] == 21  # the symmetrized pattern is dense


def test_kind_auto_and_memory_forecast():
    A = laplacian((10, 10))
    an = pastixpy.analyze(A)
    assert an.kind == "llt"
    stored = an.stats["nnz_L_stored"]
    assert an.stats["memory_bytes"] == 8 * stored
    assert an.memory_forecast("complex128", kind="lu") == 2 * 16 * stored
    assert pastixpy.analyze(A, kind="lu").stats["memory_bytes"] == 16 * stored
    assert an.stats["memory_bytes_by_dtype"]["float32"] == 4 * stored


def test_flops_count():
    A = laplacian((30,))
    an = pastixpy.analyze(A, ordering="natural")
    # Tridiagonal: n - 1 columns with 2 entries, the last with 1.
    assert an.stats["flops"] == 4 * 29 + 1


def test_split_limits_panel_width():
    A = laplacian((12, 12, 12))
    an = pastixpy.analyze(A, split=(16, 32))
    assert an.symbol.cblk_width.max() <= 32
    whole = pastixpy.analyze(A, split=None)
    assert whole.symbol.cblk_width.max() > 32
    assert an.stats["nnz_L"] == whole.stats["nnz_L"]
    an.check()


@pytest.mark.parametrize("kind", ["llt", "ldlt", "lu"])
def test_auto_split_panel_widths_follow_the_kind(kind):
    # One dense supernode of 600 columns: cut into panels within the kind's limits.
    A = sp.csc_matrix(np.ones((600, 600)) + 600 * np.eye(600))
    an = pastixpy.analyze(A, ordering="natural", kind=kind)
    low, high = KINDS[kind].split
    widths = an.symbol.cblk_width
    assert widths.sum() == 600 and len(widths) > 1
    assert widths.min() >= low and widths.max() <= high
    an.check()


def test_split_must_be_auto_none_or_a_pair():
    with pytest.raises(pastixpy.OptionError, match="split must be"):
        pastixpy.analyze(laplacian((4, 4)), split="wide")


def test_no_amalgamation_gives_fundamental_supernodes():
    A = laplacian((15, 15))
    an = pastixpy.analyze(A, amalgamation=False, split=None)
    assert an.stats["nnz_L_stored"] - an.stats["nnz_L"] == np.sum(
        an.symbol.cblk_width * (an.symbol.cblk_width - 1) // 2
    )
    assert an.stats["amalgamation_zeros"] == 0


def test_separator_tree_of_nested_dissection():
    A = laplacian((31, 31))
    an = pastixpy.analyze(A, ordering="metis")
    ptr, parent = an.separators
    roots = np.flatnonzero(parent == -1)
    assert roots.size == 1
    top = np.arange(ptr[roots[0]], ptr[roots[0] + 1])
    # Removing the top separator disconnects the grid's graph.
    keep = np.setdiff1d(np.arange(A.shape[0]), an.perm[top])
    sub = sp.csc_array(A)[keep][:, keep]
    ncomp, _ = sp.csgraph.connected_components(sub, directed=False)
    assert ncomp >= 2
    assert 20 <= top.size <= 62  # about one grid line
    assert np.all((parent == -1) | (parent > np.arange(parent.size)))


def test_analysis_is_immutable():
    an = pastixpy.analyze(laplacian((5, 5)))
    with pytest.raises(ValueError):
        an.perm[0] = 1
    with pytest.raises(AttributeError):
        an.kind = "lu"


def test_check_detects_corruption():
    an = pastixpy.analyze(laplacian((8, 8)))
    sym = an.symbol
    broken = np.array(sym.blok_lrownum)
    off = np.setdiff1d(np.arange(sym.nblok), sym.cblk_bloknum[:-1])
    broken[off[0]] = sym.blok_frownum[off[0]] - 1
    bad = type(sym)(
        sym.n,
        sym.cblk_fcolnum,
        sym.cblk_lcolnum,
        sym.cblk_bloknum,
        sym.blok_frownum,
        broken,
        sym.blok_lcblknm,
        sym.blok_fcblknm,
    )
    with pytest.raises(pastixpy.PastixError, match="empty or out-of-range"):
        bad.check()
    # Dropping an off-diagonal blok loses entries of A or breaks the closure.
    keep = np.ones(sym.nblok, dtype=bool)
    keep[off[-1]] = False
    owner = sym.blok_lcblknm[off[-1]]
    bloknum = sym.cblk_bloknum.copy()
    bloknum[owner + 1 :] -= 1
    dropped = type(sym)(
        sym.n,
        sym.cblk_fcolnum,
        sym.cblk_lcolnum,
        bloknum,
        sym.blok_frownum[keep],
        sym.blok_lrownum[keep],
        sym.blok_lcblknm[keep],
        sym.blok_fcblknm[keep],
    )
    corrupt = type(an)(an.n, an.kind, an.ordering, an.tree, dropped, an.stats, an.xadj, an.adjncy)
    with pytest.raises(pastixpy.PastixError, match="invariant violated"):
        corrupt.check()


def test_repr_and_stats_seconds():
    an = pastixpy.analyze(laplacian((6, 6)))
    assert "Analysis" in repr(an) and "SymbolMatrix" in repr(an.symbol)
    for step in ("canonicalize", "graph", "ordering", "etree", "supernodes", "blocks", "total"):
        assert an.stats["seconds"][step] >= 0


def test_dense_input_warns():
    with pytest.warns(sp.SparseEfficiencyWarning, match="dense"):
        an = pastixpy.analyze(np.eye(4) * 2)
    assert an.n == 4


def _membership_keys(order, sets, n):
    """Each element's memberships, in set order, as a key that sorts members first."""
    member = np.zeros((n, len(sets)), dtype=bool)
    for s, elems in enumerate(sets):
        member[elems, s] = True
    return [tuple(~member[e]) for e in order]


@settings(max_examples=80, deadline=None)
@given(st.integers(1, 40), st.integers(1, 5), st.integers(0, 12), st.integers(0, 2**31 - 1))
def test_refine_order_sorts_by_membership(n, nclass, nsets, seed):
    from pastixpy._symbolic import refine_order

    rng = np.random.default_rng(seed)
    cls = np.sort(rng.integers(0, nclass, n)).astype(np.int64)
    sets = []
    for _ in range(nsets):
        c = rng.choice(cls)
        members = np.flatnonzero(cls == c)
        sets.append(rng.choice(members, rng.integers(1, members.size + 1), replace=False))
    setptr = np.zeros(nsets + 1, dtype=np.int64)
    setptr[1:] = np.cumsum([s.size for s in sets])
    elems = np.concatenate(sets).astype(np.int64) if sets else np.zeros(0, dtype=np.int64)
    order = refine_order(cls, setptr, elems)
    assert np.array_equal(np.sort(order), np.arange(n))
    assert np.array_equal(cls[order], cls)  # classes keep their ranges
    keys = _membership_keys(order, sets, n)
    for p in range(n - 1):
        if cls[p] == cls[p + 1]:
            assert keys[p] <= keys[p + 1]  # lexicographic: members of earlier sets first


def test_refine_order_makes_nested_sets_intervals():
    from pastixpy._symbolic import refine_order

    # Recursive halves of 0..63 (a laminar family), shuffled into the element names.
    names = np.random.default_rng(3).permutation(64)
    sets = [names[lo : lo + size] for size in (32, 16, 8, 4, 2) for lo in range(0, 64, size)]
    setptr = np.zeros(len(sets) + 1, dtype=np.int64)
    setptr[1:] = np.cumsum([s.size for s in sets])
    order = refine_order(np.zeros(64, dtype=np.int64), setptr, np.concatenate(sets))
    position = np.argsort(order)
    for s in sets:
        p = np.sort(position[s])
        assert p[-1] - p[0] == s.size - 1


@pytest.mark.parametrize("shape", [(30, 30), (12, 12, 12)])
def test_reordering_cuts_bloks_and_keeps_the_fill(shape):
    A = laplacian(shape)
    plain = pastixpy.analyze(A, ordering="metis", reorder=False)
    an = pastixpy.analyze(A, ordering="metis", reorder=True)
    an.check()
    assert an.stats["nnz_L"] == brute_force_nnz_L(A, an.perm)
    assert an.stats["nnz_L"] <= plain.stats["nnz_L"]
    assert an.stats["nnz_L_stored"] == plain.stats["nnz_L_stored"]
    assert an.stats["n_cblk"] == plain.stats["n_cblk"]
    assert an.stats["n_blok"] < 0.8 * plain.stats["n_blok"]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(2, 70), st.floats(0.02, 0.3), st.integers(0, 2**31 - 1))
def test_reordering_random_patterns(n, density, seed):
    A = random_pattern(n, density, seed, symmetric=False)
    plain = pastixpy.analyze(A, reorder=False)
    an = pastixpy.analyze(A, reorder=True)
    an.check()
    assert an.stats["nnz_L"] == brute_force_nnz_L(A, an.perm)
    assert an.stats["nnz_L"] <= plain.stats["nnz_L"]
    assert an.stats["nnz_L_stored"] == plain.stats["nnz_L_stored"]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(2, 60), st.floats(0.0, 0.3), st.integers(0, 2**31 - 1))
def test_reordered_tree_is_the_recounted_one(n, density, seed):
    """reorder_supernodes's tree is the elimination tree of its permutation, recounted,
    or the tree it was given (the same object) where no column moved: a natural order
    on a path moves none."""
    from pastixpy.matrix import canonical_csc, symmetric_pattern
    from pastixpy.symbolic import elimination_tree, reorder_supernodes, supernode_partition

    A = random_pattern(n, density, seed, symmetric=True)
    xadj, adjncy = symmetric_pattern(canonical_csc(A))
    tree = elimination_tree(xadj, adjncy, np.random.default_rng(seed).permutation(n))
    fcol, _ = supernode_partition(tree)
    out = reorder_supernodes(xadj, adjncy, tree, fcol)
    again = elimination_tree(xadj, adjncy, out.perm, keep_order=True)
    for name in ("perm", "parent", "colcount", "sep_ptr", "sep_parent"):
        assert np.array_equal(getattr(out, name), getattr(again, name)), name
    path = sp.diags_array([np.ones(n - 1), np.ones(n), np.ones(n - 1)], offsets=[-1, 0, 1])
    xadj, adjncy = symmetric_pattern(canonical_csc(path))
    tree = elimination_tree(xadj, adjncy, np.arange(n))
    assert reorder_supernodes(xadj, adjncy, tree, supernode_partition(tree)[0]) is tree


def test_auto_ordering_keeps_amd_unless_nested_dissection_pays():
    """Small graphs: AMD. Larger ones: AMD first, then METIS only where nested
    dissection's forecast saving in the factorization exceeds a METIS run's cost, with
    AMD's ordering still a candidate: 2D meshes and small 3D ones keep AMD, large 3D
    meshes go to METIS (and keep its fewer flops)."""
    from pastixpy.ordering import AUTO_AMD_MAX

    small = pastixpy.analyze(laplacian((30, 30)))
    assert small.ordering.method == "amd"
    side = int(np.ceil(np.sqrt(AUTO_AMD_MAX + 1)))
    flat = pastixpy.analyze(laplacian((side, side)), ordering=("auto", {"seed": 1}))
    assert flat.ordering.method == "amd"
    assert [c["method"] for c in flat.stats["ordering_candidates"]] == ["amd"]
    cube = pastixpy.analyze(laplacian((30, 30, 30)), ordering=("auto", {"seed": 1}), threads=1)
    metis = pastixpy.analyze(laplacian((30, 30, 30)), ordering=("metis", {"seed": 1}), threads=1)
    assert cube.ordering.method == "metis" and np.array_equal(cube.perm, metis.perm)
    amd, nd = cube.stats["ordering_candidates"][:2]
    assert amd["method"] == "amd" and nd["flops"] < amd["flops"]


def test_auto_ordering_skips_amd_where_nested_dissection_surely_pays():
    # 40³: the forecast saving is several METIS runs; AMD is not even tried.
    A = laplacian((40, 40, 40))
    cube = pastixpy.analyze(A, ordering=("auto", {"seed": 1}), threads=1)
    metis = pastixpy.analyze(A, ordering=("metis", {"seed": 1}), threads=1)
    assert cube.ordering.method == "metis" and np.array_equal(cube.perm, metis.perm)
    methods = [c.get("method") for c in cube.stats.get("ordering_candidates") or ()]
    assert "amd" not in methods


def test_auto_ordering_keeps_a_tree_to_amd():
    """A random tree has few hops, which the mesh forecast reads as a high dimension,
    but no fill under AMD: "auto" orders it by AMD (no sure METIS run) and L has A's
    lower triangle's entries exactly."""
    from pastixpy.ordering import AUTO_AMD_MAX

    rng = np.random.default_rng(2)
    n = 4 * AUTO_AMD_MAX
    parent = np.array([rng.integers(0, i) for i in range(1, n)])
    T = sp.coo_array((-np.ones(n - 1), (np.arange(1, n), parent)), shape=(n, n))
    T = T + T.T
    A = sp.csc_array(T + sp.diags_array(np.asarray(abs(T).sum(axis=1)).ravel() + 1.0))
    an = pastixpy.analyze(A, threads=1)
    assert an.ordering.method == "amd"
    assert an.stats["nnz_L"] == (A.nnz + n) // 2  # no fill


def test_nd_saving_follows_the_dimension():
    from pastixpy.ordering import nd_saving

    flat, cube = (_adjacency(laplacian(s)) for s in ((100, 100), (22, 22, 22)))
    assert nd_saving(*flat) == pytest.approx(0.25)
    assert nd_saving(*cube) == pytest.approx(0.6)


def test_metis_keeps_the_ufactor_with_the_fewest_flops():
    from pastixpy.ordering import METIS_UFACTORS

    A = laplacian((24, 24, 24))
    an = pastixpy.analyze(A, ordering=("metis", {"ufactor": METIS_UFACTORS}), threads=1)
    tried = an.stats["ordering_candidates"]
    assert [c["ufactor"] for c in tried] == list(METIS_UFACTORS)
    singles = {
        u: pastixpy.analyze(A, ordering=("metis", {"ufactor": u}), threads=1)
        for u in METIS_UFACTORS
    }
    for c in tried:  # each candidate's flops are those of its ordering alone
        single = singles[c["ufactor"]]
        assert single.stats["ordering_candidates"] == []
        assert (
            c["flops"]
            == pastixpy.analysis.elimination_tree(
                an.xadj.astype(np.int64), an.adjncy.astype(np.int64), single.ordering.perm
            ).flops
        )
    best = min(singles.values(), key=lambda s: s.stats["flops"])
    assert np.array_equal(an.ordering.perm, best.ordering.perm)
    assert an.stats["flops"] == min(s.stats["flops"] for s in singles.values())


def test_default_second_metis_run_only_on_another_core_for_costly_orderings(monkeypatch):
    from pastixpy import ordering

    A = laplacian((20, 20, 20))
    both = ("metis", {"ufactor": ordering.METIS_UFACTORS})
    one = pastixpy.analyze(A, ordering="metis", threads=1)  # no core for a second run
    assert one.stats["ordering_candidates"] == []
    first = pastixpy.analyze(A, ordering=("metis", {"ufactor": ordering.METIS_UFACTORS[0]}))
    assert np.array_equal(one.ordering.perm, first.ordering.perm)
    # On two cores: not on a small graph; on a large one the second run starts, but a
    # cheap first ordering does not wait for it.
    small = pastixpy.analyze(A, ordering="metis", threads=2)
    assert small.stats["ordering_candidates"] == []
    assert np.array_equal(small.ordering.perm, first.ordering.perm)
    monkeypatch.setattr(ordering, "METIS_SECOND_RUN_MIN_VERTICES", 0)
    cheap = pastixpy.analyze(A, ordering="metis", threads=2)
    assert cheap.stats["ordering_candidates"] == []
    assert np.array_equal(cheap.ordering.perm, first.ordering.perm)
    monkeypatch.setattr(ordering, "METIS_SECOND_RUN_FLOPS", 0)
    costly = pastixpy.analyze(A, ordering="metis", threads=2)
    serial = pastixpy.analyze(A, ordering=both, threads=1)
    assert costly.stats["ordering_candidates"] == serial.stats["ordering_candidates"]
    assert np.array_equal(costly.ordering.perm, serial.ordering.perm)


def test_farthest_vertex_is_a_breadth_first_search():
    from pastixpy._graph import farthest_vertex

    # A 2D grid: from a corner, the opposite corner at distance (nx - 1) + (ny - 1);
    # from the centre of a path, an end at half its length.
    G = laplacian((7, 5))
    xadj, adjncy = _adjacency(G)
    assert farthest_vertex(35, xadj, adjncy, 0) == (34, 10)
    P = laplacian((9,))
    xadj, adjncy = _adjacency(P)
    far, dist = farthest_vertex(9, xadj, adjncy, 4)
    assert far in (0, 8) and dist == 4
    # Only the source's component: two paths side by side.
    xadj, adjncy = _adjacency(sp.block_diag([P, laplacian((3,))], format="csc"))
    assert farthest_vertex(12, xadj, adjncy, 10) in ((9, 1), (11, 1))
    with pytest.raises(ValueError, match="source"):
        farthest_vertex(12, xadj, adjncy, 12)
    bad = adjncy.copy()
    bad[0] = 99
    with pytest.raises(ValueError, match="out of range"):
        farthest_vertex(12, xadj, bad, 0)


def test_flops_forecast_follows_the_mesh_dimension():
    from pastixpy.ordering import forecast_flops

    def forecast(A):
        return forecast_flops(*_adjacency(A), A.shape[0])

    flat, cube = laplacian((64, 64)), laplacian((16, 16, 16))  # 4096 vertices each
    assert forecast(cube) > 20 * forecast(flat)
    # Within a few times of the flops of the ordering METIS finds.
    for A in (laplacian((200, 200)), laplacian((30, 30, 30))):
        flops = pastixpy.analyze(A, ordering="metis", threads=1).stats["flops"]
        assert flops / 3 < forecast(A) < 3 * flops
    assert forecast_flops(np.zeros(1, dtype=np.int64), np.zeros(0, dtype=np.int64), 0) == 0
    xadj, adjncy = _adjacency(flat)
    narrow = forecast_flops(xadj.astype(np.int32), adjncy.astype(np.int32), flat.shape[0])
    assert narrow == forecast(flat)


def test_second_metis_run_starts_only_for_a_long_forecast(monkeypatch):
    from pastixpy import ordering, ordering_methods

    started = []
    fork_child = ordering_methods.fork_child

    def recording(work):
        started.append(True)
        return fork_child(work)

    monkeypatch.setattr(ordering_methods, "fork_child", recording)
    monkeypatch.setattr(ordering, "METIS_SECOND_RUN_MIN_VERTICES", 0)
    A = laplacian((40, 40))
    forecast = ordering.forecast_flops(*_adjacency(A), A.shape[0])
    monkeypatch.setattr(ordering, "METIS_SECOND_RUN_FLOPS", 2.1 * forecast)
    pastixpy.analyze(A, ordering="metis", threads=2)
    assert started == []
    monkeypatch.setattr(ordering, "METIS_SECOND_RUN_FLOPS", 1.9 * forecast)
    pastixpy.analyze(A, ordering="metis", threads=2)
    assert started == [True]


def _adjacency(A):
    """The int64 adjacency of A + Aᵀ without the diagonal, as the ordering gets it."""
    from pastixpy._graph import symmetric_adjacency

    C = sp.csc_array(A)
    C.sort_indices()
    n = C.shape[0]
    return symmetric_adjacency(n, C.indptr.astype(np.int64), C.indices.astype(np.int64))


def test_metis_candidates_in_child_processes_match_the_serial_ones():
    A = laplacian((20, 20, 20))
    ufactor = ("ufactor", (100, 200, 400))
    serial = pastixpy.analyze(A, ordering=("metis", dict([ufactor])), threads=1)
    assert len(serial.stats["ordering_candidates"]) == 3
    for threads in (2, 3):
        forked = pastixpy.analyze(A, ordering=("metis", dict([ufactor])), threads=threads)
        assert np.array_equal(forked.perm, serial.perm)
        assert forked.stats["ordering_candidates"] == serial.stats["ordering_candidates"]


BOTH = ("metis", {"ufactor": (200, 400)})


def test_a_failed_metis_child_is_redone_in_the_parent(monkeypatch):
    import os

    from pastixpy import ordering_methods

    parent, metis = os.getpid(), ordering_methods.metis_perm

    def fails_in_child(*args):
        if os.getpid() != parent:
            os._exit(3)
        return metis(*args)

    A = laplacian((16, 16, 16))
    serial = pastixpy.analyze(A, ordering=BOTH, threads=1)
    monkeypatch.setattr(ordering_methods, "metis_perm", fails_in_child)
    forked = pastixpy.analyze(A, ordering=BOTH, threads=2)
    assert np.array_equal(forked.perm, serial.perm)
    assert forked.stats["ordering_candidates"] == serial.stats["ordering_candidates"]


def test_a_failed_speculative_metis_child_is_not_redone(monkeypatch):
    """The second METIS run that the analysis starts on its own (a forecast says it may
    pay) is dropped when its child fails, most likely for memory: running it again here
    would double the ordering's time on the way to the same shortage."""
    import os

    from pastixpy import ordering, ordering_methods

    parent, metis = os.getpid(), ordering_methods.metis_perm
    runs_here = []

    def fails_in_child(*args):
        if os.getpid() != parent:
            os._exit(3)
        runs_here.append(args[-1])
        return metis(*args)

    A = laplacian((16, 16, 16))
    monkeypatch.setattr(ordering, "METIS_SECOND_RUN_MIN_VERTICES", 0)
    monkeypatch.setattr(ordering, "METIS_SECOND_RUN_FLOPS", 0)
    monkeypatch.setattr(ordering_methods, "metis_perm", fails_in_child)
    an = pastixpy.analyze(A, ordering="metis", threads=2)
    assert runs_here == [ordering.METIS_UFACTORS[0]]
    assert an.stats["ordering_candidates"] == []
    assert np.array_equal(an.perm, pastixpy.analyze(A, ordering="metis", threads=1).perm)


def test_metis_runs_here_when_no_process_can_be_forked(monkeypatch):
    import os

    def no_fork():
        raise OSError(11, "Resource temporarily unavailable")

    A = laplacian((16, 16, 16))
    serial = pastixpy.analyze(A, ordering=BOTH, threads=1)
    monkeypatch.setattr(os, "fork", no_fork)
    assert np.array_equal(pastixpy.analyze(A, ordering=BOTH, threads=2).perm, serial.perm)


@pytest.mark.parametrize("bad", [0, -5, 1000, 2.5, True, (), (200, "x"), (200, 5000), "400"])
def test_ufactor_must_be_positive_integers(bad):
    with pytest.raises(pastixpy.OptionError, match="ufactor"):
        pastixpy.analyze(laplacian((20, 20, 20)), ordering=("metis", {"ufactor": bad}))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    n=st.integers(1, 45),
    density=st.floats(0.0, 0.3),
    seed=st.integers(0, 2**32 - 1),
    ordering=st.sampled_from(["metis", "amd", "random"]),
)
def test_renumbered_pattern_gives_the_same_analysis(n, density, seed, ordering):
    # Large graphs are read from a copy renumbered in pivot order, small ones through
    # the permutation: both must give the exact fill and the same structure.
    from pastixpy import symbolic

    A = random_pattern(n, density, seed)
    if ordering == "random":
        ordering = np.random.default_rng(seed).permutation(n)
    direct = pastixpy.analyze(A, ordering=ordering, reorder=True, split=(2, 3))
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(symbolic, "PERMUTE_MIN_VERTICES", 0)
        copied = pastixpy.analyze(A, ordering=ordering, reorder=True, split=(2, 3))
    copied.check()
    assert copied.stats["nnz_L"] == elimination_game_nnz_L(A, copied.perm)
    for name in ("perm", "parent", "colcount", "sep_ptr", "sep_parent"):
        assert np.array_equal(getattr(direct.tree, name), getattr(copied.tree, name)), name
    for name in ("cblk_fcolnum", "cblk_bloknum", "blok_frownum", "blok_lrownum", "blok_fcblknm"):
        assert np.array_equal(getattr(direct.symbol, name), getattr(copied.symbol, name)), name


def test_permuted_graph_is_the_permuted_pattern():
    from pastixpy import _symbolic
    from pastixpy.permutation import inverse_permutation

    A = random_pattern(60, 0.1, seed=3, symmetric=True)
    xadj, adjncy = _adjacency(A)
    perm = np.random.default_rng(4).permutation(60).astype(np.int64)
    px, pa = _symbolic.permuted_graph(60, xadj, adjncy, perm, inverse_permutation(perm))
    G = sp.csr_array((np.ones(adjncy.size), adjncy, xadj), shape=(60, 60))
    reference = G[perm][:, perm].toarray() != 0
    got = sp.csr_array((np.ones(pa.size), pa, px), shape=(60, 60)).toarray() != 0
    assert np.array_equal(got, reference)
