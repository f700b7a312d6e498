"""Generated test problems: finite-difference Laplacians and multi-dof variants, FEM
elasticity, Helmholtz, convection-diffusion, a saddle point; and :data:`PROBLEMS`, the one
registry of them by name, used by the CLI's ``--example``, the tests and the benchmarks.
"""

from collections.abc import Callable
from dataclasses import dataclass
from numbers import Integral

import numpy as np
import scipy.sparse as sp

from ._checks import _check_dtype, _check_shape, _check_size
from .family import HELMHOLTZ_FAMILY, HELMHOLTZ_FAMILY_2D, HELMHOLTZ_FAMILY_3D, helmholtz_family
from .helmholtz import (
    HelmholtzProblem,
    helmholtz2d,
    helmholtz3d,
    helmholtz_fd,
    helmholtz_problem,
)
from .media import grf_velocity, marmousi_velocity, wedge_velocity

__all__ = [
    "HELMHOLTZ_FAMILY",
    "HELMHOLTZ_FAMILY_2D",
    "HELMHOLTZ_FAMILY_3D",
    "PROBLEMS",
    "HelmholtzProblem",
    "Problem",
    "convection_diffusion3d",
    "elasticity3d",
    "grf_velocity",
    "helmholtz2d",
    "helmholtz3d",
    "helmholtz_family",
    "helmholtz_fd",
    "helmholtz_problem",
    "laplacian",
    "marmousi_velocity",
    "problem",
    "saddle_point",
    "vector_laplacian",
    "wedge_velocity",
]


def laplacian(shape, dtype=np.float64):
    """Finite-difference Laplacian with Dirichlet boundaries on a regular grid.

    5-point in 2D, 7-point in 3D (and the 3-point stencil in 1D); symmetric
    positive definite, in CSC format.

    Parameters
    ----------
    shape : tuple of int
        Grid points per dimension, e.g. ``(60, 60, 60)``.

    Examples
    --------
    >>> laplacian((3, 3)).diagonal()
    array([4., 4., 4., 4., 4., 4., 4., 4., 4.])
    """
    shape = tuple(int(s) for s in shape)
    if not shape or min(shape) < 1:
        raise ValueError(f"grid shape must have positive sizes, got {shape}")
    ops = []
    for axis, m in enumerate(shape):
        t = sp.diags_array(
            [-np.ones(m - 1), 2 * np.ones(m), -np.ones(m - 1)], offsets=[-1, 0, 1], dtype=dtype
        )
        term = sp.eye_array(1, dtype=dtype)
        for other, s in enumerate(shape):
            term = sp.kron(term, t if other == axis else sp.eye_array(s, dtype=dtype))
        ops.append(term)
    return sp.csc_array(sum(ops[1:], ops[0]))


def vector_laplacian(shape, dofs=3, coupling=0.25, dtype=np.float64):
    """A multi-dof SPD operator: ``dofs`` unknowns per grid node, fully coupled.

    Kronecker product of the scalar :func:`laplacian` with a dense SPD
    ``dofs x dofs`` block (ones on the diagonal, ``coupling`` elsewhere), ordered
    node by node like the unknowns of a linear-elasticity FEM matrix: the
    graph has groups of ``dofs`` indistinguishable vertices.
    """
    block = np.full((dofs, dofs), coupling, dtype=dtype) + (1 - coupling) * np.eye(dofs)
    return sp.csc_array(sp.kron(laplacian(shape, dtype), sp.csr_array(block)))


# --------------------------------------------------------------------------------------
# Realistic test problems: elasticity, convection-diffusion, saddle point (Helmholtz:
# helmholtz.py).
# --------------------------------------------------------------------------------------


def _hex8_stiffness(E=1.0, nu=0.3):
    """Stiffness of one unit-cube trilinear (Q1) hexahedron, 24 x 24, float64.

    Isotropic linear elasticity, 2x2x2 Gauss quadrature (exact for this element on
    a cube). Local node ``a`` sits at corner ``np.indices((2, 2, 2)).reshape(3, -1)[:, a]``
    (C order, x slowest); its 3 unknowns are ``3a, 3a+1, 3a+2`` (x, y, z displacement).
    """
    lam = E * nu / ((1 + nu) * (1 - 2 * nu))
    mu = E / (2 * (1 + nu))
    D = lam * np.outer([1, 1, 1, 0, 0, 0], [1, 1, 1, 0, 0, 0]) + mu * np.diag(
        [2.0, 2.0, 2.0, 1.0, 1.0, 1.0]
    )
    corners = np.indices((2, 2, 2)).reshape(3, -1).T  # (8 nodes, 3)
    sgn = 2.0 * corners - 1.0  # reference coordinates of the nodes, in {-1, 1}
    gauss = sgn / np.sqrt(3.0)  # the 8 Gauss points, weights 1
    lin = 1.0 + gauss[:, None, :] * sgn[None, :, :]  # (gauss, node, axis)
    # dN_a/dxi_d = sgn[a, d] / 8 * prod_{e != d} lin[g, a, e]; dx/dxi = 1/2 on a unit cube.
    grad = np.empty((8, 8, 3))
    for d in range(3):
        others = [e for e in range(3) if e != d]
        grad[:, :, d] = 2.0 * sgn[None, :, d] / 8.0 * lin[:, :, others[0]] * lin[:, :, others[1]]
    gx, gy, gz = grad[..., 0], grad[..., 1], grad[..., 2]
    zero = np.zeros_like(gx)
    # Strain-displacement matrix, Voigt order (xx, yy, zz, yz, xz, xy): (gauss, 6, node, 3).
    B = np.stack(
        [
            np.stack([gx, zero, zero], axis=-1),
            np.stack([zero, gy, zero], axis=-1),
            np.stack([zero, zero, gz], axis=-1),
            np.stack([zero, gz, gy], axis=-1),
            np.stack([gz, zero, gx], axis=-1),
            np.stack([gy, gx, zero], axis=-1),
        ],
        axis=1,
    ).reshape(8, 6, 24)
    detJ = 1.0 / 8.0
    Ke = detJ * np.einsum("gik,ij,gjl->kl", B, D, B)
    return 0.5 * (Ke + Ke.T)


def _elasticity_stiffness(shape, E=1.0, nu=0.3, dtype=np.float64, clamp=True):
    """Assembled Q1 elasticity stiffness; ``clamp=False`` keeps the 6 rigid-body modes."""
    nx, ny, nz = _check_shape(shape, (3,))
    if not E > 0:
        raise ValueError(f"Young's modulus E must be positive, got {E}")
    if not -1.0 < nu < 0.5:
        raise ValueError(f"Poisson's ratio nu must lie in (-1, 0.5), got {nu}")
    dt = _check_dtype(dtype, "real")
    Ke = _hex8_stiffness(E, nu)
    sy, sx = nz + 1, (ny + 1) * (nz + 1)  # node strides of the (nx+1, ny+1, nz+1) node grid
    n_dofs = 3 * (nx + 1) * sx
    idx = np.int32 if n_dofs < 2**31 else np.int64
    i, j, k = np.meshgrid(
        np.arange(nx, dtype=idx), np.arange(ny, dtype=idx), np.arange(nz, dtype=idx), indexing="ij"
    )
    first = (i * sx + j * sy + k).ravel()  # lowest node of each element
    corners = np.indices((2, 2, 2)).reshape(3, -1)
    offsets = (corners[0] * sx + corners[1] * sy + corners[2]).astype(idx)
    nodes = first[:, None] + offsets[None, :]  # (elements, 8)
    dofs = (3 * nodes[:, :, None] + np.arange(3, dtype=idx)).reshape(-1, 24)
    rows = np.repeat(dofs, 24, axis=1).ravel()
    cols = np.tile(dofs, (1, 24)).ravel()
    vals = np.broadcast_to(Ke.astype(dt).ravel(), (dofs.shape[0], 576)).ravel()
    K = sp.coo_array((vals, (rows, cols)), shape=(n_dofs, n_dofs)).tocsc()
    if clamp:
        start = 3 * sx  # the nodes of the face x = 0 come first
        K = K[start:, start:]
    K.sum_duplicates()
    # Duplicates are summed in an unspecified order, so K and K.T may differ by rounding:
    # average them (a + b == b + a exactly) to make K exactly symmetric. The pattern is
    # symmetric, so the canonical CSC of K.T has the same indptr/indices as K.
    Kt = sp.csc_array(K.T)
    Kt.sort_indices()
    assert np.array_equal(Kt.indptr, K.indptr) and np.array_equal(Kt.indices, K.indices)
    K.data = (K.data + Kt.data) * dt.type(0.5)
    # Couplings that cancel between neighboring elements are rounding noise: make them
    # exact zeros, but keep them stored so that every node pair has a full 3x3 block.
    K.data[np.abs(K.data) < 1e-12 * np.abs(Ke).max()] = 0
    return sp.csc_array(K)


def elasticity3d(shape, *, E=1.0, nu=0.3, dtype=np.float64):
    """3D linear elasticity, trilinear hexahedra on a box, clamped on the face x = 0.

    Q1 (8-node, trilinear) finite elements on a regular grid of ``nx x ny x nz``
    unit cubes; isotropic material with Young's modulus ``E`` and Poisson's ratio
    ``nu`` (Lamé parameters ``lambda = E nu / ((1 + nu)(1 - 2 nu))``,
    ``mu = E / (2 (1 + nu))``). The 24 x 24 element stiffness is computed once by
    2x2x2 Gauss quadrature and all elements are assembled in one vectorized COO
    build. There are 3 unknowns per node (x, y, z displacement), ordered node by
    node; nodes are numbered in C order of the ``(nx+1, ny+1, nz+1)`` node grid
    (x slowest). The ``(ny+1)(nz+1)`` nodes of the face x = 0 are clamped: their
    rows and columns are removed, which makes the matrix symmetric positive
    definite of order ``3 nx (ny+1) (nz+1)``. The stored pattern has a full 3 x 3
    block for every pair of nodes sharing an element (27-point node graph, groups
    of 3 indistinguishable unknowns); couplings that cancel exactly between
    neighboring elements are kept as explicit zeros.

    Parameters
    ----------
    shape : tuple of 3 int
        Number of elements per direction ``(nx, ny, nz)``; e.g. ``(30, 30, 30)``
        gives 86,490 unknowns and ``(40, 40, 40)`` gives 201,720.
    E : float, optional
        Young's modulus, > 0.
    nu : float, optional
        Poisson's ratio, in (-1, 0.5).
    dtype : numpy dtype, optional
        Floating-point type of the values (float32 or float64).

    Returns
    -------
    scipy.sparse.csc_array
        The SPD stiffness matrix.

    Examples
    --------
    >>> A = elasticity3d((2, 2, 2))
    >>> A.shape
    (54, 54)
    >>> bool(abs(A - A.T).max() < 1e-14)
    True
    """
    return _elasticity_stiffness(shape, E=E, nu=nu, dtype=dtype, clamp=True)


def _wind(points, peclet, wind):
    """The convection velocity at ``points`` (shape (3, ...)), as 3 arrays."""
    x, y, z = points
    if wind == "constant":
        c = peclet / np.sqrt(3.0)
        return np.full_like(x, c), np.full_like(y, c), np.full_like(z, c)
    # Rotation about the vertical axis through the center of the cube.
    return 2.0 * peclet * (0.5 - y), 2.0 * peclet * (x - 0.5), np.zeros_like(z)


def convection_diffusion3d(n, *, peclet=100.0, wind="rotating", dtype=np.float64):
    """3D convection-diffusion ``-Δu + β·∇u`` on the unit cube, upwind, Dirichlet.

    7-point finite differences on the ``n³`` interior points of the grid of step
    ``h = 1 / (n + 1)``, unknowns in C order (x slowest, as in :func:`laplacian`),
    homogeneous Dirichlet boundary. The convection term is discretized by
    first-order **upwind** differences (backward where ``β_d > 0``, forward where
    ``β_d < 0``), so the matrix is an irreducibly diagonally dominant M-matrix,
    hence nonsingular, for every ``peclet``; its values are unsymmetric but its
    pattern is the symmetric 7-point pattern (the diffusion part keeps every
    off-diagonal entry <= -1). The matrix is scaled by ``h²``: with
    ``peclet=0`` it is exactly ``laplacian((n, n, n))``.

    Parameters
    ----------
    n : int
        Interior points per direction, >= 1.
    peclet : float, optional
        Wind magnitude ``|β|`` (>= 0). With ``wind="constant"``,
        ``β = peclet (1, 1, 1) / √3``; with ``wind="rotating"``,
        ``β = 2 peclet (1/2 - y, x - 1/2, 0)``, a rotation about the vertical axis
        through the centre (``|β| = peclet`` at distance 1/2 from the axis).
    wind : {"rotating", "constant"}, optional
        The wind field.
    dtype : numpy dtype, optional
        Floating-point type of the values (float32 or float64).

    Returns
    -------
    scipy.sparse.csc_array
        The unsymmetric, nonsingular matrix of order ``n³``.

    Examples
    --------
    >>> A = convection_diffusion3d(3, peclet=10.0)
    >>> A.shape, bool(abs(A - A.T).max() > 0)
    ((27, 27), True)
    """
    n = _check_size(n)
    if not peclet >= 0 or not np.isfinite(peclet):
        raise ValueError(f"peclet must be a finite non-negative number, got {peclet}")
    if wind not in ("rotating", "constant"):
        raise ValueError(f"wind must be 'rotating' or 'constant', got {wind!r}")
    dt = _check_dtype(dtype, "real")
    h = 1.0 / (n + 1)
    N = n**3
    grid = np.indices((n, n, n))  # (3, n, n, n): the index of each point along each axis
    beta = _wind((grid + 1) * h, peclet, wind)
    ids = np.arange(N, dtype=np.int32 if N < 2**31 else np.int64).reshape(n, n, n)
    diag = np.full((n, n, n), 6.0)
    rows, cols, vals = [], [], []
    for axis in range(3):
        b = h * beta[axis]
        diag += np.abs(b)
        stride = n ** (2 - axis)
        lo = grid[axis] > 0  # has a neighbor at -stride
        hi = grid[axis] < n - 1  # has a neighbor at +stride
        rows += [ids[lo], ids[hi]]
        cols += [ids[lo] - stride, ids[hi] + stride]
        vals += [-1.0 - np.maximum(b[lo], 0.0), -1.0 - np.maximum(-b[hi], 0.0)]
    rows.append(ids.ravel())
    cols.append(ids.ravel())
    vals.append(diag.ravel())
    A = sp.coo_array(
        (np.concatenate(vals).astype(dt), (np.concatenate(rows), np.concatenate(cols))),
        shape=(N, N),
    ).tocsc()
    A.sum_duplicates()
    A.sort_indices()
    return sp.csc_array(A)


def saddle_point(shape, *, dtype=np.float64):
    """Symmetric indefinite KKT (Stokes-like) matrix ``[[K, Bᵀ], [B, 0]]`` on a grid.

    For a 2D or 3D grid of ``N = prod(shape)`` points and ``d = len(shape)``:

    * ``K = I_d ⊗ laplacian(shape)``: the SPD vector Laplacian of a
      ``d``-component velocity, component by component (all x-velocities, then
      all y-velocities, ...), order ``n_K = d N``;
    * ``B = [D_1, ..., D_d]``: a discrete divergence, ``(B u)_p = Σ_a
      (u_a(p + e_a) - u_a(p))`` with forward differences along each axis and the
      velocity taken as zero beyond the last point (a staggered, MAC-like
      placement), order ``n_B = N``. ``D_1`` is triangular with ``-1`` on its
      diagonal, so ``B`` has full row rank.

    Hence the matrix is nonsingular with inertia exactly ``(n_K, n_B, 0)``:
    ``d N`` positive and ``N`` negative eigenvalues, none zero. The zero
    (2,2) block makes it need pivoting (or a regularization) in an LDLᵀ solver.
    Order ``(d + 1) N``; unknowns are ordered velocities first, then the ``N``
    constraint multipliers (pressures).

    Parameters
    ----------
    shape : tuple of 2 or 3 int
        Grid points per dimension, e.g. ``(50, 50)`` or ``(20, 20, 20)``.
    dtype : numpy dtype, optional
        Floating-point type of the values (float32 or float64).

    Returns
    -------
    scipy.sparse.csc_array
        The symmetric indefinite matrix.

    Examples
    --------
    >>> A = saddle_point((3, 4))
    >>> A.shape
    (36, 36)
    >>> w = np.linalg.eigvalsh(A.toarray())
    >>> int((w > 0).sum()), int((w < 0).sum())
    (24, 12)
    """
    shape = _check_shape(shape, (2, 3))
    dt = _check_dtype(dtype, "real")
    d = len(shape)
    K = sp.kron(sp.eye_array(d), laplacian(shape, np.float64))
    blocks = []
    for axis, m in enumerate(shape):
        diff = sp.diags_array([-np.ones(m), np.ones(m - 1)], offsets=[0, 1])
        term = sp.eye_array(1)
        for other, s in enumerate(shape):
            term = sp.kron(term, diff if other == axis else sp.eye_array(s))
        blocks.append(term)
    B = sp.hstack(blocks)
    A = sp.block_array([[K, B.T], [B, None]], format="csc").astype(dt)
    A.sum_duplicates()
    A.eliminate_zeros()
    A.sort_indices()
    return sp.csc_array(A)


# --------------------------------------------------------------------------------------
# The registry of problems: one name each, shared by the CLI's --example, the tests
# and the benchmarks.
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Problem:
    """A family of generated problems, built from a size.

    Attributes
    ----------
    name : str
        The name ``--example NAME:SIZE`` and :func:`problem` take.
    description : str
        What it is, with SIZE standing for the size.
    dims : int
        Grid dimensions: a size is one integer (the same along each) or ``dims`` of them.
    structure : str
        ``"spd"``, ``"sym"`` (symmetric indefinite), ``"csym"`` (complex symmetric) or
        ``"unsym"``: which factorization it calls for.
    build : callable
        ``build(shape)`` with ``shape`` a tuple of ``dims`` ints.
    family : str or None
        ``"helmholtz"`` for the members of the Helmholtz family
        (:data:`HELMHOLTZ_FAMILY`), whose size is the wavenumber k; the CLI's help lists
        them apart.
    """

    name: str
    description: str
    dims: int
    structure: str
    build: Callable
    family: str | None = None

    def __call__(self, size):
        """The matrix of this size: an int (the same along each dimension) or a tuple."""
        shape = (int(size),) * self.dims if isinstance(size, Integral) else tuple(size)
        if len(shape) != self.dims or min(shape) < 1:
            raise ValueError(f"{self.name} takes {self.dims} positive sizes, got {size!r}")
        return self.build(shape)


PROBLEMS = {
    p.name: p
    for p in (
        Problem("lap1d", "1D 3-point Laplacian, SIZE unknowns", 1, "spd", laplacian),
        Problem("lap2d", "2D 5-point Laplacian, SIZE² unknowns", 2, "spd", laplacian),
        Problem("lap3d", "3D 7-point Laplacian, SIZE³ unknowns", 3, "spd", laplacian),
        Problem(
            "vlap3d",
            "3 coupled unknowns per node of a SIZE³ grid (a vector Laplacian)",
            3,
            "spd",
            vector_laplacian,
        ),
        Problem(
            "elast3d",
            "3D linear elasticity, SIZE³ trilinear hexahedra, clamped on one face",
            3,
            "spd",
            elasticity3d,
        ),
        Problem(
            "helmholtz2d",
            "2D Helmholtz, SIZE² points, 10 per wavelength, absorbing boundary (complex)",
            1,
            "csym",
            lambda shape: helmholtz2d(shape[0], ppw=10),
        ),
        Problem(
            "helmholtz3d",
            "3D Helmholtz, SIZE³ points, 10 per wavelength, absorbing boundary (complex)",
            1,
            "csym",
            lambda shape: helmholtz3d(shape[0], ppw=10),
        ),
        Problem(
            "wedge2d",
            "2D Helmholtz, wedge medium (velocities 1.5/1.0/2.0), SIZE² points, 10 per "
            "wavelength in the slowest layer, absorbing boundary (complex)",
            1,
            "csym",
            lambda shape: helmholtz_fd(2 * np.pi * (shape[0] + 1) / 10, medium="wedge").A,
        ),
        Problem(
            "convdiff3d",
            "3D convection-diffusion, SIZE³ points, Péclet 100, upwind (unsymmetric)",
            1,
            "unsym",
            lambda shape: convection_diffusion3d(shape[0]),
        ),
        Problem(
            "saddle2d",
            "2D Stokes-like KKT matrix on a SIZE² grid (symmetric indefinite)",
            2,
            "sym",
            saddle_point,
        ),
    )
}
# The Helmholtz family, SIZE being the (largest) wavenumber k.
PROBLEMS.update(
    (m.name, Problem(m.name, m.description, 1, "csym", lambda s, m=m: m(s[0]).A, "helmholtz"))
    for m in HELMHOLTZ_FAMILY.values()
)


def problem(spec, size=None):
    """The matrix of a registered problem: ``problem("lap3d:40")``, ``problem("lap3d", 40)``
    or ``problem("lap2d", (12, 9))``; ``"NAME:AxB"`` gives a shape too.

    Examples
    --------
    >>> problem("lap2d:3").shape
    (9, 9)
    >>> problem("elast3d", (2, 1, 1)).shape
    (24, 24)
    >>> problem("helm2d-p1c-pml-marm:8").shape  # a Helmholtz family member at k = 8
    (1024, 1024)
    """
    name = spec
    if size is None:
        name, _, text = spec.partition(":")
        try:
            parts = tuple(int(t) for t in text.split("x"))
        except ValueError:
            parts = ()
        size = parts[0] if len(parts) == 1 else parts
    if name not in PROBLEMS:
        known = ", ".join(k for k, p in PROBLEMS.items() if p.family is None)
        raise ValueError(
            f"unknown problem {name!r}; known: {known} and the Helmholtz family "
            "(HELMHOLTZ_FAMILY: helm2d-..., helm3d-...)"
        )
    if size == () or size is None:
        raise ValueError(f"{name} needs a size, as in {name}:20")
    return PROBLEMS[name](size)
