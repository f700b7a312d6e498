"""Tests of the generated test problems in :mod:`pastixpy.gallery`."""

import numpy as np
import pytest
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from pastixpy.gallery import (
    _elasticity_stiffness,
    _hex8_stiffness,
    convection_diffusion3d,
    elasticity3d,
    helmholtz2d,
    helmholtz3d,
    laplacian,
    saddle_point,
)


def pattern(A):
    """The stored pattern (explicit zeros included) as a 0/1 CSC matrix."""
    A = sp.csc_array(A)
    return sp.csc_array((np.ones(A.nnz), A.indices, A.indptr), shape=A.shape)


def same_pattern(A, B):
    return abs(pattern(A) - pattern(B)).nnz == 0


def rigid_body_modes(shape):
    """The 6 rigid-body displacements of the unclamped node grid, as columns."""
    nx, ny, nz = shape
    x, y, z = (c.ravel().astype(float) for c in np.indices((nx + 1, ny + 1, nz + 1)))
    one, zero = np.ones_like(x), np.zeros_like(x)
    fields = [
        (one, zero, zero),
        (zero, one, zero),
        (zero, zero, one),
        (zero, -z, y),
        (z, zero, -x),
        (-y, x, zero),
    ]
    return np.column_stack([np.stack(f, axis=1).ravel() for f in fields])


# --- the existing generators stay as they were ---------------------------------------


def test_laplacian_unchanged():
    A = laplacian((3, 4))
    assert A.format == "csc" and A.shape == (12, 12)
    assert np.array_equal(A.diagonal(), np.full(12, 4.0))
    assert A.nnz == 12 + 2 * (2 * 4 + 3 * 3)


# --- elasticity3d ------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_elasticity_shape_dtype(dtype):
    A = elasticity3d((2, 3, 4), dtype=dtype)
    assert isinstance(A, sp.csc_array)
    assert A.dtype == dtype
    assert A.shape == (3 * 2 * 4 * 5, 3 * 2 * 4 * 5)
    assert A.has_sorted_indices and A.has_canonical_format


def test_element_stiffness_rigid_modes():
    Ke = _hex8_stiffness(E=2.0, nu=0.25)
    assert np.array_equal(Ke, Ke.T)
    w = np.linalg.eigvalsh(Ke)
    assert np.sum(np.abs(w) < 1e-12 * w.max()) == 6
    assert np.all(w[6:] > 1e-3 * w.max())
    assert np.allclose(Ke @ rigid_body_modes((1, 1, 1)), 0, atol=1e-13)


def test_elasticity_spd_and_symmetric():
    A = elasticity3d((2, 2, 3), E=3.0, nu=0.35)
    assert abs(A - A.T).nnz == 0 or abs(A - A.T).max() == 0
    w = np.linalg.eigvalsh(A.toarray())
    assert w.min() > 0
    assert w.min() > 1e-6 * w.max()


def test_elasticity_unclamped_has_six_rigid_modes():
    shape = (2, 2, 2)
    K = _elasticity_stiffness(shape, clamp=False)
    assert K.shape == (81, 81)
    w = np.linalg.eigvalsh(K.toarray())
    tol = 1e-10 * w.max()
    assert np.sum(np.abs(w) < tol) == 6
    assert np.all(w > -tol)
    assert np.allclose(K @ rigid_body_modes(shape), 0, atol=1e-12)


def test_elasticity_three_dofs_per_node():
    shape = (3, 3, 3)
    A = elasticity3d(shape)
    n_nodes = A.shape[0] // 3
    assert A.shape[0] == 3 * n_nodes == 3 * 3 * 4 * 4
    # Every stored entry belongs to a full 3x3 node block.
    agg = sp.kron(sp.eye_array(n_nodes), np.ones((1, 3)), format="csr")
    nodes = pattern(agg @ pattern(A) @ agg.T)
    assert A.nnz == 9 * nodes.nnz
    # 27-point node graph: an interior node is coupled to its 27 neighbors (itself
    # included); a node on the clamped-side neighbor layer loses 9 of them.
    counts = np.diff(nodes.indptr).reshape(3, 4, 4)
    assert counts[1, 1, 1] == 27
    assert counts[0, 1, 1] == 18
    assert counts[2, 0, 0] == 8


def test_elasticity_patch_test():
    """A uniform strain gives no force at interior nodes and the exact face traction."""
    E, nu = 2.5, 0.3
    lam = E * nu / ((1 + nu) * (1 - 2 * nu))
    mu = E / (2 * (1 + nu))
    shape = (3, 2, 4)
    nx, ny, nz = shape
    K = _elasticity_stiffness(shape, E=E, nu=nu, clamp=False)
    x = np.indices((nx + 1, ny + 1, nz + 1))[0].ravel().astype(float)
    u = np.zeros((x.size, 3))
    u[:, 0] = x  # u_x = x: strain e_xx = 1, so sigma_xx = lam + 2 mu
    f = (K @ u.ravel()).reshape(nx + 1, ny + 1, nz + 1, 3)
    assert np.allclose(f[1:-1, 1:-1, 1:-1], 0, atol=1e-12)
    assert np.isclose(f[-1, :, :, 0].sum(), (lam + 2 * mu) * ny * nz)
    assert np.isclose(f[0, :, :, 0].sum(), -(lam + 2 * mu) * ny * nz)
    assert np.isclose(f[..., 1].sum(), 0, atol=1e-12)


def test_elasticity_solvable():
    A = elasticity3d((3, 2, 2))
    b = np.ones(A.shape[0])
    x = spla.splu(A).solve(b)
    assert np.linalg.norm(A @ x - b) < 1e-10 * np.linalg.norm(b)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"shape": (0, 2, 2)}, "positive"),
        ({"shape": (2, 2)}, "3 entries"),
        ({"shape": (2, 2, 2), "E": 0.0}, "E must be positive"),
        ({"shape": (2, 2, 2), "nu": 0.5}, "nu"),
        ({"shape": (2, 2, 2), "dtype": np.int64}, "floating"),
    ],
)
def test_elasticity_errors(kwargs, match):
    with pytest.raises(ValueError, match=match):
        elasticity3d(**kwargs)


# --- helmholtz2d -------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_helmholtz_shape_dtype(dtype):
    A = helmholtz2d(7, dtype=dtype)
    assert isinstance(A, sp.csc_array)
    assert A.dtype == dtype and A.shape == (49, 49)


def test_helmholtz_complex_symmetric_not_hermitian():
    A = helmholtz2d(8, ppw=6)
    assert abs(A - A.T).max() == 0
    assert abs(A - A.conj().T).max() > 0
    assert np.any(A.diagonal().imag != 0)


def test_helmholtz_values():
    n, ppw = 9, 10
    A = helmholtz2d(n, ppw=ppw)
    h = 1 / (n + 1)
    k = 2 * np.pi / (ppw * h)
    d = A.diagonal().reshape(n, n)
    assert np.isclose(d[4, 4], 4 / h**2 - k**2)
    robin = 1 / (1 - 1j * k * h) / h**2
    assert np.isclose(d[0, 4], 4 / h**2 - k**2 - robin)
    assert np.isclose(d[0, 0], 4 / h**2 - k**2 - 2 * robin)
    assert np.all(A.diagonal().imag <= 0)
    off = A - sp.diags_array(A.diagonal())
    assert np.allclose(off.data, -1 / h**2)


def test_helmholtz3d_values_and_pattern():
    n, ppw = 7, 10
    A = helmholtz3d(n, ppw=ppw)
    assert same_pattern(A, laplacian((n, n, n)))
    assert abs(A - A.T).max() == 0 and abs(A - A.conj().T).max() > 0
    h = 1 / (n + 1)
    k = 2 * np.pi / (ppw * h)
    d = A.diagonal().reshape(n, n, n)
    robin = 1 / (1 - 1j * k * h) / h**2
    assert np.isclose(d[3, 3, 3], 6 / h**2 - k**2)
    assert np.isclose(d[0, 3, 3], 6 / h**2 - k**2 - robin)
    assert np.isclose(d[0, 0, 0], 6 / h**2 - k**2 - 3 * robin)
    off = A - sp.diags_array(A.diagonal())
    assert np.allclose(off.data, -1 / h**2)


def test_helmholtz_five_point_pattern():
    A = helmholtz2d(6)
    assert same_pattern(A, laplacian((6, 6)))


@pytest.mark.parametrize("n, ppw", [(5, 10), (12, 4), (20, 10)])
def test_helmholtz_nonsingular(n, ppw):
    A = helmholtz2d(n, ppw=ppw)
    b = np.ones(n * n, dtype=complex)
    x = spla.splu(A).solve(b)
    assert np.linalg.norm(A @ x - b) < 1e-10 * np.linalg.norm(A.toarray(), 2) * np.linalg.norm(x)
    assert np.linalg.svd(A.toarray(), compute_uv=False).min() > 0


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"n": 0}, "positive integer"),
        ({"n": 2.5}, "positive integer"),
        ({"n": 4, "ppw": 0}, "ppw"),
        ({"n": 4, "dtype": np.float64}, "complex"),
    ],
)
def test_helmholtz_errors(kwargs, match):
    with pytest.raises(ValueError, match=match):
        helmholtz2d(**kwargs)


# --- convection_diffusion3d --------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_convection_shape_dtype(dtype):
    A = convection_diffusion3d(4, dtype=dtype)
    assert isinstance(A, sp.csc_array)
    assert A.dtype == dtype and A.shape == (64, 64)


@pytest.mark.parametrize("wind", ["rotating", "constant"])
def test_convection_unsymmetric_values_symmetric_pattern(wind):
    A = convection_diffusion3d(5, peclet=50.0, wind=wind)
    assert abs(A - A.T).max() > 1e-3
    assert same_pattern(A, A.T)
    assert same_pattern(A, laplacian((5, 5, 5)))
    assert np.all(A.data != 0)


@pytest.mark.parametrize("wind", ["rotating", "constant"])
@pytest.mark.parametrize("peclet", [1.0, 100.0, 1e4])
def test_convection_m_matrix_nonsingular(wind, peclet):
    A = convection_diffusion3d(6, peclet=peclet, wind=wind)
    d = A.diagonal()
    off = A - sp.diags_array(d)
    assert np.all(off.data < 0)
    assert np.all(d >= -off.sum(axis=1) - 1e-12 * d)
    b = np.ones(A.shape[0])
    x = spla.splu(A).solve(b)
    assert np.linalg.norm(A @ x - b) < 1e-10 * np.linalg.norm(b)
    assert np.all(x > 0)  # inverse of a nonsingular M-matrix is nonnegative


@pytest.mark.parametrize("wind", ["rotating", "constant"])
def test_convection_reduces_to_laplacian(wind):
    A = convection_diffusion3d(4, peclet=0.0, wind=wind)
    L = laplacian((4, 4, 4))
    assert same_pattern(A, L)
    assert abs(A - L).max() == 0


def test_convection_upwind_direction():
    n, peclet = 5, 30.0
    h = 1 / (n + 1)
    A = convection_diffusion3d(n, peclet=peclet, wind="constant").toarray()
    b = h * peclet / np.sqrt(3)
    p = np.ravel_multi_index((2, 2, 2), (n, n, n))
    for stride in (n * n, n, 1):
        assert np.isclose(A[p, p - stride], -1 - b)  # upstream neighbor
        assert np.isclose(A[p, p + stride], -1)
    assert np.isclose(A[p, p], 6 + 3 * b)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"n": 0}, "positive integer"),
        ({"n": 3, "peclet": -1.0}, "peclet"),
        ({"n": 3, "wind": "swirl"}, "wind"),
        ({"n": 3, "dtype": np.int32}, "floating"),
    ],
)
def test_convection_errors(kwargs, match):
    with pytest.raises(ValueError, match=match):
        convection_diffusion3d(**kwargs)


# --- saddle_point ------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_saddle_shape_dtype(dtype):
    A = saddle_point((4, 5), dtype=dtype)
    assert isinstance(A, sp.csc_array)
    assert A.dtype == dtype and A.shape == (60, 60)
    assert saddle_point((2, 3, 4)).shape == (4 * 24, 4 * 24)


@pytest.mark.parametrize("shape", [(3, 4), (5, 5), (2, 3, 3), (3, 3, 3)])
def test_saddle_symmetric_inertia(shape):
    A = saddle_point(shape)
    assert abs(A - A.T).max() == 0
    N, d = int(np.prod(shape)), len(shape)
    w = np.linalg.eigvalsh(A.toarray())
    tol = 1e-10 * np.abs(w).max()
    assert np.sum(w > tol) == d * N
    assert np.sum(w < -tol) == N
    assert np.abs(w).min() > tol


def test_saddle_blocks():
    shape = (4, 3)
    N = 12
    A = saddle_point(shape).toarray()
    K, B, Z = A[: 2 * N, : 2 * N], A[2 * N :, : 2 * N], A[2 * N :, 2 * N :]
    assert np.all(Z == 0)
    assert np.linalg.eigvalsh(K).min() > 0
    assert np.linalg.matrix_rank(B) == N
    assert np.allclose(B.sum(axis=0)[:N].reshape(shape)[1:], 0)  # differences sum to zero


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"shape": (3,)}, "2 or 3"),
        ({"shape": (3, 0)}, "positive"),
        ({"shape": (3, 3), "dtype": np.int64}, "floating"),
    ],
)
def test_saddle_errors(kwargs, match):
    with pytest.raises(ValueError, match=match):
        saddle_point(**kwargs)
