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
