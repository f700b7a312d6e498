"""Low-rank compression kernels (pastixpy._numeric.lowrank_*) against numpy's SVD.

Tiles of known rank are products of random orthonormal factors and chosen singular
values, plus Gaussian noise of a chosen Frobenius norm. The reference is
``numpy.linalg.svd`` in double precision: it gives the optimal rank at a tolerance
(Eckart-Young), which no method may beat and which the SVD method must reach. The
tolerance is absolute (‖A - UVᴴ‖_F ≤ tol), as the kernels take it.
"""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pastixpy import InvalidInputError
from pastixpy._numeric import lowrank_add, lowrank_compress

DTYPES = [np.float32, np.float64, np.complex64, np.complex128]
METHODS = ["rrqr", "svd", "randomized"]
SHAPES = [(60, 40), (40, 60), (50, 50), (1, 30), (30, 1), (120, 90)]


# ---------------------------------------------------------------------------- helpers


def eps(dtype):
    return float(np.finfo(dtype).eps)


def real_dtype(dtype):
    """The real type of ``dtype``'s precision."""
    return np.finfo(dtype).dtype


def is_complex(dtype):
    return np.dtype(dtype).kind == "c"


def wide(A):
    """A in double precision (complex128 or float64), for the references."""
    return np.asarray(A, dtype=np.complex128 if is_complex(A.dtype) else np.float64)


def gaussian(rng, shape, cplx):
    x = rng.standard_normal(shape)
    return x + 1j * rng.standard_normal(shape) if cplx else x


def orthonormal(rng, m, k, cplx):
    return np.linalg.qr(gaussian(rng, (m, k), cplx))[0]


def tile(rng, m, n, rank, dtype, noise=0.0, spectrum=None):
    """An m x n tile of ``dtype``: rank ``rank`` with singular values ``spectrum``
    (default: log-spaced from 1 to 0.1, a clear gap above any small noise), plus
    Gaussian noise of Frobenius norm ``noise``."""
    cplx = is_complex(dtype)
    k = min(rank, m, n)
    A = np.zeros((m, n), complex if cplx else float)
    if k > 0:
        s = np.logspace(0, -1, k) if spectrum is None else np.asarray(spectrum)[:k]
        A += (orthonormal(rng, m, k, cplx) * s) @ orthonormal(rng, n, k, cplx).conj().T
    if noise > 0:
        E = gaussian(rng, (m, n), cplx)
        A += E * (noise / np.linalg.norm(E))
    return A.astype(dtype)


def tail_norms(A):
    """t[r] = ‖A - A_r‖_F, the least error of a rank-r approximation (t[min(m, n)] = 0)."""
    s = np.linalg.svd(wide(A), compute_uv=False)
    return np.append(np.sqrt(np.cumsum(s[::-1] ** 2))[::-1], 0.0)


def optimal_rank(A, tol):
    """The smallest rank whose best approximation is within ``tol`` (Eckart-Young)."""
    return int(np.argmax(tail_norms(A) <= tol))


def rank_bounds(A, tol, method, slack=None):
    """The ranks a method may return at ``tol``: from the optimum to what the method
    can reach. The SVD's rank is the optimum, between the optimal ranks at tol ± the
    rounding of a computed SVD; the randomized range finder (one power iteration) comes
    within 2 of it; the pivoted QR within 20% + 2 (a column-pivoted QR is not an
    optimal low-rank approximation: on noise-dominated tiles its rank exceeds the SVD's
    by up to that much, measured on Gaussian noise and slowly decaying spectra)."""
    slack = rounding(A) if slack is None else slack
    low, high = optimal_rank(A, tol + slack), optimal_rank(A, max(tol - slack, 0.0))
    if method == "svd":
        return low, high
    if method == "randomized":
        return low, high + 2
    return low, int(1.2 * high) + 2


def rounding(A):
    """Slack for rounding in the kernels: a few ulps of ‖A‖_F per entry's length."""
    m, n = A.shape
    return 10 * eps(A.dtype) * np.sqrt(max(m, n)) * np.linalg.norm(wide(A))


def check_factors(A, U, V, tol):
    """Shapes, dtype, the tolerance met, U orthonormal, V = Aᴴ U; returns the rank."""
    m, n = A.shape
    r = U.shape[1]
    assert U.shape == (m, r) and V.shape == (n, r)
    assert U.dtype == A.dtype and V.dtype == A.dtype
    A64, U64, V64 = wide(A), wide(U), wide(V)
    err = np.linalg.norm(A64 - U64 @ V64.conj().T)
    assert err <= tol + rounding(A), (err, tol, r)
    assert np.linalg.norm(U64.conj().T @ U64 - np.eye(r)) <= 100 * eps(A.dtype) * max(r, 1)
    assert np.linalg.norm(V64 - A64.conj().T @ U64) <= rounding(A) + 1e-300
    # Eckart-Young: no rank-r matrix comes closer than the SVD's tail, whatever the method
    # (up to the reference's own rounding, in double precision).
    assert tail_norms(A)[r] <= err * (1 + 1e-8) + 1e-14 * np.linalg.norm(A64)
    return r


def compress(A, tol, method, **kw):
    out = lowrank_compress(A, tol, method=method, **kw)
    assert out is not None, "compression refused a rank within the limit"
    return check_factors(A, *out, tol)


# ------------------------------------------------------------ compression, known ranks


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("shape", SHAPES)
def test_rank_found_below_the_noise(shape, method, dtype):
    """A clear gap: rank-k signal, noise at a tenth of tol. Every method finds k."""
    rng = np.random.default_rng(1)
    m, n = shape
    rank = min(37 if m > 100 else 5, m, n)
    A = tile(rng, m, n, rank, dtype)
    tol = 1e3 * eps(dtype) * np.linalg.norm(wide(A))
    A = tile(np.random.default_rng(1), m, n, rank, dtype, noise=tol / 10)
    assert optimal_rank(A, tol) == rank
    assert compress(A, tol, method) == rank
    # The limit is inclusive; one below refuses, the tile staying dense.
    assert compress(A, tol, method, max_rank=rank) == rank
    assert lowrank_compress(A, tol, method=method, max_rank=rank - 1) is None


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("shape", [(60, 40), (40, 60), (33, 33)])
def test_noise_above_the_tolerance(shape, method, dtype):
    """Noise ten times tol: more rank than the signal's, and the tolerance still met."""
    rng = np.random.default_rng(2)
    m, n = shape
    A0 = tile(rng, m, n, 5, dtype)
    tol = 1e3 * eps(dtype) * np.linalg.norm(wide(A0))
    A = tile(np.random.default_rng(2), m, n, 5, dtype, noise=10 * tol)
    assert optimal_rank(A, tol) > 5
    low, high = rank_bounds(A, tol, method)
    assert low <= compress(A, tol, method) <= high


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("method", METHODS)
def test_decaying_spectrum_ranks_near_optimal(method, dtype):
    """No gap (σ_i = 0.7^i): the SVD's rank is the optimum, the others stay close."""
    rng = np.random.default_rng(3)
    m, n = 80, 60
    A = tile(rng, m, n, n, dtype, spectrum=0.7 ** np.arange(n))
    for rel in (1e-1, 1e-2, 1e-3):
        tol = rel * np.linalg.norm(wide(A))
        low, high = rank_bounds(A, tol, method)
        r = compress(A, tol, method)
        assert low <= r <= high, (rel, r, low, high)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("method", METHODS)
def test_repeated_and_zero_columns(method, dtype):
    """Columns repeated, rescaled and zero: the pivoted QR's norm downdates cancel
    exactly (recomputed, ending its blocks early), and ranks cross its block size."""
    rng = np.random.default_rng(13)
    B = tile(rng, 90, 45, 45, dtype, spectrum=0.85 ** np.arange(45))
    A = B[:, rng.integers(0, 45, 130)] * rng.uniform(0.5, 2, 130).astype(real_dtype(dtype))
    A[:, ::7] = 0
    for rel in (1e-2, 1e-4):
        tol = rel * np.linalg.norm(wide(A))
        low, high = rank_bounds(A, tol, method)
        assert low <= compress(A, tol, method) <= high


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("shape", [(7, 5), (5, 7), (1, 9), (9, 1), (1, 1)])
def test_zero_tile_has_rank_zero(shape, method, dtype):
    A = np.zeros(shape, dtype)
    U, V = lowrank_compress(A, 0.0, method=method)
    assert U.shape == (shape[0], 0) and V.shape == (shape[1], 0)
    assert U.dtype == dtype
    # Rank 0 needs no room: a limit of 0 accepts it.
    U, V = lowrank_compress(A, 0.0, method=method, max_rank=0)
    assert U.shape[1] == 0


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("method", METHODS)
def test_full_rank_refused_below_the_limit(method, dtype):
    rng = np.random.default_rng(4)
    A = gaussian(rng, (30, 20), is_complex(dtype)).astype(dtype)
    tol = 1e3 * eps(dtype) * np.linalg.norm(wide(A))
    assert optimal_rank(A, tol) == 20
    for limit in (0, 1, 10, 19):
        assert lowrank_compress(A, tol, method=method, max_rank=limit) is None
    # No limit, or one at min(m, n) or above: the full rank comes back, exact.
    assert compress(A, tol, method) == 20
    assert compress(A, tol, method, max_rank=20) == 20
    assert compress(A, tol, method, max_rank=1000) == 20


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("method", METHODS)
def test_tolerance_extremes(method, dtype):
    """tol ≥ ‖A‖_F: rank 0. tol = 0 on a rounded low-rank tile: the rounding's full rank."""
    rng = np.random.default_rng(5)
    A = tile(rng, 25, 18, 4, dtype)
    norm = np.linalg.norm(wide(A))
    assert compress(A, norm * 1.0001, method) == 0
    assert compress(A, np.inf, method) == 0
    assert compress(A, norm / 2, method) >= 1
    # No residual is exactly zero before the factorization is complete.
    assert compress(A, 0.0, method) == 18


@pytest.mark.parametrize("dtype", DTYPES)
def test_randomized_is_reproducible(dtype):
    rng = np.random.default_rng(6)
    A = tile(rng, 70, 50, 30, dtype, spectrum=0.8 ** np.arange(30))
    tol = 1e-2 * np.linalg.norm(wide(A))
    U1, V1 = lowrank_compress(A, tol, method="randomized", seed=11)
    U2, V2 = lowrank_compress(A, tol, method="randomized", seed=11)
    np.testing.assert_array_equal(U1, U2)
    np.testing.assert_array_equal(V1, V2)
    # Another seed: other factors, still valid.
    U3, V3 = lowrank_compress(A, tol, method="randomized", seed=2**64 - 1)
    check_factors(A, U3, V3, tol)
    assert not np.array_equal(U1[:, :1], U3[:, :1])


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("power", [0, 2])
def test_randomized_power_iterations(power, dtype):
    """Without power iterations the tolerance still holds (the residual is computed),
    at a rank that may exceed the SVD's where the spectrum decays slowly."""
    rng = np.random.default_rng(12)
    A = tile(rng, 70, 55, 55, dtype, spectrum=0.9 ** np.arange(55))
    for rel in (1e-1, 1e-2):
        tol = rel * np.linalg.norm(wide(A))
        out = lowrank_compress(A, tol, method="randomized", power=power)
        r = check_factors(A, *out, tol)
        if power > 0:
            low, high = rank_bounds(A, tol, "randomized")
            assert low <= r <= high


def test_inputs_accepted_in_any_layout_and_left_alone():
    rng = np.random.default_rng(7)
    A = tile(rng, 30, 40, 6, np.float64, noise=1e-12)
    ref = A.copy()
    for view in (A, np.ascontiguousarray(A), A[:, ::-1], A.T.copy().T):
        view.setflags(write=False)
        for method in METHODS:
            check_factors(view, *lowrank_compress(view, 1e-9, method=method), 1e-9)
    np.testing.assert_array_equal(A, ref)


# ------------------------------------------------------------------- recompression


def terms(rng, m, n, r1, r2, shared, dtype):
    """U1 V1ᴴ and U2 V2ᴴ whose column spaces share ``shared`` directions: the sum has
    rank r1 + r2 - shared (generically)."""
    cplx = is_complex(dtype)
    U1, V1 = gaussian(rng, (m, r1), cplx), gaussian(rng, (n, r1), cplx)
    U2 = np.hstack(
        [
            U1[:, :shared] @ gaussian(rng, (shared, shared), cplx),
            gaussian(rng, (m, r2 - shared), cplx),
        ]
    )
    V2 = gaussian(rng, (n, r2), cplx)
    return [x.astype(dtype) for x in (U1, V1, U2, V2)]


def dense_sum(U1, V1, U2, V2, alpha):
    return wide(U1) @ wide(V1).conj().T + alpha * (wide(U2) @ wide(V2).conj().T)


def sum_rounding(S, dtype):
    """Slack for rounding in a recompression: its inputs pass through two QRs first."""
    return 100 * eps(dtype) * np.sqrt(max(S.shape)) * np.linalg.norm(S)


def check_sum(S, U, V, tol, dtype):
    """As check_factors, for a sum S held in double precision."""
    m, n = S.shape
    r = U.shape[1]
    assert U.shape == (m, r) and V.shape == (n, r)
    assert U.dtype == dtype and V.dtype == dtype
    U64, V64 = wide(U), wide(V)
    err = np.linalg.norm(S - U64 @ V64.conj().T)
    slack = sum_rounding(S, dtype)
    assert err <= tol + slack, (err, tol, r)
    assert np.linalg.norm(U64.conj().T @ U64 - np.eye(r)) <= 100 * eps(dtype) * max(r, 1)
    assert np.linalg.norm(V64 - S.conj().T @ U64) <= slack
    assert tail_norms(S)[r] <= err * (1 + 1e-8) + 1e-14 * np.linalg.norm(S)
    return r


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("shape", [(50, 40), (40, 50), (8, 60), (60, 8), (1, 20)])
def test_sum_of_overlapping_terms(shape, method, dtype):
    rng = np.random.default_rng(8)
    m, n = shape
    r1, r2, shared = 6, 5, 3
    U1, V1, U2, V2 = terms(rng, m, n, r1, r2, shared, dtype)
    alpha = (-0.5 + 0.25j) if is_complex(dtype) else -0.5
    S = dense_sum(U1, V1, U2, V2, alpha)
    tol = 1e3 * eps(dtype) * np.linalg.norm(S)
    best = optimal_rank(S, tol)
    assert best == min(r1 + r2 - shared, m, n)
    out = lowrank_add(U1, V1, U2, V2, alpha, tol, method=method)
    assert check_sum(S, *out, tol, dtype) == best
    assert lowrank_add(U1, V1, U2, V2, alpha, tol, method=method, max_rank=best) is not None
    assert lowrank_add(U1, V1, U2, V2, alpha, tol, method=method, max_rank=best - 1) is None


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("method", METHODS)
def test_sum_with_noise_terms(method, dtype):
    """A second term of small singular values: the sum's rank depends on tol, and the
    result is compared with the SVD of the dense sum."""
    rng = np.random.default_rng(9)
    m, n = 45, 35
    cplx = is_complex(dtype)
    U1, V1 = tile(rng, m, 8, 8, dtype), gaussian(rng, (n, 8), cplx).astype(dtype)
    U2 = orthonormal(rng, m, 12, cplx).astype(dtype)
    V2 = (orthonormal(rng, n, 12, cplx) * np.logspace(-1, -6, 12)).astype(dtype)
    S = dense_sum(U1, V1, U2, V2, 1.0)
    for rel in (1e-2, 1e-4):
        tol = max(rel, 1e3 * eps(dtype)) * np.linalg.norm(S)
        low, high = rank_bounds(S, tol, method, slack=sum_rounding(S, dtype))
        r = check_sum(S, *lowrank_add(U1, V1, U2, V2, 1.0, tol, method=method), tol, dtype)
        assert low <= r <= high, (rel, r, low, high)


@pytest.mark.parametrize("dtype", DTYPES)
def test_sum_edge_cases(dtype):
    rng = np.random.default_rng(10)
    m, n = 20, 15
    U1, V1, U2, V2 = terms(rng, m, n, 4, 3, 0, dtype)
    S1 = dense_sum(U1, V1, U1[:, :0], V1[:, :0], 1.0)
    tol = 1e3 * eps(dtype) * np.linalg.norm(S1)
    # A term without columns: the other one, recompressed.
    assert check_sum(S1, *lowrank_add(U1, V1, U2[:, :0], V2[:, :0], 2.0, tol), tol, dtype) == 4
    S2 = dense_sum(U2, V2, U2[:, :0], V2[:, :0], 1.0) * 3
    assert check_sum(S2, *lowrank_add(U1[:, :0], V1[:, :0], U2, V2, 3.0, tol), tol, dtype) == 3
    # Both empty, or cancelling: rank 0.
    U, V = lowrank_add(U1[:, :0], V1[:, :0], U2[:, :0], V2[:, :0], 1.0, tol)
    assert U.shape == (m, 0) and V.shape == (n, 0)
    for method in METHODS:
        U, V = lowrank_add(U1, V1, U1, V1, -1.0, tol, method=method)
        assert U.shape[1] == 0
    # alpha = 0: the first term alone.
    assert check_sum(S1, *lowrank_add(U1, V1, U2, V2, 0.0, tol), tol, dtype) == 4


# ------------------------------------------------------------------------ arguments


def test_invalid_arguments():
    A = np.ones((4, 3))
    with pytest.raises(InvalidInputError, match="dtype int64"):
        lowrank_compress(np.ones((4, 3), dtype=np.int64), 0.1)
    with pytest.raises(InvalidInputError, match="2-D"):
        lowrank_compress(np.ones(4), 0.1)
    with pytest.raises(InvalidInputError, match="NaN or infinite"):
        lowrank_compress(np.full((2, 2), np.nan), 0.1)
    with pytest.raises(InvalidInputError, match="nonnegative"):
        lowrank_compress(A, -1.0)
    with pytest.raises(InvalidInputError, match="nonnegative"):
        lowrank_compress(A, float("nan"))
    with pytest.raises(InvalidInputError, match="real number"):
        lowrank_compress(A, "small")
    with pytest.raises(InvalidInputError, match="unknown low-rank method 'qr'"):
        lowrank_compress(A, 0.1, method="qr")
    with pytest.raises(InvalidInputError, match="max_rank must be an integer"):
        lowrank_compress(A, 0.1, max_rank=2.5)
    with pytest.raises(InvalidInputError, match="seed"):
        lowrank_compress(A, 0.1, seed=-1)
    with pytest.raises(InvalidInputError, match="seed"):
        lowrank_compress(A, 0.1, seed=2**64)
    with pytest.raises(InvalidInputError, match="power"):
        lowrank_compress(A, 0.1, method="randomized", power=-1)
    U, V = np.ones((4, 2)), np.ones((3, 2))
    with pytest.raises(InvalidInputError, match="shapes do not match"):
        lowrank_add(U, V, U, np.ones((3, 1)), 1.0, 0.1)
    with pytest.raises(InvalidInputError, match="shapes do not match"):
        lowrank_add(U, V, np.ones((5, 2)), V, 1.0, 0.1)
    with pytest.raises(InvalidInputError, match="share one dtype"):
        lowrank_add(U, V, U.astype(np.float32), V, 1.0, 0.1)
    with pytest.raises(InvalidInputError, match="alpha is complex"):
        lowrank_add(U, V, U, V, 1j, 0.1)
    with pytest.raises(InvalidInputError, match="alpha must be finite"):
        lowrank_add(U, V, U, V, np.inf, 0.1)
    # InvalidInputError is a ValueError, as numpy users expect of bad arguments.
    with pytest.raises(ValueError):
        lowrank_compress(A, -1.0)


def test_empty_tiles():
    for shape in ((0, 5), (5, 0), (0, 0)):
        for method in METHODS:
            U, V = lowrank_compress(np.zeros(shape), 0.1, method=method)
            assert U.shape == (shape[0], 0) and V.shape == (shape[1], 0)


# ------------------------------------------------------------------------- property


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    m=st.integers(1, 40),
    n=st.integers(1, 40),
    rank=st.integers(0, 40),
    noise_exp=st.floats(-3, 1),
    rel_exp=st.floats(-6, -1),
    dtype=st.sampled_from(DTYPES),
    method=st.sampled_from(METHODS),
    seed=st.integers(0, 2**32 - 1),
)
def test_property_tolerance_met_and_rank_near_optimal(
    m, n, rank, noise_exp, rel_exp, dtype, method, seed
):
    """Any shape, rank and tolerance: ‖A - UVᴴ‖_F ≤ tol, no rank below the optimum (by
    Eckart-Young, checked inside), the SVD at the optimum, the others near it; the sum
    of two compressed tiles recompressed within tol of the dense sum."""
    rng = np.random.default_rng(seed)
    rel = max(10**rel_exp, 100 * eps(dtype))
    A0 = tile(rng, m, n, rank, dtype)
    scale = max(np.linalg.norm(wide(A0)), 1.0)
    tol = rel * scale
    A = tile(np.random.default_rng(seed), m, n, rank, dtype, noise=tol * 10**noise_exp)
    low, high = rank_bounds(A, tol, method)
    assert low <= compress(A, tol, method, seed=seed) <= high
    # The same tile split in two, each compressed, the sum recompressed.
    B = tile(rng, m, n, max(rank // 2, 1), dtype)
    P = lowrank_compress(A, tol / 4, method="svd")
    Q = lowrank_compress(B, tol / 4, method="svd")
    out = lowrank_add(*P, *Q, -0.5, tol / 2, method=method, seed=seed)
    check_sum(dense_sum(*P, *Q, -0.5), *out, tol / 2, dtype)
    # P and Q each carry up to tol/4 of error, the sum tol/2: within tol of A - B/2.
    U, V = wide(out[0]), wide(out[1])
    S = wide(A) - 0.5 * wide(B)
    assert np.linalg.norm(S - U @ V.conj().T) <= tol + rounding(A) + rounding(B)
