"""2x2 pivot pairs: validation, adjacency through ordering and postorder, one cblk per pair."""

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

import pastixpy
from pastixpy.gallery import saddle_point
from pastixpy.ordering import ORDERINGS
from pastixpy.preprocess import equilibrate, pivot_pairs

from conftest import random_pattern


def mixed_poisson_tets(m):
    """[[M, Bᵀ], [B, 0]] of the mixed Poisson problem (Raviart-Thomas fluxes of lowest
    order, piecewise-constant potentials) on the m³ cubes of the unit cube, 6 tetrahedra
    each, as scikit-fem's ex37 assembles it (up to a scaling): well conditioned, and its
    potentials have zero diagonal entries."""
    import itertools

    grid = np.linspace(0, 1, m + 1)
    coords = np.stack(np.meshgrid(grid, grid, grid, indexing="ij"), -1).reshape(-1, 3)
    nodes = np.arange((m + 1) ** 3).reshape((m + 1,) * 3)
    paths = []  # Kuhn's split: one tetrahedron per path of unit steps from 0 to (1, 1, 1)
    for axes in itertools.permutations(range(3)):
        steps = np.zeros((4, 3), int)
        for s, axis in enumerate(axes):
            steps[s + 1] = steps[s]
            steps[s + 1, axis] += 1
        paths.append(steps)
    cubes = np.array(list(itertools.product(range(m), repeat=3)))
    T = np.array([[nodes[tuple(c + v)] for v in p] for p in paths for c in cubes])
    # Local face a leaves out vertex a; faces numbered by their sorted vertices.
    local = np.array([[1, 2, 3], [0, 2, 3], [0, 1, 3], [0, 1, 2]])
    faces, face_of = np.unique(
        np.sort(T[:, local], axis=2).reshape(-1, 3), axis=0, return_inverse=True
    )
    face_of = face_of.reshape(-1, 4)
    nt, nf = T.shape[0], faces.shape[0]
    first = np.full(nf, -1)  # a face's flux points out of the first tetrahedron holding it
    for t in range(nt - 1, -1, -1):
        first[face_of[t]] = t
    sign = np.where(first[face_of] == np.arange(nt)[:, None], 1.0, -1.0)
    # Unit-flux basis φ_a = ±(x - X_a) / (3|T|), X_a the vertex opposite face a:
    # ∫_T φ_a·φ_b = E[(x - X_a)·(x - X_b)] / (9|T|), x uniform in T.
    X = coords[T]
    vol = np.abs(np.linalg.det(X[:, 1:] - X[:, :1])) / 6
    c = X.mean(axis=1)
    exx = (np.einsum("tki,tki->t", X, X) + 16 * np.einsum("ti,ti->t", c, c)) / 20
    cx = np.einsum("ti,tai->ta", c, X)
    K = exx[:, None, None] - cx[:, None, :] - cx[:, :, None] + np.einsum("tai,tbi->tab", X, X)
    K = sign[:, :, None] * sign[:, None, :] * K / (9 * vol[:, None, None])
    rows, cols = np.repeat(face_of, 4, axis=1).ravel(), np.tile(face_of, (1, 4)).ravel()
    M = sp.csc_array((K.ravel(), (rows, cols)), shape=(nf, nf))
    B = sp.csc_array((sign.ravel(), (np.repeat(np.arange(nt), 4), face_of.ravel())), (nt, nf))
    return sp.csc_array(sp.block_array([[M, B.T], [B, None]]))


def _assert_pairs_kept(an, pairs):
    pos = an.iperm
    first = np.minimum(pos[pairs[:, 0]], pos[pairs[:, 1]])
    second = np.maximum(pos[pairs[:, 0]], pos[pairs[:, 1]])
    assert np.array_equal(second, first + 1)
    col2cblk = an.symbol.col2cblk()
    assert np.array_equal(col2cblk[first], col2cblk[second])


@pytest.mark.parametrize("ordering", sorted(ORDERINGS))
def test_saddle_point_pairs_share_a_cblk(ordering):
    A = saddle_point((9, 9))
    dr, _ = equilibrate(A, symmetric=True)
    pairs = pivot_pairs(sp.diags_array(dr) @ A @ sp.diags_array(dr))
    n_zero_diag = int(np.sum(A.diagonal() == 0))
    assert pairs.shape == (n_zero_diag, 2)  # every constraint found a partner
    an = pastixpy.analyze(A, ordering=ordering, kind="ldlt", pairs=pairs)
    an.check()
    _assert_pairs_kept(an, pairs)
    assert an.stats["n_pairs"] == n_zero_diag


@settings(max_examples=30, deadline=None)
@given(st.integers(2, 80), st.floats(0.02, 0.3), st.integers(0, 2**31 - 1))
def test_random_pairs_stay_adjacent(n, density, seed):
    rng = np.random.default_rng(seed)
    A = random_pattern(n, density, seed, symmetric=True)
    rows, cols = sp.triu(A, k=1).nonzero()
    free = np.ones(n, dtype=bool)
    pairs = []
    order = rng.permutation(rows.size)
    for i, j in zip(rows[order], cols[order], strict=True):
        if free[i] and free[j]:
            free[i] = free[j] = False
            pairs.append((i, j))
    pairs = np.array(pairs, dtype=np.int64).reshape(-1, 2)
    for ordering in ("metis", "amd", "natural"):
        an = pastixpy.analyze(A, ordering=ordering, pairs=pairs, split=(2, 3))
        an.check()
        _assert_pairs_kept(an, pairs)


def test_pairs_must_be_coupled_and_disjoint():
    A = sp.csc_array(sp.diags_array([1.0, 2.0, 3.0]) + sp.eye_array(3, k=1))
    with pytest.raises(pastixpy.InvalidInputError, match=r"pair \(0, 2\) is not an entry of A"):
        pastixpy.analyze(A, pairs=[[0, 2]])
    with pytest.raises(pastixpy.InvalidInputError, match="must not share a vertex"):
        pastixpy.analyze(A, pairs=[[0, 1], [1, 2]])
    with pytest.raises(pastixpy.InvalidInputError, match="outside 0..2"):
        pastixpy.analyze(A, pairs=[[0, 3]])
    with pytest.raises(pastixpy.InvalidInputError, match=r"\(m, 2\) integer array"):
        pastixpy.analyze(A, pairs=[0, 1])


def test_pairs_remove_perturbations_on_kkt():
    A = saddle_point((12, 12))
    paired = pastixpy.factorize(A, kind="ldlt")
    assert paired.stats["pairs"] > 0 and paired.stats["perturbed_pivots"] == 0
    with pytest.warns(pastixpy.PastixWarning, match="perturbed"):
        plain = pastixpy.factorize(A, kind="ldlt", matching="off", refine="none")
    assert plain.stats["perturbed_pivots"] > 0


@pytest.mark.parametrize("ordering", ["amd", "metis"])
def test_mixed_poisson_on_tetrahedra_needs_no_perturbed_pivot(ordering):
    """The matching paired each cube's 6 tetrahedra with the cube's 6 inner faces: an
    elimination subtree holding just them is exactly singular (a constant potential on
    the cube has no divergence there), and its last pivot was perturbed (6 with AMD,
    1 with METIS; scikit-fem's ex37, 13,608 unknowns: 7 and a retry). Grounded pairs
    leave no such subset."""
    A = mixed_poisson_tets(4)
    F = pastixpy.factorize(A, ordering=ordering)
    assert F.kind == "ldlt" and F.stats["pairs"] == 384
    assert F.stats["perturbed_pivots"] == 0 and F.stats["retries"] == []
    b = np.ones(A.shape[0])
    assert np.linalg.norm(A @ F.solve(b) - b) <= 1e-13 * np.linalg.norm(b)


def test_grounded_pairs_close_no_cycle_and_matching_pairs_are_kept_without_one():
    from pastixpy.preprocess import _matched_pairs, _pairs_cycle

    for A, cyclic in ((mixed_poisson_tets(3), True), (saddle_point((9, 9)), False)):
        dr, _ = equilibrate(A, symmetric=True)
        B = sp.csc_array(sp.diags_array(dr) @ A @ sp.diags_array(dr))
        weak = np.abs(B.diagonal()) < 1e-2
        matched = _matched_pairs(B, np.flatnonzero(weak), np.flatnonzero(~weak))
        assert _pairs_cycle(B, matched, weak) == cyclic
        pairs = pivot_pairs(B)
        assert pairs.shape == (weak.sum(), 2) and not _pairs_cycle(B, pairs, weak)
        if not cyclic:  # the maximum-product matching's pairs, unchanged
            assert sorted(map(tuple, pairs.tolist())) == sorted(matched)
