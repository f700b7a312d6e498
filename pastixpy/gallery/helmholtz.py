"""Helmholtz test problems: the finite-difference matrices :func:`helmholtz2d`,
:func:`helmholtz3d` and :func:`helmholtz_fd`, and :func:`helmholtz_problem`, which makes
finite differences (2D, 3D) or P1/P2 finite elements (2D) with an absorbing boundary
condition or a perfectly matched layer, in constant, wedge, random or Marmousi-like media.

Time dependence is e^{−iωt}: waves leave through ``du/dn − i k u = 0`` or a layer stretched
by ``s = 1 + iσ/ω``, and every matrix is complex symmetric (``A == A.T``), not Hermitian.
"""

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from ._checks import _check_dtype, _check_size
from .fem import assemble, boundary_mass, triangle_mesh
from .media import grf_velocity, marmousi_velocity, wedge_velocity

#: The round-trip reflection coefficient the PML's quadratic profile is designed for,
#: ``exp(−2 σ_max L / (3 c))`` for the fastest velocity c on the physical boundary (the
#: slower waves are damped more); what the discrete layer achieves is limited by its
#: resolution (see the tests: a few percent at 10 points per wavelength and 1 wavelength).
PML_REFLECTION = 1e-4


def helmholtz2d(n, *, ppw=10, dtype=np.complex128):
    """2D Helmholtz ``-Δu - k²u`` on the unit square with an absorbing boundary.

    5-point finite differences on the ``n x n`` interior points of the grid of step
    ``h = 1 / (n + 1)``, unknowns in C order (x slowest); wavenumber
    ``k = 2π / (ppw h)`` so that a wavelength spans ``ppw`` grid steps. On the
    boundary, the first-order absorbing (Sommerfeld) condition
    ``du/dn - i k u = 0`` is discretized one-sidedly,
    ``(u_b - u_0) / h - i k u_b = 0``, and the boundary value
    ``u_b = u_0 / (1 - i k h)`` is eliminated from the stencil of the adjacent
    interior point. That only changes the diagonal, by ``-1 / (1 - i k h) / h²``
    per boundary side, so the matrix is complex symmetric (``A == A.T``) but not
    Hermitian. It is nonsingular: a null vector would vanish on the boundary rows
    (their diagonals have a nonzero imaginary part of one sign) and then, row by
    row through the 5-point stencil, everywhere. Order ``n²``; ``n = 500`` gives
    250,000 unknowns.

    Parameters
    ----------
    n : int
        Interior points per direction, >= 1.
    ppw : float, optional
        Points per wavelength, > 0 (about 10 is the usual accuracy rule of thumb).
    dtype : numpy dtype, optional
        Complex type of the values (complex64 or complex128).

    Returns
    -------
    scipy.sparse.csc_array
        The complex symmetric matrix.

    Examples
    --------
    >>> A = helmholtz2d(4)
    >>> A.shape, A.dtype
    ((16, 16), dtype('complex128'))
    >>> float(abs(A - A.T).max()), bool(abs(A - A.conj().T).max() > 0)
    (0.0, True)
    """
    return _helmholtz(n, 2, ppw, dtype)


def helmholtz3d(n, *, ppw=10, dtype=np.complex128):
    """3D Helmholtz ``-Δu - k²u`` on the unit cube with an absorbing boundary.

    The 7-point analogue of :func:`helmholtz2d` (same wavenumber rule, same
    first-order absorbing condition eliminated on each of the six faces): complex
    symmetric, not Hermitian, order ``n³``.

    Parameters
    ----------
    n : int
        Interior points per direction, >= 1.
    ppw : float, optional
        Points per wavelength, > 0.
    dtype : numpy dtype, optional
        complex64 or complex128.

    Returns
    -------
    scipy.sparse.csc_array

    Examples
    --------
    >>> A = helmholtz3d(3)
    >>> A.shape, float(abs(A - A.T).max())
    ((27, 27), 0.0)
    """
    return _helmholtz(n, 3, ppw, dtype)


def _helmholtz(n, dims, ppw, dtype):
    """The Helmholtz matrix of :func:`helmholtz2d` (dims 2) or :func:`helmholtz3d`: a
    Kronecker sum of the 1D absorbing second differences, shifted by -k²."""
    n = _check_size(n)
    if not ppw > 0:
        raise ValueError(f"ppw (points per wavelength) must be positive, got {ppw}")
    dt = _check_dtype(dtype, "complex")
    h = 1.0 / (n + 1)
    k = 2 * np.pi / (ppw * h)
    diag = np.full(n, 2.0, dtype=np.complex128)
    robin = 1.0 / (1.0 - 1j * k * h)
    diag[0] -= robin
    diag[-1] -= robin
    t = sp.diags_array(
        [-np.ones(n - 1), diag, -np.ones(n - 1)], offsets=[-1, 0, 1], dtype=np.complex128
    )
    eye = sp.eye_array(n, dtype=np.complex128)
    if dims == 2:
        A = sp.kron(t, eye) + sp.kron(eye, t)
    else:
        eye2 = sp.eye_array(n * n, dtype=np.complex128)
        A = sp.kron(t, eye2) + sp.kron(eye, sp.kron(t, eye)) + sp.kron(eye2, t)
    A = A / h**2 - k**2 * sp.eye_array(n**dims)
    A = sp.csc_array(A.astype(dt))
    A.sum_duplicates()
    A.sort_indices()
    return A


@dataclass(frozen=True)
class HelmholtzProblem:
    """A Helmholtz problem ``A u = b`` made by :func:`helmholtz_problem` or
    :func:`helmholtz_fd`.

    The unknowns are the nodes of a structured grid, in C order (x slowest, depth last):
    the interior points of the finite-difference grid, or the finite-element nodes
    (vertices and, for P2, edge midpoints), boundary nodes included with the absorbing
    boundary; with a PML, the grid covers the unit square (cube) and the layer around it,
    its outer boundary (Dirichlet) eliminated.

    Attributes
    ----------
    A : scipy.sparse.csc_array
        ``laplacian − mass_matrix``, complex symmetric.
    b : ndarray
        The unit point source at :attr:`source`: ``1 / h^dims`` (finite differences) or 1
        (finite elements, the load of a delta at a node); zeros with ``source=None``.
    laplacian : scipy.sparse.csc_array
        L: the discrete ``−Δ`` (the 5/7-point stencil, or the stiffness matrix), with the
        absorbing boundary terms (which depend on k at the boundary) or the PML's
        stretching.
    k : ndarray
        k(x) = ω / c(x) at each unknown (in the PML, the medium is extended constantly
        along the normal).
    omega : float
        The angular frequency, the ``k`` asked for: the velocities are relative to the
        slowest one.
    h : float
        The spacing of the grid of unknowns (for P2, half the element size).
    shape : tuple of int
        The grid of unknowns' shape.
    medium : str
        ``"constant"``, ``"wedge"``, ``"grf"``, ``"marmousi"`` or ``"callable"``.
    source : int
        Index of the source's unknown.
    ppw : float
        Points per wavelength at the largest k: ``2π / (omega h)``.
    discretization : str
        ``"fd"``, ``"p1"`` or ``"p2"``.
    mass : str or None
        ``"lumped"`` or ``"consistent"`` (finite elements); None for finite differences.
    boundary : str
        ``"abc"`` or ``"pml"``.
    seed : int or None
        The random field's seed (``medium="grf"``), else None.
    coordinates : ndarray, shape (n, dims)
        The unknowns' coordinates.
    mass_matrix : scipy.sparse.csc_array
        The mass term, ``M(k(x)² s)`` with s the PML's stretching product (1 outside it):
        diagonal for finite differences and lumped masses.
    layer : float
        The PML's thickness (0 with the absorbing boundary condition).
    element_size : float
        The finite elements' size (a leg of the right triangles); h for finite
        differences.
    """

    A: object
    b: np.ndarray
    laplacian: object
    k: np.ndarray
    omega: float
    h: float
    shape: tuple
    medium: str
    source: int
    ppw: float
    discretization: str = "fd"
    mass: str | None = None
    boundary: str = "abc"
    seed: int | None = None
    coordinates: np.ndarray | None = None
    mass_matrix: object = None
    layer: float = 0.0
    element_size: float | None = None

    @property
    def k_max(self):
        return float(self.k.max())


def helmholtz_fd(k, *, dims=2, ppw=10, medium="constant", source="point", dtype=np.complex128):
    """Finite-difference Helmholtz ``−Δu − k(x)²u = f`` on the unit square (cube) with a
    first-order absorbing boundary and a point source.

    The grid step is chosen from the points per wavelength at the largest wavenumber,
    ``k``: ``n = round(ppw k / 2π) − 1`` interior points per direction, ``h = 1/(n+1)``
    (so ``helmholtz_fd(k).A`` is :func:`helmholtz2d` of that n, up to the rounding of k).
    In a heterogeneous medium the velocity c(x) is relative to the slowest one, the
    angular frequency is ``ω = k`` and ``k(x) = ω / c(x) <= k``. The boundary condition
    ``du/dn − i k u = 0`` is discretized one-sidedly and eliminated into the diagonal
    with the local k (as in :func:`helmholtz2d`), so A is complex symmetric. The source
    is a unit point source, ``1/h^dims`` at the grid point nearest the centre (or, in
    the wedge, nearest ``(0.5, ..., 0.1)``: mid-width near the top). It is
    ``helmholtz_problem(k, discretization="fd", boundary="abc", ...)``.

    Parameters
    ----------
    k : float
        The largest wavenumber in the medium, > 0.
    dims : {2, 3}
    ppw : float
        Points per wavelength at the largest k.
    medium : {"constant", "wedge", "grf", "marmousi"} or callable
        ``"wedge"``: :func:`wedge_velocity`. A callable ``c(x, y[, z])`` gets the
        coordinates of the grid points (arrays in (0, 1)) and returns positive
        velocities; they are scaled by their minimum. See :func:`helmholtz_problem`.
    source : {"point", None}
        None gives a zero right-hand side.
    dtype : complex64 or complex128

    Returns
    -------
    HelmholtzProblem

    Examples
    --------
    >>> p = helmholtz_fd(20)
    >>> p.shape, p.A.shape, round(p.h, 4)
    ((31, 31), (961, 961), 0.0312)
    >>> float(abs(p.A - p.A.T).max())
    0.0
    >>> w = helmholtz_fd(20, medium="wedge")
    >>> round(w.k_max, 1), round(float(w.k.min()), 1)
    (20.0, 10.0)
    """
    return helmholtz_problem(
        k, dims=dims, ppw=ppw, medium=medium, source=source, dtype=dtype, discretization="fd"
    )


DISCRETIZATIONS = ("fd", "p1", "p2")
MASSES = ("lumped", "consistent")
BOUNDARIES = ("abc", "pml")
MEDIA = ("constant", "wedge", "grf", "marmousi")


def _medium(medium, dims, seed, correlation, contrast):
    """(name, velocity function, whether to scale it by its minimum on the mesh)."""
    if callable(medium):
        return "callable", medium, True
    if medium == "constant":
        return "constant", lambda *c: np.ones(np.broadcast(*c).shape), False
    if medium == "wedge":
        return "wedge", wedge_velocity, False
    if medium == "marmousi":
        return "marmousi", marmousi_velocity, False
    if medium == "grf":
        return (
            "grf",
            grf_velocity(dims, seed=seed, correlation=correlation, contrast=contrast),
            False,
        )
    raise ValueError(
        f"medium must be one of {', '.join(map(repr, MEDIA))} or a callable, got {medium!r}"
    )


def _velocity_at(velocity, coords):
    """The velocity at the points ``coords`` (dims arrays), clipped to the unit square
    (cube): the medium is extended constantly along the normal into a PML."""
    coords = [np.clip(c, 0.0, 1.0) for c in coords]
    c = np.asarray(velocity(*coords), dtype=np.float64)
    if c.shape != np.shape(coords[0]) or not np.all(np.isfinite(c)) or np.any(c <= 0):
        raise ValueError("medium(x, ...) must return a positive finite velocity per point")
    return c


def _source_point(name, dims):
    """Centre, or mid-width near the top (depth 0.1) in the layered media."""
    if name in ("wedge", "marmousi"):
        return (0.5,) * (dims - 1) + (0.1,)
    return (0.5,) * dims


def _pml_stretch(omega, thickness, c_ref):
    """s(x) = 1 + iσ(x)/ω with σ = σ_max (d/L)², d the distance outside [0, 1]."""
    sigma_max = 3.0 * c_ref * np.log(1.0 / PML_REFLECTION) / (2.0 * thickness)

    def stretch(x):
        d = np.maximum(0.0, np.maximum(-x, x - 1.0))
        return 1.0 + 1j * sigma_max * (d / thickness) ** 2 / omega

    return stretch


def _boundary_velocity_max(velocity, dims):
    """The fastest velocity on the unit square's (cube's) boundary, on a fixed sampling
    (so that it does not depend on the mesh)."""
    t = np.linspace(0.0, 1.0, 513 if dims == 2 else 65)
    faces = []
    for axis in range(dims):
        for end in (0.0, 1.0):
            grids = np.meshgrid(*([t] * (dims - 1)), indexing="ij")
            coords = [g.ravel() for g in grids]
            coords.insert(axis, np.full(coords[0].size, end))
            faces.append(_velocity_at(velocity, coords).max())
    return float(max(faces))


def helmholtz_problem(
    k,
    *,
    dims=2,
    discretization="fd",
    mass="lumped",
    boundary="abc",
    medium="constant",
    seed=0,
    correlation=0.1,
    contrast=3.0,
    ppw=10,
    layer=None,
    source="point",
    dtype=np.complex128,
):
    """Helmholtz ``−Δu − k(x)²u = f`` on the unit square (cube): finite differences or
    P1/P2 finite elements, an absorbing boundary or a PML, in one of several media.

    The velocity c(x) is relative to the slowest one, the angular frequency is
    ``ω = k`` and ``k(x) = ω / c(x) <= k``: ``k`` is the largest wavenumber, at which the
    grid of unknowns has ``ppw`` points per wavelength (for P2 the nodes count, so the
    elements are twice the node spacing). Time dependence is e^{−iωt}, so waves leave
    through ``du/dn − i k u = 0`` and A is complex symmetric (``A == A.T``) in every case.

    * ``"fd"`` (dims 2 or 3): the 5/7-point stencil on the grid of step
      ``h = 1/(n+1)``, ``n = round(ppw k/2π) − 1``, as :func:`helmholtz_fd`; the
      absorbing condition is discretized one-sidedly and eliminated into the diagonal.
    * ``"p1"``, ``"p2"`` (dims 2): Lagrange triangles on the structured mesh of
      :func:`~pastixpy.gallery.fem.triangle_mesh` (element size ``1/round(ppw k/2πp)``),
      ``A = K − M(k²) − i M_Γ(k)``: stiffness, mass and boundary mass, with k(x) sampled
      at the quadrature points (3 per triangle for P1, 6 for P2, 2 or 3 per boundary
      edge); lumped masses are row sums (P1) or HRZ-scaled diagonals (P2), the boundary
      mass lumped or consistent like the mass. The boundary nodes are unknowns.
    * ``boundary="pml"``: a perfectly matched layer of ``layer`` wavelengths (at k,
      rounded to whole cells, at least 4 node spacings) around the unit square
      (cube), which stays the physical domain; complex stretching
      ``s_j = 1 + iσ_j(x_j)/ω``, σ quadratic in the depth into the layer (designed for
      the reflection :data:`PML_REFLECTION`), giving
      ``∫ (s_y/s_x) ∂x u ∂x v + (s_x/s_y) ∂y u ∂y v − k² s_x s_y u v`` (finite
      elements) or the stretched differences ``−s_y ∂x(∂x u / s_x) − …`` with s at the
      half points (finite differences); homogeneous Dirichlet beyond the layer,
      eliminated. The medium is extended constantly along the normal into the layer.

    Parameters
    ----------
    k : float
        The largest wavenumber, > 0.
    dims : {2, 3}
        3 only with ``discretization="fd"``.
    discretization : {"fd", "p1", "p2"}
    mass : {"lumped", "consistent"}
        The finite elements' mass (ignored by finite differences).
    boundary : {"abc", "pml"}
    medium : {"constant", "wedge", "grf", "marmousi"} or callable
        ``"wedge"``: :func:`~pastixpy.gallery.media.wedge_velocity`; ``"grf"``: the
        Gaussian random field :func:`~pastixpy.gallery.media.grf_velocity` of ``seed``,
        ``correlation`` and ``contrast`` (the same seed gives the same field at every
        k); ``"marmousi"``: :func:`~pastixpy.gallery.media.marmousi_velocity`. A
        callable ``c(x, y[, z])`` is scaled by its minimum over the physical nodes.
    seed, correlation, contrast
        The random field's (``medium="grf"`` only).
    ppw : float
        Points per wavelength at k.
    layer : float, optional
        The PML's thickness in wavelengths at k (``boundary="pml"`` only; default 1).
    source : {"point", None}
        A unit point source at the node nearest the centre, or (wedge, Marmousi) mid-width
        at depth 0.1; None gives b = 0.
    dtype : complex64 or complex128

    Returns
    -------
    HelmholtzProblem

    Examples
    --------
    >>> p = helmholtz_problem(10, discretization="p2", mass="consistent", boundary="pml")
    >>> p.shape, p.element_size, round(p.layer, 3)
    ((35, 35), 0.125, 0.625)
    >>> float(abs(p.A - p.A.T).max())
    0.0
    >>> q = helmholtz_problem(10, discretization="p1", medium="grf", seed=2)
    >>> q.A.shape, bool(1 <= 10 / q.k.max() and 10 / q.k.min() <= 3)
    ((289, 289), True)
    """
    if dims not in (2, 3):
        raise ValueError(f"dims must be 2 or 3, got {dims!r}")
    if discretization not in DISCRETIZATIONS:
        raise ValueError(f"discretization must be 'fd', 'p1' or 'p2', got {discretization!r}")
    if dims == 3 and discretization != "fd":
        raise ValueError(f"{discretization} elements are 2D only: use dims=2, or 'fd' in 3D")
    if mass not in MASSES:
        raise ValueError(f"mass must be 'lumped' or 'consistent', got {mass!r}")
    if boundary not in BOUNDARIES:
        raise ValueError(f"boundary must be 'abc' or 'pml', got {boundary!r}")
    if not (isinstance(k, (int, float, np.integer, np.floating)) and np.isfinite(k) and k > 0):
        raise ValueError(f"k must be a positive number, got {k!r}")
    if not (np.isfinite(ppw) and ppw > 0):
        raise ValueError(f"ppw (points per wavelength) must be positive, got {ppw!r}")
    if layer is not None:
        if boundary != "pml":
            raise ValueError("layer is the PML's thickness: it needs boundary='pml'")
        if not (np.isfinite(layer) and layer > 0):
            raise ValueError(f"layer (wavelengths) must be positive, got {layer!r}")
    if source not in ("point", None):
        raise ValueError(f"source must be 'point' or None, got {source!r}")
    dt = _check_dtype(dtype, "complex")
    name, velocity, scale = _medium(medium, dims, seed, correlation, contrast)
    omega = float(k)
    thickness = (1.0 if layer is None else float(layer)) * 2 * np.pi / omega
    setup = dict(
        omega=omega,
        ppw=ppw,
        name=name,
        velocity=velocity,
        scale=scale,
        boundary=boundary,
        thickness=thickness,
        source=source,
        dt=dt,
    )
    if discretization == "fd":
        fields = _fd(dims=dims, **setup)
    else:
        fields = _fe(order=int(discretization[1]), lumped=mass == "lumped", **setup)
        fields["mass"] = mass
    return HelmholtzProblem(
        omega=omega,
        medium=name,
        discretization=discretization,
        boundary=boundary,
        seed=int(seed) if name == "grf" else None,
        ppw=2 * np.pi / (omega * fields["h"]),
        **fields,
    )


def _scaled(velocity, scale, physical):
    """The velocity function, divided by its minimum over the ``physical`` points for a
    user's callable (the named media have minimum 1 by construction)."""
    if not scale:
        return velocity
    cmin = _velocity_at(velocity, physical).min()
    return lambda *c: np.asarray(velocity(*c), dtype=np.float64) / cmin


def _kron_all(factors):
    out = sp.eye_array(1, dtype=np.complex128)
    for f in factors:
        out = sp.kron(out, f)
    return out


def _finish(M):
    M = sp.csc_array(M)
    M.sum_duplicates()
    M.sort_indices()
    return M


def _fd(*, dims, omega, ppw, name, velocity, scale, boundary, thickness, source, dt):
    n = max(2, int(round(ppw * omega / (2 * np.pi))) - 1)
    h = 1.0 / (n + 1)
    physical = [(g + 1) * h for g in np.indices((n,) * dims).reshape(dims, -1)]
    velocity = _scaled(velocity, scale, physical)
    # The source's point: nearest grid point (helmholtz_fd's choice, ties upwards).
    point = _source_point(name, dims)
    where = [n // 2 if x == 0.5 else int(round(x / h)) - 1 for x in point]
    if boundary == "abc":
        m, thickness = 0, 0.0
        shape = (n,) * dims
        coords = physical
        kx = omega / _velocity_at(velocity, coords)
        # -Δ with the absorbing boundary: u_b = u_0 / (1 − i k h) eliminated on each side.
        t = sp.diags_array(
            [-np.ones(n - 1), 2 * np.ones(n), -np.ones(n - 1)],
            offsets=[-1, 0, 1],
            dtype=np.complex128,
        )
        eye = sp.eye_array(n, dtype=np.complex128)
        terms = [_kron_all([t if o == a else eye for o in range(dims)]) for a in range(dims)]
        grid = np.indices(shape).reshape(dims, -1)
        sides = ((grid == 0) | (grid == n - 1)).sum(axis=0)
        sides += ((grid == 0) & (grid == n - 1)).sum(axis=0)
        robin = sides / (1.0 - 1j * kx * h)
        L = (sum(terms[1:], terms[0]) - sp.diags_array(robin)) / h**2
        weight = kx**2
    else:
        m = max(4, int(round(thickness / h)))
        thickness = m * h
        size = n + 2 * m
        shape = (size,) * dims
        x1 = (np.arange(size) - m + 1) * h  # grid points -m+1 ... n+m; Dirichlet beyond
        half = x1[0] - h / 2 + h * np.arange(size + 1)
        phys_max = _boundary_velocity_max(velocity, dims)
        stretch = _pml_stretch(omega, thickness, phys_max)
        s_node, inv_half = stretch(x1), 1.0 / stretch(half)
        # −∂x(∂x u / s_x) at the points, with 1/s_x at the half points: symmetric.
        t = (
            sp.diags_array(
                [-inv_half[1:-1], inv_half[:-1] + inv_half[1:], -inv_half[1:-1]],
                offsets=[-1, 0, 1],
            )
            / h**2
        )
        S = sp.diags_array(s_node)
        terms = [_kron_all([t if o == a else S for o in range(dims)]) for a in range(dims)]
        L = sum(terms[1:], terms[0])
        coords = [x1[g] for g in np.indices(shape).reshape(dims, -1)]
        kx = omega / _velocity_at(velocity, coords)
        s_prod = np.ones(1, dtype=np.complex128)
        for _ in range(dims):
            s_prod = np.kron(s_prod, s_node)
        weight = kx**2 * s_prod
        where = [w + m for w in where]
    L = _finish(L.astype(dt))
    M = _finish(sp.diags_array(weight.astype(dt)))
    A = _finish(L - M)
    src = int(np.ravel_multi_index(tuple(where), shape))
    b = np.zeros(A.shape[0], dt)
    if source == "point":
        b[src] = 1.0 / h**dims
    return dict(
        A=A,
        b=b,
        laplacian=L,
        k=kx,
        h=h,
        shape=shape,
        source=src,
        coordinates=np.stack(coords, axis=1),
        mass_matrix=M,
        layer=thickness,
        element_size=h,
    )


def _fe(*, order, lumped, omega, ppw, name, velocity, scale, boundary, thickness, source, dt):
    cells = max(2, int(round(ppw * omega / (2 * np.pi * order))))
    H = 1.0 / cells
    h = H / order
    axis = np.arange(order * cells + 1) * h
    physical = [g.ravel() for g in np.meshgrid(axis, axis, indexing="ij")]
    velocity = _scaled(velocity, scale, physical)

    def k2(x, y):
        return (omega / _velocity_at(velocity, [x, y])) ** 2

    if boundary == "abc":
        m, thickness = 0, 0.0
        mesh = triangle_mesh(cells, order)
        K, M = assemble(mesh, weight=k2, lumped=lumped)
        Mg = boundary_mass(mesh, weight=lambda x, y: np.sqrt(k2(x, y)), lumped=lumped)
        L = K - 1j * Mg
        free = np.ones(mesh.coordinates.shape[0], dtype=bool)
        shape = mesh.grid
    else:
        m = max(4 // order, int(round(thickness / H)))
        thickness = m * H
        mesh = triangle_mesh(cells + 2 * m, order, -thickness, 1.0 + thickness)
        stretch = _pml_stretch(omega, thickness, _boundary_velocity_max(velocity, 2))
        L, M = assemble(
            mesh,
            ax=lambda x, y: stretch(y) / stretch(x),
            ay=lambda x, y: stretch(x) / stretch(y),
            weight=lambda x, y: k2(x, y) * stretch(x) * stretch(y),
            lumped=lumped,
        )
        free = ~mesh.boundary_nodes
        shape = tuple(s - 2 for s in mesh.grid)
    L = _finish(L[free][:, free].astype(dt))
    M = _finish(M[free][:, free].astype(dt))
    A = _finish(L - M)
    coords = mesh.coordinates[free]
    kx = omega / _velocity_at(velocity, [coords[:, 0], coords[:, 1]])
    point = np.asarray(_source_point(name, 2))
    where = np.floor((point - mesh.lo) / h + 0.5).astype(int) - (1 if m else 0)
    src = int(np.ravel_multi_index(tuple(where), shape))
    b = np.zeros(A.shape[0], dt)
    if source == "point":
        b[src] = 1.0
    return dict(
        A=A,
        b=b,
        laplacian=L,
        k=kx,
        h=h,
        shape=shape,
        source=src,
        coordinates=coords,
        mass_matrix=M,
        layer=thickness,
        element_size=H,
    )
