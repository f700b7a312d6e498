"""Tests of the Helmholtz family of :mod:`pastixpy.gallery`: helmholtz_problem's
discretizations against scikit-fem and the free-space Green's function, the PML, the
media (seeded random fields, Marmousi-like), and the named members in the registry."""

import numpy as np
import pytest
import scipy.sparse as sp
import scipy.sparse.linalg as spla
import scipy.special

import pastixpy
from pastixpy.gallery import (
    HELMHOLTZ_FAMILY,
    HELMHOLTZ_FAMILY_2D,
    HELMHOLTZ_FAMILY_3D,
    PROBLEMS,
    grf_velocity,
    helmholtz2d,
    helmholtz_family,
    helmholtz_fd,
    helmholtz_problem,
    marmousi_velocity,
    problem,
)
from pastixpy.gallery.fem import assemble, boundary_mass, triangle_mesh

# ----------------------------------------------------------------------------- members


@pytest.mark.parametrize("name", list(HELMHOLTZ_FAMILY))
def test_every_member_builds_complex_symmetric(name):
    member = HELMHOLTZ_FAMILY[name]
    k = 6.0 if member.dims == 2 else 4.0
    p = member(k)
    n = int(np.prod(p.shape))
    assert p.A.shape == (n, n) and p.A.format == "csc" and p.A.has_sorted_indices
    assert p.A.dtype == np.complex128
    assert p.b.shape == p.k.shape == (n,) and p.coordinates.shape == (n, member.dims)
    assert np.all(np.isfinite(p.A.data)) and np.all(np.isfinite(p.b))
    assert abs(p.A - p.A.T).max() == 0  # complex symmetric, bitwise
    assert abs(p.A - p.A.conj().T).max() > 0  # not Hermitian
    assert abs(p.A - (p.laplacian - p.mass_matrix)).max() == 0
    assert np.flatnonzero(p.b).tolist() == [p.source]
    assert p.k.max() <= k * (1 + 1e-12) and p.k.min() >= k / 3 * (1 - 1e-12)
    assert p.discretization == member.kwargs["discretization"]
    assert p.boundary == member.kwargs["boundary"]
    assert p.medium == member.kwargs["medium"]
    # The source sits at the fixed physical point, within one grid step.
    point = (0.5,) * (member.dims - 1) + ((0.1,) if p.medium in ("wedge", "marmousi") else (0.5,))
    assert np.abs(p.coordinates[p.source] - point).max() <= p.h
    # Nonsingular: a direct solve has a small residual.
    if n < 5000:
        x = spla.splu(p.A).solve(p.b)
        assert np.linalg.norm(p.A @ x - p.b) < 1e-8 * np.linalg.norm(p.b)


def test_family_choice():
    assert len(HELMHOLTZ_FAMILY_2D) == 50 and len(HELMHOLTZ_FAMILY_3D) == 8
    assert [m.name for m in helmholtz_family(3)] == list(HELMHOLTZ_FAMILY_3D)
    schemes = {n.split("-", 1)[1].rsplit("-", 1)[0] for n in HELMHOLTZ_FAMILY_2D}
    assert {"fd-abc", "fd-pml", "p1l-abc", "p1c-abc", "p1c-pml", "p2l-abc", "p2c-abc"} < schemes
    grf = {
        (m.kwargs["correlation"], m.kwargs["seed"])
        for m in helmholtz_family(2)
        if m.kwargs["medium"] == "grf"
    }
    assert grf == {(c, s) for c in (0.1, 0.05) for s in range(5)}
    with pytest.raises(ValueError, match="dims"):
        helmholtz_family(4)


def test_registry_builds_members_with_size_k():
    name = "helm2d-p2l-abc-wedge"
    assert PROBLEMS[name].family == "helmholtz" and PROBLEMS[name].structure == "csym"
    A = problem(f"{name}:7")
    assert abs(A - HELMHOLTZ_FAMILY[name](7).A).max() == 0
    assert problem(name, 7).shape == A.shape
    assert PROBLEMS["lap2d"].family is None
    with pytest.raises(ValueError, match="Helmholtz family"):
        problem("helm2d-nothing:5")


def test_pastixpy_solves_a_member():
    p = HELMHOLTZ_FAMILY["helm2d-p1c-pml-marm"](10)
    x = pastixpy.factorize(p.A).solve(p.b)
    assert np.linalg.norm(p.A @ x - p.b) < 1e-10 * np.linalg.norm(p.b)


# ----------------------------------------------------------------------------- media


def test_grf_reproducible_distinct_and_mesh_independent():
    x = np.linspace(0, 1, 101)
    X, Y = np.meshgrid(x, x, indexing="ij")
    a = grf_velocity(seed=1)(X, Y)
    assert np.array_equal(a, grf_velocity(seed=1)(X, Y))
    b = grf_velocity(seed=2)(X, Y)
    assert abs(np.corrcoef(a.ravel(), b.ravel())[0, 1]) < 0.5
    # The same seed gives the same medium at every wavenumber and discretization.
    for k, disc in ((6, "fd"), (11, "p1"), (9, "p2")):
        p = helmholtz_problem(k, discretization=disc, medium="grf", seed=1)
        c = grf_velocity(seed=1)(p.coordinates[:, 0], p.coordinates[:, 1])
        assert np.array_equal(p.k, k / c)
        assert p.seed == 1
    other = helmholtz_problem(6, medium="grf", seed=2)
    assert not np.array_equal(other.k, helmholtz_problem(6, medium="grf", seed=1).k)


@pytest.mark.parametrize("dims", [2, 3])
@pytest.mark.parametrize("contrast", [1.5, 3.0])
def test_grf_range_and_contrast(dims, contrast):
    x = np.linspace(0, 1, 129 if dims == 2 else 33)
    grids = np.meshgrid(*([x] * dims), indexing="ij")
    v = grf_velocity(dims, seed=4, correlation=0.1, contrast=contrast)(*grids)
    assert v.min() >= 1.0 and v.max() <= contrast
    assert v.min() < 1 + 0.03 * (contrast - 1) and v.max() > contrast - 0.03 * (contrast - 1)


@pytest.mark.parametrize("correlation", [0.05, 0.1])
def test_grf_correlation_length(correlation):
    """The empirical correlation at lag ℓ is near exp(−1/2) ≈ 0.61 (Gaussian covariance
    exp(−r²/2ℓ²)), and small at 3ℓ: averaged over seeds and both directions."""
    x = np.linspace(0, 1, 401)
    X, Y = np.meshgrid(x, x, indexing="ij")
    step = x[1]

    def corr(lag):
        values = []
        for seed in range(6):
            v = grf_velocity(seed=seed, correlation=correlation)(X, Y)
            v = v - v.mean()
            s = int(round(lag / step))
            for a, b in ((v[:-s], v[s:]), (v[:, :-s], v[:, s:])):
                values.append((a * b).mean() / v.var())
        return np.mean(values)

    assert 0.45 < corr(correlation) < 0.75
    assert abs(corr(3 * correlation)) < 0.2


def test_marmousi_layers_and_contrast():
    x = np.linspace(0, 1, 301)
    X, Z = np.meshgrid(x, x, indexing="ij")
    v = marmousi_velocity(X, Z, absolute=True)
    assert v.min() == 1.5 and v.max() == 4.5
    assert len(np.unique(v)) >= 10
    assert np.array_equal(marmousi_velocity(X, Z), v / 1.5)
    # Sharp contrasts: jumps of more than 0.3 km/s between neighbouring points in depth.
    assert np.abs(np.diff(v, axis=1)).max() > 0.3
    # Faulted: the layering at a fixed depth changes abruptly across x.
    assert np.count_nonzero(np.diff(v, axis=0)) > 50


# ----------------------------------------------------------------------------- FE vs scikit-fem


@pytest.mark.parametrize("order", [1, 2])
def test_fe_matrices_match_scikit_fem(order):
    skfem = pytest.importorskip("skfem")
    from scipy.spatial import cKDTree
    from skfem.models.poisson import laplace, mass

    mesh = triangle_mesh(3, order=order, lo=-0.25, hi=1.0)
    vertices = np.unique(mesh.elements[:, :3])
    renumber = np.full(len(mesh.coordinates), -1)
    renumber[vertices] = np.arange(len(vertices))
    ref = skfem.MeshTri(
        mesh.coordinates[vertices].T.copy(), renumber[mesh.elements[:, :3]].T.copy()
    )
    element = skfem.ElementTriP1() if order == 1 else skfem.ElementTriP2()
    basis = skfem.Basis(ref, element, intorder=4)
    facets = skfem.FacetBasis(ref, element, intorder=5)
    dist, dofs = cKDTree(mesh.coordinates).query(basis.doflocs.T)
    assert dist.max() < 1e-12
    K, M = assemble(mesh)
    G = boundary_mass(mesh)
    sub = np.ix_(dofs, dofs)
    Ks, Ms, Gs = (X.toarray() for X in (K, M, G))
    assert np.allclose(Ks[sub], laplace.assemble(basis).toarray(), atol=1e-13)
    assert np.allclose(Ms[sub], mass.assemble(basis).toarray(), atol=1e-15)
    assert np.allclose(Gs[sub], mass.assemble(facets).toarray(), atol=1e-15)
    # Lumped: P1 row sums; P2 the diagonal scaled to the element's area (HRZ): positive.
    Ml = assemble(mesh, lumped=True)[1]
    assert abs(Ml - sp.diags_array(Ml.diagonal())).max() == 0
    assert np.isclose(Ml.sum(), M.sum()) and Ml.diagonal().real.min() > 0
    if order == 1:
        assert np.allclose(Ml.diagonal(), M.sum(axis=1))
    Gl = boundary_mass(mesh, lumped=True)
    assert np.isclose(Gl.sum(), 4 * 1.25) and np.isclose(G.sum(), 4 * 1.25)


@pytest.mark.parametrize("disc", ["p1", "p2"])
def test_fe_abc_matrix_is_k_m_and_boundary_mass(disc):
    """Constant medium, absorbing boundary: A = K − k² M − i k M_Γ on the mesh of the unit
    square, the boundary term with Im < 0 on the boundary's diagonal (like helmholtz_fd)."""
    k = 9.0
    p = helmholtz_problem(k, discretization=disc, mass="consistent")
    mesh = triangle_mesh(round(1 / p.element_size), order=int(disc[1]))
    K, M = assemble(mesh)
    G = boundary_mass(mesh)
    assert np.allclose((p.A - (K - k**2 * M - 1j * k * G)).data, 0, atol=1e-10)
    d = p.A.diagonal()
    on = mesh.boundary_nodes
    assert np.all(d[on].imag < 0) and np.all(d[~on].imag == 0)
    assert np.all(helmholtz_fd(k).A.diagonal().imag <= 0)


def test_fd_pml_is_the_plain_stencil_inside():
    k = 12.0
    p = helmholtz_problem(k, boundary="pml")
    q = helmholtz_fd(k)
    assert p.h == q.h and p.layer >= 4 * p.h
    inside = np.all((p.coordinates > 0) & (p.coordinates < 1), axis=1)
    assert inside.sum() == q.A.shape[0]
    rows = np.flatnonzero(inside)[[0, inside.sum() // 2]]
    for r in rows:
        row = p.A[[r], :].toarray().ravel()
        assert row[r] == pytest.approx(4 / p.h**2 - k**2)
        off = np.delete(row, r)
        assert np.count_nonzero(off) == 4 and np.allclose(off[off != 0], -1 / p.h**2)
    # The layer is 1 wavelength by default, `layer` wavelengths when given.
    assert abs(p.layer - 2 * np.pi / k) <= p.h / 2
    wide = helmholtz_problem(k, boundary="pml", layer=2)
    assert abs(wide.layer - 4 * np.pi / k) <= p.h / 2


def test_fd_abc_is_helmholtz2d():
    n = 30
    k = 2 * np.pi * (n + 1) / 10
    A = helmholtz_problem(k).A
    assert np.allclose((A - helmholtz2d(n)).data, 0, atol=1e-9 * k**2)


# ----------------------------------------------------------------------------- accuracy


def _green_error(p):
    """Relative error against the free-space Green's function (i/4) H0¹(k r) on the
    physical domain, away from the source's singularity."""
    u = spla.splu(p.A).solve(p.b)
    x = p.coordinates
    r = np.linalg.norm(x - x[p.source], axis=1)
    keep = (r > 0.2) & np.all((x >= 0) & (x <= 1), axis=1)
    g = 0.25j * scipy.special.hankel1(0, p.omega * r[keep])
    return np.linalg.norm(u[keep] - g) / np.linalg.norm(g)


@pytest.mark.parametrize(
    "disc, mass, order, bound",
    [
        ("fd", "lumped", 2, 0.03),
        ("p1", "lumped", 2, 0.03),
        ("p1", "consistent", 2, 0.06),  # the consistent P1 mass doubles the phase error
        ("p2", "consistent", 3.5, 0.004),
    ],
)
def test_pml_solution_converges_to_free_space(disc, mass, order, bound):
    """With a PML, the point source's field converges to the outgoing Green's function at
    the scheme's rate (phase error O(h²) for FD/P1, O(h⁴) for P2 at the nodes), which
    also checks the sign conventions (e^{−iωt}) and the source's scaling; the reflection
    from the layer is below that error."""
    k = 20.0
    coarse, fine = (
        _green_error(helmholtz_problem(k, discretization=disc, mass=mass, boundary="pml", ppw=q))
        for q in (10, 20)
    )
    assert np.log2(coarse / fine) > order - 0.3
    assert fine < bound


def test_pml_absorbs_better_than_abc():
    k = 20.0
    pml = _green_error(
        helmholtz_problem(k, discretization="p2", mass="consistent", boundary="pml", ppw=20)
    )
    abc = _green_error(helmholtz_problem(k, discretization="p2", mass="consistent", ppw=20))
    assert pml < 0.004 and abc > 10 * pml


# ----------------------------------------------------------------------------- errors


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"dims": 3, "discretization": "p1"}, "2D only"),
        ({"dims": 4}, "dims"),
        ({"discretization": "p3"}, "discretization"),
        ({"mass": "diagonal"}, "mass"),
        ({"boundary": "dirichlet"}, "boundary"),
        ({"layer": 1.0}, "boundary='pml'"),
        ({"boundary": "pml", "layer": 0}, "layer"),
        ({"medium": "salt"}, "medium"),
        ({"medium": "grf", "correlation": 0.001}, "correlation"),
        ({"medium": "grf", "contrast": 0.5}, "contrast"),
        ({"medium": "grf", "seed": -1}, "seed"),
        ({"medium": lambda x, y: -np.ones_like(x)}, "positive"),
        ({"ppw": 0}, "ppw"),
        ({"source": "plane"}, "source"),
        ({"dtype": np.float64}, "complex"),
    ],
)
def test_helmholtz_problem_errors(kwargs, match):
    with pytest.raises(ValueError, match=match):
        helmholtz_problem(5.0, **kwargs)
    with pytest.raises(ValueError, match="k must be"):
        helmholtz_problem(-1.0)
