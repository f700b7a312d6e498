"""pastixpy.jax: differentiable solves and log-determinants, against JAX's dense linear
algebra (values and reverse-mode gradients), finite differences, and the factorization
cache's counters (the backward pass reuses the forward pass's factorization)."""

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

jax = pytest.importorskip("jax")

import jax.numpy as jnp  # noqa: E402
from jax.experimental import sparse  # noqa: E402
from jax.test_util import check_grads  # noqa: E402

import pastixpy  # noqa: E402
import pastixpy.jax as pj  # noqa: E402
from pastixpy.errors import InvalidInputError, OptionError  # noqa: E402

#: A fresh interpreter away from the source tree, on the package these tests import.
AWAY = {
    "capture_output": True,
    "text": True,
    "cwd": Path(__file__).parent,
    "env": {**os.environ, "PYTHONPATH": str(Path(pastixpy.__file__).parents[1])},
}


@pytest.fixture
def x64():
    """Double precision for the test, the previous setting restored after it."""
    before = jax.config.read("jax_enable_x64")
    jax.config.update("jax_enable_x64", True)
    yield
    jax.config.update("jax_enable_x64", before)


@pytest.fixture(autouse=True)
def fresh_cache():
    pj.cache_clear()
    yield
    pj.set_cache_size(pj.DEFAULT_CACHE_SIZE)
    pj.cache_clear()


def case(name, n=9, seed=0, duplicates=0):
    """(indices (nse, 2), data) of a small sparse matrix; ``duplicates`` extra entries
    repeat positions already stored (BCOO sums them)."""
    rng = np.random.default_rng(seed)
    M = sp.random(n, n, density=0.3, random_state=rng, format="coo")
    if name == "general":  # unsymmetric pattern and values
        M = M + sp.diags(rng.uniform(2, 3, n))
    elif name == "matched":  # zero diagonal: LU's row matching permutes the rows
        M = (M + sp.diags(rng.uniform(2, 3, n)))[rng.permutation(n)]
    elif name == "spd":
        M = M @ M.T + sp.diags(np.full(n, float(n)))
    elif name == "hpd":  # Hermitian positive definite
        M = M + 1j * sp.random(n, n, density=0.2, random_state=rng)
        M = M @ M.conj().T + sp.diags(np.full(n, float(n)))
    elif name == "complex":
        M = M + 1j * sp.random(n, n, density=0.2, random_state=rng) + sp.diags(np.full(n, 3.0))
    else:
        raise ValueError(name)
    M = sp.coo_array(M)
    rows, cols, data = M.row, M.col, M.data
    if duplicates:
        pick = rng.integers(0, data.size, duplicates)
        share = rng.uniform(0.2, 0.8, duplicates)
        data = data.copy()
        extra = data[pick] * (1 - share)
        data[pick] *= share  # duplicates of an entry that sum to it
        rows, cols, data = np.r_[rows, rows[pick]], np.r_[cols, cols[pick]], np.r_[data, extra]
    return np.stack([rows, cols], axis=1), data


def bcoo(indices, data, n):
    return sparse.BCOO((data, jnp.asarray(indices)), shape=(n, n))


def dense(indices, data, n):
    """The dense matrix, duplicates summed, by JAX's own ops (the reference)."""
    return jnp.zeros((n, n), data.dtype).at[indices[:, 0], indices[:, 1]].add(data)


def rhs(n, k, dtype, seed=1):
    rng = np.random.default_rng(seed)
    shape = (n,) if k is None else (n, k)
    b = rng.standard_normal(shape)
    if np.issubdtype(dtype, np.complexfloating):
        b = b + 1j * rng.standard_normal(shape)
    return jnp.asarray(b, dtype=dtype)


def loss_weights(shape, seed=2):
    rng = np.random.default_rng(seed)
    return jnp.asarray(rng.standard_normal(shape) + 1j * rng.standard_normal(shape))


def scalar(x, w):
    """A real loss of x whose gradient reaches real and imaginary parts."""
    return jnp.sum(jnp.real(w * x)) + 0.5 * jnp.sum(jnp.abs(x) ** 2)


# ---------------------------------------------------------------------- solve


def solve_loss(indices, n, w):
    """A real loss of x = A⁻¹ b, by pastixpy.jax and by jnp.linalg.solve on the dense
    matrix (the reference)."""

    def ours(d, b):
        return scalar(pj.spsolve(bcoo(indices, d, n), b), w)

    def reference(d, b):
        return scalar(jnp.linalg.solve(dense(indices, d, n), b), w)

    return ours, reference


@pytest.mark.parametrize(
    "name, k", [("general", None), ("matched", 3), ("spd", None), ("complex", 3)]
)
def test_solve_and_gradients_match_dense_in_double(name, k, x64):
    """x, and the gradients with respect to A's values and to b, under jit, against
    jnp.linalg.solve and its gradients; duplicates in the BCOO."""
    n = 9
    indices, data = case(name, n, duplicates=3)
    data = jnp.asarray(data)
    b = rhs(n, k, data.dtype)
    x = jax.jit(lambda d, b: pj.spsolve(bcoo(indices, d, n), b))(data, b)
    assert x.dtype == data.dtype and x.shape == b.shape
    np.testing.assert_allclose(x, np.linalg.solve(dense(indices, data, n), b), rtol=1e-10)
    ours, reference = solve_loss(indices, n, loss_weights(b.shape))
    got = jax.jit(jax.grad(ours, argnums=(0, 1)))(data, b)
    want = jax.jit(jax.grad(reference, argnums=(0, 1)))(data, b)
    for g, r in zip(got, want, strict=True):
        assert g.dtype == r.dtype
        np.testing.assert_allclose(g, r, rtol=1e-9, atol=1e-11)


@pytest.mark.parametrize("name, k", [("general", None), ("complex", 2)])
def test_single_precision_by_default(name, k):
    """Without x64, JAX computes in float32 / complex64: so do the factors, to single
    precision's accuracy."""
    n = 9
    indices, data = case(name, n)
    data = jnp.asarray(data)
    assert data.dtype in (jnp.float32, jnp.complex64)
    b = rhs(n, k, data.dtype)
    ours, reference = solve_loss(indices, n, loss_weights(b.shape))
    value, grads = jax.jit(jax.value_and_grad(ours, argnums=(0, 1)))(data, b)
    ref_value, ref_grads = jax.jit(jax.value_and_grad(reference, argnums=(0, 1)))(data, b)
    np.testing.assert_allclose(value, ref_value, rtol=1e-4)
    for g, r in zip(grads, ref_grads, strict=True):
        assert g.dtype == data.dtype
        np.testing.assert_allclose(g, r, rtol=1e-3, atol=1e-4)


def test_mixed_dtypes_promote(x64):
    """A float32 matrix and a complex128 b promote as JAX does; the gradient of the
    real input is real (JAX takes the real part of the complex cotangent)."""
    n = 9
    indices, data = case("general", n)
    data32 = jnp.asarray(data, jnp.float32)
    b = rhs(n, None, jnp.complex128)
    ours, reference = solve_loss(indices, n, loss_weights(n))
    x = jax.jit(lambda d, b: pj.spsolve(bcoo(indices, d, n), b))(data32, b)
    assert x.dtype == jnp.complex128
    g = jax.jit(jax.grad(ours))(data32, b)
    assert g.dtype == jnp.float32
    np.testing.assert_allclose(g, jax.jit(jax.grad(reference))(data32, b), rtol=1e-5)


def test_vjp_against_finite_differences(x64):
    """The reverse rule of x(data, b) itself, a complex function of complex inputs,
    checked by jax.test_util.check_grads's central differences."""
    n = 7
    indices, data = case("complex", n)
    data = jnp.asarray(data)
    b = rhs(n, 2, data.dtype)
    solve = jax.jit(lambda d, b: pj.spsolve(bcoo(indices, d, n), b))
    check_grads(solve, (data, b), order=1, modes=["rev"], eps=1e-6, atol=1e-6, rtol=1e-6)


def test_duplicates_get_the_gradient_of_their_sum(x64):
    """Each duplicate's gradient is that of the summed entry: the gradient of the same
    matrix stored once."""
    n = 9
    indices, data = case("general", n, duplicates=4)
    stored = len(indices) - 4
    data = jnp.asarray(data)
    b = rhs(n, None, data.dtype)

    def loss(indices):
        return jax.jit(lambda d: jnp.sum(pj.spsolve(bcoo(indices, d, n), b) ** 3))

    g = jax.grad(loss(indices))(data)
    # Where each duplicate's entry is first stored.
    first = np.array(
        [np.flatnonzero((indices[:stored] == ij).all(axis=1))[0] for ij in indices[stored:]]
    )
    summed = data[:stored].at[first].add(data[stored:])
    g1 = jax.grad(loss(indices[:stored]))(summed)
    np.testing.assert_allclose(g[:stored], g1, rtol=1e-12)
    np.testing.assert_allclose(g[stored:], g1[first], rtol=1e-12)


# ---------------------------------------------------------------------- the cache


def test_backward_reuses_the_forward_factorization(x64):
    n = 9
    indices, data = case("general", n)
    data = jnp.asarray(data)
    b = rhs(n, 2, data.dtype)
    f = jax.jit(jax.grad(lambda d, b: jnp.sum(pj.spsolve(bcoo(indices, d, n), b) ** 2), (0, 1)))
    f(data, b)
    info = pj.cache_info()
    assert (info.misses, info.hits, info.currsize) == (1, 1, 1)
    # Another matrix: another factorization, reused again by its backward pass.
    f(2 * data, b)
    assert pj.cache_info()[:2] == (2, 2)
    pj.cache_clear()
    assert pj.cache_info()[:2] == (0, 0) and pj.cache_info().currsize == 0


def test_cache_size_bounds_and_zero_disables(x64):
    n = 9
    indices, data = case("general", n)
    data = jnp.asarray(data)
    b = rhs(n, None, data.dtype)
    solve = jax.jit(lambda d: pj.spsolve(bcoo(indices, d, n), b))
    pj.set_cache_size(2)
    for s in (1.0, 2.0, 3.0):
        solve(s * data)
    assert pj.cache_info() == pj.CacheInfo(hits=0, misses=3, maxsize=2, currsize=2)
    solve(3.0 * data)  # the most recent is still there; the first is not
    solve(1.0 * data)
    assert pj.cache_info()[:2] == (1, 4)
    pj.set_cache_size(0)
    assert pj.cache_info().currsize == 0
    ours, reference = solve_loss(indices, n, loss_weights(n))
    g = jax.jit(jax.grad(ours))(data, b)
    assert pj.cache_info()[:2] == (1, 6)  # the backward pass factored anew: still right
    np.testing.assert_allclose(g, jax.jit(jax.grad(reference))(data, b), rtol=1e-9)


def test_vmap_over_right_hand_sides_factors_once(x64):
    n = 9
    indices, data = case("general", n)
    A = bcoo(indices, jnp.asarray(data), n)
    B = jnp.asarray(np.random.default_rng(3).standard_normal((5, n, 2)))
    X = jax.jit(jax.vmap(lambda b: pj.spsolve(A, b)))(B)
    np.testing.assert_allclose(X, np.linalg.solve(dense(indices, A.data, n), B), rtol=1e-10)
    assert pj.cache_info()[:2] == (0, 1)


def test_vmap_over_matrices_and_their_gradients(x64):
    n = 9
    indices, data = case("general", n)
    D = jnp.asarray([1.0, 2.0, 3.0])[:, None] * jnp.asarray(data)[None]
    ours, reference = solve_loss(indices, n, loss_weights(n))
    b = rhs(n, None, jnp.float64)
    G = jax.jit(jax.vmap(jax.grad(ours), (0, None)))(D, b)
    np.testing.assert_allclose(G, jax.jit(jax.vmap(jax.grad(reference), (0, None)))(D, b))
    assert pj.cache_info()[:2] == (3, 3)


# ---------------------------------------------------------------------- matrix forms


def test_bcsr_and_data_pattern_forms(x64):
    n = 9
    indices, data = case("general", n)
    M = sp.csr_array((data, (indices[:, 0], indices[:, 1])), shape=(n, n))
    b = rhs(n, None, jnp.float64)
    C = sparse.BCSR((M.data, M.indices, M.indptr), shape=(n, n))

    @jax.jit
    def bcsr_loss(d):
        return jnp.sum(pj.spsolve(sparse.BCSR((d, C.indices, C.indptr), shape=(n, n)), b) ** 2)

    @jax.jit
    def pattern_loss(d):
        return jnp.sum(pj.spsolve((d, M), b) ** 2)

    ref = np.sum(np.linalg.solve(M.toarray(), b) ** 2)
    np.testing.assert_allclose(bcsr_loss(C.data), ref, rtol=1e-12)
    np.testing.assert_allclose(pattern_loss(M.data), ref, rtol=1e-12)
    # Both hold the entries row by row: the same gradients.
    np.testing.assert_allclose(jax.grad(bcsr_loss)(C.data), jax.grad(pattern_loss)(M.data))


def test_padding_is_left_out(x64):
    """BCOO and BCSR pad with index n (as fromdense(nse=...) does): those entries are
    left out and get a zero gradient."""
    n = 9
    indices, data = case("general", n)
    S = sp.csr_array((data, (indices[:, 0], indices[:, 1])), shape=(n, n))
    M = S.toarray()
    values = np.r_[S.data, np.zeros(3)]
    coo_indices = np.r_[np.argwhere(M != 0), np.full((3, 2), n)]
    csr_indices = np.r_[S.indices, np.full(3, n)]
    for make in (
        lambda d: sparse.BCOO((d, coo_indices), shape=(n, n)),
        lambda d: sparse.BCSR((d, csr_indices, S.indptr), shape=(n, n)),
    ):
        logabs, g = jax.jit(jax.value_and_grad(lambda d, make=make: pj.slogdet(make(d))[1]))(values)
        np.testing.assert_allclose(logabs, np.linalg.slogdet(M)[1], rtol=1e-12)
        want = np.linalg.inv(M).T[coo_indices[:-3, 0], coo_indices[:-3, 1]]
        np.testing.assert_allclose(g[:-3], want, rtol=1e-10)
        assert (g[-3:] == 0).all()


# ---------------------------------------------------------------------- determinants


@pytest.mark.parametrize("name", ["general", "matched", "spd", "complex", "hpd"])
def test_slogdet_and_its_gradient_match_dense(name, x64):
    """log|det A|'s gradient is A⁻ᵀ on A's pattern: from the selected inverse, whose
    pattern holds Aᵀ's even with LU's row matching on an unsymmetric pattern
    ("matched"); for complex A, the sign's gradient too (JAX's convention)."""
    n = 9
    indices, data = case(name, n, duplicates=2)
    data = jnp.asarray(data)

    def value(sign, logabs):
        if jnp.iscomplexobj(sign):
            return logabs + 0.3 * jnp.real(sign) + 0.7 * jnp.imag(sign)
        return logabs

    def ours(d):
        return value(*pj.slogdet(bcoo(indices, d, n)))

    def reference(d):
        return value(*jnp.linalg.slogdet(dense(indices, d, n)))

    sign, logabs = jax.jit(lambda d: pj.slogdet(bcoo(indices, d, n)))(data)
    ref_sign, ref_logabs = np.linalg.slogdet(dense(indices, data, n))
    np.testing.assert_allclose(sign, ref_sign, rtol=1e-12)
    np.testing.assert_allclose(logabs, ref_logabs, rtol=1e-12)
    assert logabs.dtype == jnp.float64 and sign.dtype == data.dtype
    g = jax.jit(jax.grad(ours))(data)
    np.testing.assert_allclose(g, jax.jit(jax.grad(reference))(data), rtol=1e-9, atol=1e-12)
    assert pj.cache_info()[:2] == (2, 1)  # the gradient's forward and backward reuse it
    if name in ("spd", "hpd"):  # logdet: the same gradient as log|det A|
        g = jax.jit(jax.grad(lambda d: pj.logdet(bcoo(indices, d, n))))(data)
        want = jax.jit(jax.grad(lambda d: jnp.linalg.slogdet(dense(indices, d, n))[1]))(data)
        np.testing.assert_allclose(g, want, rtol=1e-9, atol=1e-12)


def test_logdet_of_spd_with_kind_llt(x64):
    """Value against numpy; derivative along a symmetric perturbation against central
    differences (a symmetric kind reads one triangle: an unsymmetric perturbation would
    change the matrix it factors, not A)."""
    n = 9
    indices, data = case("spd", n)
    data = jnp.asarray(data)
    S = np.random.default_rng(5).standard_normal((n, n))
    direction = jnp.asarray((S + S.T)[indices[:, 0], indices[:, 1]])

    @jax.jit
    def along(t):
        return pj.logdet(bcoo(indices, data + t * direction, n), kind="llt")

    np.testing.assert_allclose(along(0.0), np.linalg.slogdet(dense(indices, data, n))[1])
    check_grads(along, (0.0,), order=1, modes=["rev"], eps=1e-5)
    assert pj.cache_info().hits > 0


def test_logdet_in_single_precision():
    n = 9
    indices, data = case("spd", n)
    data = jnp.asarray(data)
    g = jax.jit(jax.grad(lambda d: pj.logdet(bcoo(indices, d, n))))(data)
    ref = jax.jit(jax.grad(lambda d: jnp.linalg.slogdet(dense(indices, d, n))[1]))(data)
    assert g.dtype == jnp.float32
    np.testing.assert_allclose(g, ref, rtol=1e-4, atol=1e-5)


def test_logdet_refuses_a_matrix_that_is_not_positive_definite(x64):
    n = 9
    indices, data = case("spd", n)
    with pytest.raises(jax.errors.JaxRuntimeError, match="positive definite"):
        pj.logdet(bcoo(indices, -jnp.asarray(data), n))


# ---------------------------------------------------------------------- errors and options


def test_bad_inputs_name_the_argument():
    n = 9
    indices, data = case("general", n)
    A = bcoo(indices, data, n)
    b3 = np.ones(3)
    with pytest.raises(InvalidInputError, match="b has shape"):
        pj.spsolve(A, np.ones(n + 1))
    with pytest.raises(InvalidInputError, match="b has shape"):
        pj.spsolve(A, np.ones((n, 2, 2)))
    with pytest.raises(InvalidInputError, match="square"):
        pj.spsolve(sparse.BCOO((np.ones(2), np.array([[0, 0], [1, 3]])), shape=(3, 4)), b3)
    with pytest.raises(InvalidInputError, match="A is a ndarray"):
        pj.spsolve(np.eye(3), b3)
    with pytest.raises(InvalidInputError, match="data has shape"):
        pj.spsolve((np.ones(2), sp.eye_array(3, format="csr")), b3)
    batched = sparse.BCOO((np.ones((2, 1)), np.zeros((2, 1, 2), int)), shape=(2, 3, 3))
    with pytest.raises(InvalidInputError, match="batch"):
        pj.slogdet(batched)
    bad = indices.copy()
    bad[0] = (n + 2, 0)
    with pytest.raises(InvalidInputError, match="A's indices are out of range"):
        pj.spsolve(bcoo(bad, jnp.asarray(data), n), jnp.ones(n))
    with pytest.raises(InvalidInputError, match="maxsize"):
        pj.set_cache_size(-1)


def test_errors_found_on_the_host_keep_their_message():
    """Under jit an out-of-range index is seen only by the callback: JAX raises its own
    runtime error, with pastixpy's message in it."""
    n = 9
    indices, data = case("general", n)
    bad = indices.copy()
    bad[0] = (-1, 0)
    f = jax.jit(lambda i, d: pj.spsolve(sparse.BCOO((d, i), shape=(n, n)), jnp.ones(n)))
    with pytest.raises(jax.errors.JaxRuntimeError, match="out of range"):
        f(jnp.asarray(bad), jnp.asarray(data))


def test_options_reach_factorize(x64):
    n = 9
    indices, data = case("spd", n)
    A = bcoo(indices, -jnp.asarray(data), n)  # negative definite
    b = jnp.ones(n)
    with pytest.raises(OptionError, match="comm="):
        pj.spsolve(A, b, comm=object())
    with pytest.raises(TypeError, match="colour"):
        pj.spsolve(A, b, colour="red")
    with pytest.raises(OptionError, match="kind"):
        pj.slogdet(A, kind="cholesky")
    # kind="llt" reaches factorize, which refuses a matrix that is not positive definite;
    # kind="ldlt" factors it.
    with pytest.raises(jax.errors.JaxRuntimeError, match="positive definite"):
        pj.spsolve(A, b, kind="llt")
    x = pj.spsolve(A, b, kind="ldlt")
    np.testing.assert_allclose(-dense(indices, data, n) @ x, b, atol=1e-12)
    assert pj.cache_info()[:2] == (0, 2)


# ---------------------------------------------------------------------- properties

#: The property test's matrices: n x n, their entries padded to NSE (JAX's padding, index
#: n) so that one compiled function serves every example.
N, NSE = 8, 40


@pytest.fixture(scope="module")
def padded_solve():
    def solve_and_vjp(data, indices, b, x_bar):
        x, vjp = jax.vjp(
            lambda d, b: pj.spsolve(sparse.BCOO((d, indices), shape=(N, N)), b), data, b
        )
        return x, *vjp(x_bar)

    return jax.jit(solve_and_vjp)


@settings(max_examples=20, deadline=None)
@given(
    density=st.floats(0.0, 0.4),
    seed=st.integers(0, 2**31 - 1),
    k=st.sampled_from([None, 3]),
)
def test_solve_and_gradient_property(padded_solve, density, seed, k):
    """Any diagonally dominant sparse matrix, duplicates and padding included: A x = b,
    Aᵀ b̄ = x̄ and Ā = -b̄ xᵀ on A's entries, in double."""
    rng = np.random.default_rng(seed)
    M = sp.coo_array(sp.random(N, N, density=density, random_state=rng))
    M = sp.coo_array(M + sp.diags(np.abs(M).sum(axis=1) + 1.0))  # stores the diagonal
    rows, cols, vals = M.row, M.col, M.data
    # Some entries split in two.
    dup = rng.choice(vals.size, min(vals.size, NSE - vals.size, 4), replace=False)
    half = vals[dup] / 2
    vals = np.r_[vals, half]
    vals[dup] = half
    rows, cols = np.r_[rows, rows[dup]], np.r_[cols, cols[dup]]
    pad = NSE - vals.size
    indices = np.stack([np.r_[rows, [N] * pad], np.r_[cols, [N] * pad]], axis=1)
    shape = (N,) if k is None else (N, k)
    b, x_bar = rng.standard_normal(shape), rng.standard_normal(shape)
    before = jax.config.read("jax_enable_x64")
    jax.config.update("jax_enable_x64", True)
    try:
        # Waited for here: the callbacks run in the x64 mode they were traced in.
        out = padded_solve(np.r_[vals, np.zeros(pad)], indices, b, x_bar)
        x, data_bar, b_bar = (np.asarray(a) for a in out)
    finally:
        jax.config.update("jax_enable_x64", before)
    Ad = M.toarray()
    np.testing.assert_allclose(Ad @ np.asarray(x), b, atol=1e-10)
    np.testing.assert_allclose(Ad.T @ np.asarray(b_bar), x_bar, atol=1e-10)
    b_bar, x = np.asarray(b_bar).reshape(N, -1), np.asarray(x).reshape(N, -1)
    want = -(b_bar[rows] * x[cols]).sum(axis=1)
    np.testing.assert_allclose(data_bar[: rows.size], want, atol=1e-10)
    assert (np.asarray(data_bar[rows.size :]) == 0).all()


# ---------------------------------------------------------------------- the optional import


def test_import_pastixpy_does_not_import_jax():
    code = "import sys, pastixpy; assert 'jax' not in sys.modules, 'jax imported'"
    run = subprocess.run([sys.executable, "-c", code], **AWAY)
    assert run.returncode == 0, run.stderr


def test_missing_jax_says_how_to_install_it():
    code = (
        "import sys\n"
        "class Block:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'jax' or name.startswith('jax.'):\n"
        "            raise ImportError('no jax here')\n"
        "sys.meta_path.insert(0, Block())\n"
        "try:\n"
        "    import pastixpy.jax\n"
        "except ImportError as exc:\n"
        "    print(exc)\n"
    )
    run = subprocess.run([sys.executable, "-c", code], **AWAY)
    assert run.returncode == 0, run.stderr
    assert "pip install 'pastixpy[jax]'" in run.stdout


@pytest.mark.parametrize("name", ["west0479", "orsirr_1", "watt_2", "fs_183_6", "494_bus"])
def test_real_matrices_solve_and_gradients(name, x64):
    """On SuiteSparse matrices (../shared/matrices; skipped without them): the solve
    against scipy, the VJP with respect to (A's values, b) and slogdet's gradient
    against central differences along a random direction, log|det A| against dense."""
    import scipy.sparse.linalg as sla

    from conftest import load_shared

    A = load_shared(name)
    pat = sp.coo_array(A)
    data = jnp.asarray(pat.data)
    n = A.shape[0]
    rng = np.random.default_rng(1)
    b, g = rng.standard_normal(n), rng.standard_normal(n)
    x = np.asarray(pj.spsolve((data, pat), b))
    ref = sla.spsolve(sp.csc_matrix(A), b)
    assert np.abs(x - ref).max() <= 1e-10 * np.abs(ref).max()

    def loss(d, bb):
        return jnp.vdot(g, pj.spsolve((d, pat), bb))

    gd, gb = jax.grad(loss, argnums=(0, 1))(data, b)
    dd = rng.standard_normal(data.shape) * np.abs(pat.data) * 1e-7
    db = rng.standard_normal(n) * 1e-7 * np.abs(b).max()
    fd = (loss(data + dd, b + db) - loss(data - dd, b - db)) / 2
    assert abs(float(fd - jnp.vdot(gd, dd) - jnp.vdot(gb, db))) <= 1e-4 * abs(float(fd))

    def logabs(d):
        return pj.slogdet((d, pat))[1]

    dense = np.linalg.slogdet(A.toarray())[1]
    assert abs(float(logabs(data)) - dense) <= 1e-10 * abs(dense)
    fdl = (logabs(data + dd) - logabs(data - dd)) / 2
    assert abs(float(fdl - jnp.vdot(jax.grad(logabs)(data), dd))) <= 1e-4 * abs(float(fdl))
