"""Tests of the multilevel Helmholtz preconditioner (pastixpy.multilevel), its baselines,
its exact-ideal two-grid reference, its Krylov solver and the Helmholtz gallery problems.

Every check compares with an independent reference: a dense solve, scipy's gmres, the
exact ideal operators formed densely, or the theory of the reduction framework.
"""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
import scipy.sparse.linalg as spla
from hypothesis import given, settings
from hypothesis import strategies as st

import pastixpy
from pastixpy.errors import (
    InvalidInputError,
    OptionError,
    SingularMatrixError,
    StagnationWarning,
)
from pastixpy.gallery import (
    helmholtz2d,
    helmholtz_fd,
    helmholtz_problem,
    laplacian,
    wedge_velocity,
)
from pastixpy.multilevel import (
    IdealTwoGrid,
    MultilevelSolver,
    direct_solver,
    fgmres,
    helmholtz_solver,
    shifted_laplacian_preconditioner,
)
from pastixpy.multilevel.coarse import galerkin, sparsify
from pastixpy.multilevel.coarsening import cr_split, geometric_split, greedy_mis, strength_graph
from pastixpy.multilevel.smoothers import (
    KaczmarzSmoother,
    NormalChebyshevSmoother,
    PolynomialSmoother,
)
from pastixpy.multilevel.transfer import fit_rows, interpolation_pattern, values_on_pattern

#: Small problems: k = 20 (961 unknowns) and k = 40 (3969) in 2D, k = 10 (3375) in 3D.
SMALL = {"max_coarse": 100}


def gmres_iterations(A, b, M=None, rtol=1e-6, maxiter=600):
    """Iterations of right-preconditioned GMRES (fgmres, flexible) to rtol, and x."""
    count = []
    x, info = fgmres(A, b, M=M, rtol=rtol, maxiter=maxiter, callback=count.append)
    assert info == 0, f"no convergence in {maxiter} iterations"
    return len(count), x


def relres(A, x, b):
    return float(np.linalg.norm(b - A @ x) / np.linalg.norm(b))


@pytest.fixture(scope="module")
def problem40():
    return helmholtz_fd(40)


@pytest.fixture(scope="module")
def ml40(problem40):
    return helmholtz_solver(problem40.A, **SMALL)


# ----------------------------------------------------------------------------- gallery


def test_helmholtz_fd_matches_helmholtz2d():
    """With k on the grid's own rule, the constant medium is helmholtz2d's matrix."""
    n = 31
    k = 2 * np.pi * (n + 1) / 10
    p = helmholtz_fd(k)
    assert p.shape == (n, n)
    assert abs(p.A - helmholtz2d(n)).max() < 1e-9 * abs(p.A).max()
    assert abs(p.A - p.A.T).max() == 0.0
    # A = L − k² I, and the source is a unit point source at the centre.
    assert abs(p.A - (p.laplacian - sp.diags_array(p.k**2))).max() < 1e-9 * abs(p.A).max()
    assert np.flatnonzero(p.b).tolist() == [p.source]
    assert np.unravel_index(p.source, p.shape) == (15, 15)
    assert p.b[p.source] == pytest.approx(1 / p.h**2)
    assert p.ppw == pytest.approx(10.0, rel=1e-9)


def test_helmholtz_fd_wedge_and_3d():
    p = helmholtz_fd(30, medium="wedge")
    # Velocities 1.5 / 1.0 / 2.0: k(x) = k / c, the largest k in the slowest layer.
    assert sorted(np.unique(np.round(p.k / 30, 6))) == pytest.approx([0.5, 1 / 1.5, 1.0])
    assert p.k_max == pytest.approx(30)
    x, depth = ((np.indices(p.shape).reshape(2, -1) + 1) * p.h)[[0, 1]]
    assert np.array_equal(p.k, 30 / wedge_velocity(x, depth))
    assert np.unravel_index(p.source, p.shape)[1] == round(0.1 / p.h) - 1  # near the top
    assert abs(p.A - p.A.T).max() == 0.0
    q = helmholtz_fd(10, dims=3)
    assert q.shape == (15, 15, 15) and q.A.shape == (15**3, 15**3)
    # The 7-point stencil: 6 neighbours in the interior.
    assert np.diff(sp.csr_array(q.A).indptr).max() == 7
    with pytest.raises(ValueError, match="medium"):
        helmholtz_fd(10, medium="marble")
    with pytest.raises(ValueError, match="k must be"):
        helmholtz_fd(-1)
    with pytest.raises(ValueError, match="dims"):
        helmholtz_fd(10, dims=4)


def test_helmholtz_fd_callable_medium():
    p = helmholtz_fd(20, medium=lambda x, y: 1.0 + x)  # velocity 1 to 2 across
    assert p.k_max == pytest.approx(20 / (1 + p.h) * (1 + p.h))
    assert p.k.min() == pytest.approx(20 * (1 + p.h) / (1 + p.shape[0] * p.h))
    with pytest.raises(ValueError, match="positive"):
        helmholtz_fd(20, medium=lambda x, y: x - 0.5)


# ----------------------------------------------------------------------------- Krylov


def test_fgmres_matches_scipy_and_a_dense_solve():
    rng = np.random.default_rng(1)
    n = 120
    A = sp.random_array((n, n), density=0.05, rng=rng) + 4 * sp.eye_array(n)
    A = sp.csr_array(A)
    b = rng.standard_normal(n)
    x, info = fgmres(A, b, rtol=1e-12)
    assert info == 0
    assert np.allclose(x, np.linalg.solve(A.toarray(), b), rtol=1e-9, atol=1e-10)
    xs, _ = spla.gmres(A, b, rtol=1e-12, restart=n)
    assert np.allclose(x, xs, atol=1e-8)


def test_fgmres_callbacks_restart_and_maxiter(problem40):
    A, b = problem40.A, problem40.b
    sl = shifted_laplacian_preconditioner(problem40)
    M = sl.aspreconditioner()
    history, iterates = [], []
    x, info = fgmres(A, b, M=M, rtol=1e-8, callback=history.append)
    assert info == 0 and relres(A, x, b) <= 1e-8
    # The reported residuals are the true relative residuals (right preconditioning).
    assert history[-1] <= 1e-8 and all(h > 1e-8 for h in history[:-1])
    x2, info2 = fgmres(
        A, b, M=M, rtol=1e-8, restart=10, callback=iterates.append, callback_type="x"
    )
    assert info2 == 0 and relres(A, x2, b) <= 1e-8
    assert len(iterates) >= 2 and np.array_equal(iterates[-1], x2)
    x3, info3 = fgmres(A, b, M=M, rtol=1e-12, maxiter=5)
    assert info3 == 5 and relres(A, x3, b) > 1e-12
    # Without flexibility (fixed M) the same iterations, half the vectors.
    x4, info4 = fgmres(A, b, M=M, rtol=1e-8, flexible=False)
    assert info4 == 0 and np.allclose(x4, x, rtol=1e-6, atol=1e-10 * abs(x).max())


def test_fgmres_is_flexible():
    """A preconditioner that changes at every call: FGMRES still converges, to the same
    answer, and its residuals never increase."""
    rng = np.random.default_rng(2)
    n = 200
    R = sp.random_array((n, n), density=0.02, rng=rng)
    A = sp.csr_array(sp.diags_array(np.linspace(1, 50, n)) + R)
    b = rng.standard_normal(n)
    calls = []

    def varying(v):
        calls.append(1)
        return v / A.diagonal() * (1.0 + 0.3 * np.sin(len(calls)))

    history = []
    x, info = fgmres(A, b, M=varying, rtol=1e-10, callback=history.append)
    assert info == 0
    assert np.allclose(A @ x, b, atol=1e-8 * np.linalg.norm(b))
    assert all(h2 <= h1 * (1 + 1e-12) for h1, h2 in zip(history, history[1:], strict=False))


def test_fgmres_errors():
    A = sp.eye_array(4, format="csr")
    with pytest.raises(InvalidInputError, match="length 4"):
        fgmres(A, np.ones(3))
    with pytest.raises(InvalidInputError, match="NaN"):
        fgmres(A, np.array([1, np.nan, 0, 0]))
    with pytest.raises(OptionError, match="callback_type"):
        fgmres(A, np.ones(4), callback=print, callback_type="legacy")
    assert fgmres(A, np.zeros(4))[1] == 0


# ----------------------------------------------------------------------------- smoothers


def test_polynomial_smoother_is_the_gmres_polynomial(problem40):
    """Its residual polynomial, applied to the Arnoldi start vector, gives the residual of
    `degree` GMRES steps from that vector: the minimal one."""
    A = sp.csr_array(problem40.A)
    degree = 5
    smoother = PolynomialSmoother(degree=degree).setup(A, np.random.default_rng(7))
    rng = np.random.default_rng(7)
    v = rng.standard_normal(A.shape[0]) + 1j * rng.standard_normal(A.shape[0])
    v /= np.linalg.norm(v)
    pv = v - A @ smoother.correction(A, v)
    history = []
    fgmres(A, v, rtol=1e-300, maxiter=degree, callback=history.append)
    assert np.linalg.norm(pv) == pytest.approx(history[-1], rel=1e-6)
    # And it smooths: one sweep reduces the residual of a random vector.
    w = np.random.default_rng(3).standard_normal(A.shape[0]) + 0j
    x = smoother.apply(A, w, np.zeros_like(w))
    assert np.linalg.norm(w - A @ x) < 0.5 * np.linalg.norm(w)


def test_polynomial_smoother_real_matrix_stays_real():
    n = 30
    A = sp.csr_array(laplacian((n, n)) * (n + 1) ** 2 - 300 * sp.eye_array(n * n))
    smoother = PolynomialSmoother(degree=6).setup(A, np.random.default_rng(0))
    r = np.random.default_rng(1).standard_normal(n * n)
    x = smoother.correction(A, r)
    assert x.dtype == np.float64
    # The same polynomial applied in complex arithmetic: conjugate pairs were combined.
    roots = []
    for root in smoother.roots:
        if isinstance(root, tuple):
            a, c = root
            roots += list(np.roots([c, -a, 1.0]))
        else:
            roots.append(root)
    res, y = r.astype(complex), np.zeros(n * n, complex)
    for t in roots:
        y += res / t
        res -= (A @ res) / t
    assert (
        np.allclose(x, y.real, atol=1e-9 * abs(y).max()) and abs(y.imag).max() < 1e-9 * abs(y).max()
    )


def test_kaczmarz_converges_on_an_indefinite_matrix():
    A = sp.csr_array(helmholtz2d(12, ppw=4))
    b = np.random.default_rng(0).standard_normal(A.shape[0]) + 0j
    smoother = KaczmarzSmoother(omega=1.0, sweeps=400).setup(A, np.random.default_rng(0))
    x = smoother.apply(A, b, np.zeros_like(b))
    exact = spla.spsolve(sp.csc_array(A), b)
    assert np.linalg.norm(x - exact) < 0.5 * np.linalg.norm(exact)


def _chebyshev_reference(A, degree, lower, upper):
    """p(M) densely: M = Aᴴ D⁻¹ A, p the Chebyshev polynomial of [lower, upper] with
    p(0) = 1, from its eigendecomposition (an independent construction)."""
    A = A.toarray()
    d = (abs(A) ** 2).sum(axis=1)
    M = A.conj().T @ (A / d[:, None])
    lam, Q = np.linalg.eigh((M + M.conj().T) / 2)
    t = (upper + lower - 2 * lam) / (upper - lower)
    t0 = (upper + lower) / (upper - lower)
    p = np.polynomial.chebyshev.chebval(t, [0] * degree + [1]) / np.polynomial.chebyshev.chebval(
        t0, [0] * degree + [1]
    )
    return (Q * p) @ Q.conj().T, lam


def test_chebyshev_smoother_is_the_normal_equations_chebyshev_polynomial():
    """Its error propagation is p(Aᴴ D⁻¹ A) (checked against the eigendecomposition), and
    |p| <= 1 on the whole spectrum: no component is amplified."""
    A = sp.csr_array(helmholtz_fd(12, medium="wedge").A)
    degree = 5
    sm = NormalChebyshevSmoother(degree=degree, ratio=20.0).setup(A, np.random.default_rng(0))
    E, lam = _chebyshev_reference(A, degree, sm.lower, sm.upper)
    assert lam.max() <= sm.upper  # the estimate bounds the spectrum
    e = np.random.default_rng(1).standard_normal((A.shape[0], 3)) + 0j
    after = sm.apply(A, np.zeros_like(e), e.copy())  # b = 0: x is the error
    assert np.allclose(after, E @ e, atol=1e-10 * abs(e).max())
    assert np.linalg.norm(E, 2) <= 1 + 1e-12


def test_chebyshev_smoother_does_not_amplify_where_the_gmres_polynomial_does():
    """On the coarse levels of a problem with a PML in a layered medium, the GMRES
    polynomial of 4 Arnoldi steps amplifies some error components several times per
    sweep; the normal-equations Chebyshev smoother contracts every one."""
    p = helmholtz_problem(40, boundary="pml", medium="wedge")
    ml = helmholtz_solver(p.A, smoother=("polynomial", {"degree": 4}), precision="double")
    rng = np.random.default_rng(2)

    def growth(smoother, A):
        x = rng.standard_normal(A.shape[0]) + 1j * rng.standard_normal(A.shape[0])
        for _ in range(12):
            y = smoother.apply(A, 0.0, x)
            g = np.linalg.norm(y) / np.linalg.norm(x)
            x = y / np.linalg.norm(y)
        return g

    poly = [growth(level.smoother, level.A) for level in ml.levels[:-1]]
    assert max(poly) > 2.0
    for level in ml.levels[:-1]:
        cheb = NormalChebyshevSmoother().setup(level.A, np.random.default_rng(0))
        assert growth(cheb, level.A) < 1.0


# ----------------------------------------------------------------------------- splitting


def test_cr_split_is_red_black_on_five_point_stencil():
    A = helmholtz_fd(20).A
    f = cr_split(sp.csr_array(A)).reshape(31, 31)
    i, j = np.indices(f.shape)
    assert np.array_equal(f, (i + j) % 2 == 0)


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 10_000), st.floats(0.3, 0.95))
def test_cr_split_keeps_the_f_budget(seed, gamma):
    """On random diagonally weighted matrices, every F row's F couplings stay within
    gamma times its diagonal, and the F points of a strength-graph MIS are independent."""
    rng = np.random.default_rng(seed)
    n = 60
    R = sp.random_array((n, n), density=0.1, rng=rng)
    A = sp.csr_array(R + R.T + sp.diags_array(rng.uniform(0.5, 3.0, n)))
    f = cr_split(A, theta=0.5, gamma=gamma, extend=0.0)
    off = sp.csr_array(A - sp.diags_array(A.diagonal()))
    used = abs(off) @ f.astype(float)
    assert np.all(used[f] <= gamma * abs(A.diagonal()[f]) * (1 + 1e-12))
    S = strength_graph(A, 0.5)
    mis = greedy_mis(S)
    assert (S[mis][:, mis]).nnz == 0
    assert np.all((S @ mis.astype(float))[~mis] > 0)  # maximal


def test_geometric_split():
    s = geometric_split((5, 4))
    c = np.flatnonzero(~s.fmask)
    assert s.shape == (2, 2)
    assert [tuple(np.unravel_index(i, (5, 4))) for i in c] == [(1, 1), (1, 3), (3, 1), (3, 3)]


# ----------------------------------------------------------------------------- transfer


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 10_000), st.integers(1, 6))
def test_fit_rows_recovers_exact_weights(seed, p):
    """When the targets are exact combinations of the samples on each row's pattern,
    least squares gives back the weights (complex)."""
    rng = np.random.default_rng(seed)
    nf, nc, m = 15, 20, 12
    cols = [np.sort(rng.choice(nc, size=p, replace=False)) for _ in range(nf)]
    pattern = sp.csr_array(
        (np.ones(nf * p), np.concatenate(cols), np.arange(0, nf * p + 1, p)), shape=(nf, nc)
    )
    W = rng.standard_normal(pattern.nnz) + 1j * rng.standard_normal(pattern.nnz)
    samples = rng.standard_normal((nc, m)) + 1j * rng.standard_normal((nc, m))
    targets = sp.csr_array((W, pattern.indices, pattern.indptr), shape=(nf, nc)) @ samples
    assert np.allclose(fit_rows(pattern, targets, samples), W, atol=1e-6)
    # A prior pulls the weights towards it as mu grows.
    prior = np.zeros_like(W)
    far = np.abs(fit_rows(pattern, targets, samples, prior, mu=1e6))
    assert far.max() < 1e-3 * np.abs(W).max()


def test_values_on_pattern():
    M = sp.csr_array(np.array([[1.0, 0, 2], [0, 3, 0]]))
    pattern = sp.csr_array(np.array([[1.0, 1, 1], [1, 0, 1]]))
    assert values_on_pattern(M, pattern).tolist() == [1.0, 0.0, 2.0, 0.0, 0.0]


def test_red_black_level_is_the_exact_schur_complement():
    """On a 5-point stencil the first splitting is red-black, A_ff is diagonal, and the
    first coarse operator is the exact Schur complement (dense reference)."""
    p = helmholtz_fd(20)
    ml = helmholtz_solver(p.A, max_levels=2, coarse_solver=("pastix", {"drop": 0}))
    level = ml.levels[0]
    F, C = level.splitting.fpoints, level.splitting.cpoints
    A = p.A.toarray()
    S = A[np.ix_(C, C)] - A[np.ix_(C, F)] @ np.linalg.solve(A[np.ix_(F, F)], A[np.ix_(F, C)])
    assert np.allclose(ml.levels[1].A.toarray(), S, atol=1e-10 * abs(S).max())


def test_ideal_exact_transfer_and_ideal_corrected_on_a_wider_stencil():
    """On a level whose A_ff is not diagonal, 'ideal-exact' is −A_ff⁻¹A_fc (dense
    reference) and 'ideal-corrected' reproduces the near-kernel test vectors better
    than the ideal weights truncated to the same pattern."""
    p = helmholtz_fd(20)
    ml = helmholtz_solver(p.A, max_levels=3, max_coarse=10)
    A1 = ml.levels[1].A
    F, C = ml.levels[1].splitting.fpoints, ml.levels[1].splitting.cpoints
    D = A1.toarray()
    W_ideal = -np.linalg.solve(D[np.ix_(F, F)], D[np.ix_(F, C)])
    exact = helmholtz_solver(A1, transfer="ideal-exact", max_levels=2)
    P = exact.levels[0].P.toarray()
    assert np.allclose(P[F], W_ideal, atol=1e-9 * abs(W_ideal).max())
    assert np.allclose(P[C], np.eye(len(C)))
    # Near-kernel reproduction: LS-based weights fit the test vectors they were built on.
    from pastixpy.multilevel.transfer import relaxed_test_vectors

    rng = np.random.default_rng(5)
    smoother = PolynomialSmoother().setup(A1, rng)
    V = relaxed_test_vectors(A1, smoother, 32, 3, rng)
    from pastixpy.multilevel.transfer import interpolation

    splitting = ml.levels[1].splitting
    W = interpolation(A1, splitting, V, "ideal-corrected", {"steps": 3, "mu": 1e-2, "distance": 1})
    pattern = interpolation_pattern(A1, F, C)
    truncated = sp.csr_array(sp.csr_array(W_ideal).multiply(pattern))
    err_fit = np.linalg.norm(W @ V[C] - V[F])
    err_trunc = np.linalg.norm(truncated @ V[C] - V[F])
    assert err_fit < 0.75 * err_trunc


# ----------------------------------------------------------------------------- reference


def test_exact_ideal_two_grid_with_exact_f_solve_is_a_direct_solver():
    """Ideal P and R, exact coarse solve and A_ff solved exactly: one cycle is A⁻¹."""
    p = helmholtz_fd(20)
    # Standard 2x coarsening: A_ff is not diagonal, so nothing is trivial.
    tg = IdealTwoGrid(p.A, geometric_split(p.shape).fmask, f_relaxation="exact")
    x = tg(p.b)
    exact = np.linalg.solve(p.A.toarray(), p.b)
    assert np.allclose(x, exact, atol=1e-9 * abs(exact).max())
    its, _ = gmres_iterations(p.A, p.b, M=tg, rtol=1e-10)
    assert its == 1


@settings(max_examples=10, deadline=None)
@given(st.integers(0, 10_000))
def test_ideal_two_grid_identity(seed):
    """A⁻¹ = P S⁻¹ R + [A_ff⁻¹ 0; 0 0] for any splitting (random F sets)."""
    rng = np.random.default_rng(seed)
    p = helmholtz_fd(8)
    n = p.A.shape[0]
    fmask = rng.random(n) < 0.6
    if fmask.all() or not fmask.any():
        fmask[0], fmask[1] = True, False
    tg = IdealTwoGrid(p.A, fmask, f_relaxation="exact")
    r = rng.standard_normal(n) + 1j * rng.standard_normal(n)
    F = tg.F
    rf = np.zeros(n, complex)
    rf[F] = tg.ff.solve(r[F])
    lhs = tg.interpolate(tg.schur_solve(tg.restrict(r))) + rf
    assert np.allclose(lhs, np.linalg.solve(p.A.toarray(), r), atol=1e-9 * abs(lhs).max())


def test_ideal_two_grid_converges_as_the_f_relaxation_predicts():
    """With ν Jacobi F-sweeps, one cycle maps the error e to [G^ν (e_f − W e_c); 0]
    exactly; the stationary iteration then contracts at ρ(G^ν), and GMRES (which
    minimizes over the iterates' space) needs no more iterations than it does."""
    p = helmholtz_fd(20)
    fmask = geometric_split(p.shape).fmask
    # A random right-hand side: the point source sits on a C point, where one ideal
    # coarse correction is already exact.
    b = np.random.default_rng(0).standard_normal(p.A.shape[0]) + 0j
    for sweeps in (1, 3):
        tg = IdealTwoGrid(p.A, fmask, f_relaxation=("jacobi", {"sweeps": sweeps, "omega": 0.8}))
        exact = np.linalg.solve(p.A.toarray(), b)
        x = np.zeros_like(exact)
        errors = []
        e = exact - x
        for _ in range(60 // sweeps):  # stays well above rounding
            predicted = tg.error_propagation(e)
            x = x + tg(b - p.A @ x)
            e = exact - x
            assert np.allclose(e, predicted, atol=1e-8 * abs(exact).max())
            errors.append(np.linalg.norm(e))
        rho = tg.predicted_factor()
        assert rho < 1
        window = len(errors) // 2
        observed = (errors[-1] / errors[-1 - window]) ** (1 / window)
        assert observed == pytest.approx(rho, rel=0.05)
        its, _ = gmres_iterations(p.A, b, M=tg, rtol=1e-6)
        # The stationary iteration's residual after j cycles: (I − A M)^j b.
        r = b.copy()
        j = 0
        while np.linalg.norm(r) > 1e-6 * np.linalg.norm(b):
            r = r - p.A @ tg(r)
            j += 1
        assert its <= j


# ----------------------------------------------------------------------------- the method


def test_multilevel_beats_no_preconditioner_and_the_shifted_laplacian(problem40, ml40):
    A, b = problem40.A, problem40.b
    none, _ = gmres_iterations(A, b, maxiter=2000)
    sl = shifted_laplacian_preconditioner(problem40)
    shifted, _ = gmres_iterations(A, b, M=sl.aspreconditioner())
    ml, x = gmres_iterations(A, b, M=ml40.cycle)
    assert ml < shifted < none
    assert ml <= 6
    assert len(ml40.levels) >= 3
    exact = pastixpy.factorize(A, threads=1).solve(b)
    assert np.linalg.norm(x - exact) <= 1e-4 * np.linalg.norm(exact)


def test_solve_interface_and_stats(problem40, ml40):
    history = []
    x, info = ml40.solve(problem40.b, rtol=1e-8, callback=history.append)
    assert info == 0 and relres(problem40.A, x, problem40.b) <= 1e-8
    st_ = ml40.stats
    assert st_["solve"]["iterations"] == len(history) and st_["solve"]["converged"]
    assert st_["sizes"][0] == 3969 and st_["levels"] == len(ml40.levels)
    assert st_["operator_complexity"] > 1 and st_["grid_complexity"] > 1
    assert st_["coarse_factor_bytes"] > 0 and st_["memory_bytes"] > st_["coarse_factor_bytes"]
    assert set(st_["setup_phases"]) >= {"splitting", "galerkin", "coarse_factor"}
    assert len(st_["solve"]["cycles_per_level"]) == len(ml40.levels)
    text = repr(ml40)
    assert "level" in text and "operator complexity" in text and "3969" in text
    assert st_["solve"]["stop"] == "converged" and st_["solve"]["why"] is None
    assert st_["solve"]["residual"] == pytest.approx(relres(problem40.A, x, problem40.b))
    # maxiter reached: info is the iteration count, as scipy's, and a warning says so.
    with pytest.warns(StagnationWarning, match=r"\(maxiter\) after 2 of at most 2"):
        _, info = ml40.solve(problem40.b, rtol=1e-14, maxiter=2)
    assert info == 2 and ml40.stats["solve"]["stop"] == "maxiter"
    with pytest.raises(OptionError, match="accel"):
        ml40.solve(problem40.b, accel="bicgstab")
    with pytest.raises(OptionError, match="K-cycle"):
        ml40.solve(problem40.b, accel="gmres")


@pytest.mark.parametrize("precision", ["double", "single"])
@pytest.mark.parametrize("cycle", ["V", ("W", {"inner": 2})])
def test_linear_cycles_with_plain_gmres(problem40, cycle, precision):
    ml = helmholtz_solver(problem40.A, cycle=cycle, precision=precision, **SMALL)
    x, info = ml.solve(problem40.b, accel="gmres", rtol=1e-6)
    assert info == 0 and relres(problem40.A, x, problem40.b) <= 1e-6
    # A linear cycle: M(a u + v) = a M(u) + M(v), up to the rounding of its coarse levels.
    rng = np.random.default_rng(0)
    u, v = (rng.standard_normal(3969) + 1j * rng.standard_normal(3969) for _ in range(2))
    M = ml.aspreconditioner()
    tol = 1e-9 if precision == "double" else 1e-5
    assert np.allclose(M @ (2j * u + v), 2j * (M @ u) + M @ v, atol=tol * abs(M @ u).max())


def test_aspreconditioner_in_scipy_gmres_complex_symmetric(problem40, ml40):
    M = ml40.aspreconditioner()
    assert isinstance(M, spla.LinearOperator) and M.shape == problem40.A.shape
    x, info = spla.gmres(problem40.A, problem40.b, M=M, rtol=1e-6, restart=30)
    assert info == 0 and relres(problem40.A, x, problem40.b) <= 1e-6


def test_aspreconditioner_in_scipy_gmres_real_indefinite():
    """A real symmetric indefinite Helmholtz matrix (Dirichlet boundary, no damping)."""
    n = 60
    h = 1 / (n + 1)
    k = 2 * np.pi / (10 * h) * 0.97  # away from a Dirichlet eigenvalue
    A = sp.csr_array(laplacian((n, n)) / h**2 - k**2 * sp.eye_array(n * n))
    b = np.random.default_rng(0).standard_normal(n * n)
    ml = helmholtz_solver(A, **SMALL)
    # Real throughout: the finest level in double, the coarse ones in single precision.
    assert ml.levels[0].A.dtype == np.float64
    assert all(lv.A.dtype == np.float32 for lv in ml.levels[1:])
    x, info = spla.gmres(A, b, M=ml.aspreconditioner(), rtol=1e-6, restart=50)
    assert info == 0 and relres(A, x, b) <= 1e-6
    # Unpreconditioned GMRES(50) does not even reach 1e-2 in 300 iterations.
    _, info = fgmres(A, b, rtol=1e-2, restart=50, maxiter=300)
    assert info == 300
    ml_its, _ = gmres_iterations(A, b, M=ml.cycle)
    assert ml_its <= 8


def test_aspreconditioner_in_scipy_gmres_complex_general():
    """A complex unsymmetric matrix (Helmholtz with a convection term): the restriction
    is built on Aᵀ, not taken as Pᵀ."""
    p = helmholtz_fd(30)
    n = p.shape[0]
    d = sp.diags_array([-np.ones(n - 1), np.ones(n - 1)], offsets=[-1, 1]) / (2 * p.h)
    convection = 15.0 * sp.kron(d, sp.eye_array(n))
    A = sp.csr_array(p.A + convection)
    assert abs(A - A.T).max() > 0
    ml = helmholtz_solver(A, **SMALL)
    assert ml.levels[0].restriction == "explicit"
    x, info = spla.gmres(A, p.b, M=ml.aspreconditioner(), rtol=1e-6, restart=30)
    assert info == 0 and relres(A, x, p.b) <= 1e-6
    its, _ = gmres_iterations(A, p.b, M=ml.cycle)
    assert its <= 10


def test_hermitian_matrix_uses_the_adjoint():
    p = helmholtz_fd(20)
    # A magnetic-Laplacian-like Hermitian matrix: i times a real skew-symmetric term.
    n = p.shape[0]
    d = sp.diags_array([np.ones(n - 1)], offsets=[1]) / p.h
    skew = sp.kron(d - d.T, sp.eye_array(n))
    A = sp.csr_array(p.laplacian.real - 300 * sp.eye_array(n * n) + 5j * skew)
    assert abs(A - A.conj().T).max() == 0 and abs(A - A.T).max() > 0
    ml = helmholtz_solver(A, **SMALL)
    assert ml.levels[0].restriction == "adjoint"
    x, info = ml.solve(p.b)
    assert info == 0 and relres(A, x, p.b) <= 1e-6


def test_single_precision_hierarchy(problem40, ml40):
    """precision="single" (the default): the coarse operators, every P and the coarsest
    factors in complex64, the cycle's coarse vectors too; the finest operator in double,
    and the outer iteration reaches tolerances far below single precision."""
    levels = ml40.levels
    assert len(levels) >= 3 and levels[0].A is problem40.A
    assert all(lv.A.dtype == np.complex64 for lv in levels[1:])
    assert all(lv.P.dtype == np.complex64 for lv in levels[:-1])
    assert levels[-1].coarse.factorization.stats["factor_dtype"] == "complex64"
    r = np.random.default_rng(1).standard_normal(levels[1].n).astype(np.complex64)
    assert ml40.cycle.coarse_correction(1, r).dtype == np.complex64
    assert ml40.cycle(problem40.b).dtype == np.complex128
    for rtol in (1e-8, 1e-10):
        x, info = ml40.solve(problem40.b, rtol=rtol)
        assert info == 0 and relres(problem40.A, x, problem40.b) <= rtol
    double = helmholtz_solver(problem40.A, precision="double", **SMALL)
    assert all(lv.A.dtype == np.complex128 for lv in double.levels)
    assert all(lv.P.dtype == np.complex128 for lv in double.levels[:-1])
    assert double.levels[-1].coarse.factorization.stats["factor_dtype"] == "complex128"
    assert ml40.stats["memory_bytes"] < 0.75 * double.stats["memory_bytes"]
    # The coarsest factors' precision can be chosen apart from the levels'.
    mixed = helmholtz_solver(
        problem40.A, coarse_solver=("pastix", {"precision": "double"}), **SMALL
    )
    assert mixed.levels[-1].A.dtype == np.complex64
    assert mixed.levels[-1].coarse.factorization.stats["factor_dtype"] == "complex128"


@pytest.mark.parametrize(
    ("k", "dims", "medium"),
    [(20, 2, "constant"), (40, 2, "constant"), (40, 2, "wedge"), (10, 3, "constant")],
)
def test_single_precision_iterations_as_double(k, dims, medium):
    """The single hierarchy takes as many outer iterations as the double one (one more at
    most), to 1e-6 and to 1e-10 on the true residual."""
    p = helmholtz_fd(k, dims=dims, medium=medium)
    for rtol in (1e-6, 1e-10):
        its = {}
        for precision in ("double", "single"):
            ml = helmholtz_solver(p.A, precision=precision)
            x, info = ml.solve(p.b, rtol=rtol)
            assert info == 0 and relres(p.A, x, p.b) <= rtol
            its[precision] = ml.stats["solve"]["iterations"]
        assert its["single"] <= its["double"] + 1, its


def test_wedge_and_3d():
    wedge = helmholtz_fd(40, medium="wedge")
    ml = helmholtz_solver(wedge.A, **SMALL)
    sl = shifted_laplacian_preconditioner(wedge)
    ml_its, _ = gmres_iterations(wedge.A, wedge.b, M=ml.cycle)
    sl_its, _ = gmres_iterations(wedge.A, wedge.b, M=sl.aspreconditioner())
    assert ml_its < sl_its and ml_its <= 8
    cube = helmholtz_fd(10, dims=3)
    ml3 = helmholtz_solver(cube.A, **SMALL)
    x, info = ml3.solve(cube.b)
    assert info == 0 and ml3.stats["solve"]["iterations"] <= 6 and len(ml3.levels) >= 3


@pytest.mark.parametrize(
    "options",
    [
        {"smoother": ("jacobi", {"omega": 0.5, "sweeps": 2})},
        {"smoother": "kaczmarz"},
        {"transfer": "ls"},
        {"transfer": ("ideal-corrected", {"distance": 2})},
        {"coarsening": ("geometric", {"shape": (63, 63)})},
        {"f_relaxation": "none"},
        {"coarse_solver": ("pastix", {"drop": 0, "precision": "mixed"})},
        {"cycle": ("K", {"inner": 3, "inner_rtol": 0.1})},
    ],
)
def test_options_converge(problem40, options):
    ml = helmholtz_solver(problem40.A, **{**SMALL, **options})
    x, info = ml.solve(problem40.b, maxiter=60)
    assert info == 0 and relres(problem40.A, x, problem40.b) <= 1e-6


def test_user_callables(problem40):
    """A user's splitting and transfer: red-black and the exact local ideal weights."""

    def red_black(A, level):
        return (
            np.arange(A.shape[0]) % 2 == 0
            if level
            else np.indices((63, 63)).sum(0).ravel() % 2 == 0
        )

    def jacobi_weights(A, fmask, V):
        F, C = np.flatnonzero(fmask), np.flatnonzero(~fmask)
        AF = sp.csr_array(A)[F]
        return -sp.diags_array(1 / AF[:, F].diagonal()) @ AF[:, C]

    ml = helmholtz_solver(
        problem40.A,
        coarsening=red_black,
        transfer=jacobi_weights,
        max_levels=2,
        coarse_solver=("pastix", {"drop": 0}),
    )
    x, info = ml.solve(problem40.b)
    assert info == 0 and ml.stats["solve"]["iterations"] <= 2  # exact reduction
    with pytest.raises(InvalidInputError, match="boolean array"):
        helmholtz_solver(problem40.A, coarsening=lambda A, level: np.ones(3))
    with pytest.raises(InvalidInputError, match="shape"):
        helmholtz_solver(problem40.A, transfer=lambda A, f, V: sp.eye_array(3))


# ----------------------------------------------------------------------------- stagnation


@pytest.fixture(scope="module")
def poor40(problem40):
    """A hierarchy that cannot work: no smoothing, and interpolation fitted to two
    unrelaxed random vectors. Its residual falls to about 0.5 and stays there. (Its
    coarsest operator is ill conditioned, about 1e8: in double, below the refusal limit.)"""
    return helmholtz_solver(
        problem40.A,
        smoother="none",
        f_relaxation="none",
        test_vectors=2,
        transfer="ls",
        precision="double",
        **SMALL,
    )


def test_a_stagnating_solve_stops_early_and_says_why(problem40, poor40):
    A, b = problem40.A, problem40.b
    with pytest.warns(StagnationWarning) as record:
        x, info = poor40.solve(b, rtol=1e-6)
    st_ = poor40.stats["solve"]
    assert st_["stop"] == "stagnated" and not st_["converged"]
    assert 0 < info == st_["iterations"] <= 10  # of maxiter=200
    # What it reports is what x gives, and the rate is the one of its residual history.
    assert st_["residual"] == pytest.approx(relres(A, x, b), rel=1e-6)
    history = [1.0, *st_["residuals"]]  # from x0 = 0
    assert st_["rate"] == pytest.approx((history[-1] / history[-6]) ** 0.2)
    assert st_["rate"] > 0.8 and st_["projected_iterations"] > 50
    message = str(record[0].message)
    for part in (
        f"after {info} of at most 200 iterations",
        "rate=0.8",
        f"relative residual {st_['residual']:.2e}",
        f"factor {st_['rate']:.3g} per iteration",
        "more iterations",
        "When it stagnates",
        "absorbing boundary",
        "pastixpy.factorize(A)",
    ):
        assert part in message, part
    # The verdict was right: left alone, the same solve gets nowhere.
    with pytest.warns(StagnationWarning, match="maxiter"):
        x20, info20 = poor40.solve(b, rtol=1e-6, maxiter=20, stagnation=None)
    assert info20 == 20 and poor40.stats["solve"]["stop"] == "maxiter"
    assert relres(A, x20, b) > 0.5 * st_["residual"]
    # Without the rate floor, the projection beyond maxiter stops it, later.
    with pytest.warns(StagnationWarning, match="more than maxiter=200"):
        _, info = poor40.solve(b, rtol=1e-6, stagnation={"window": 5, "rate": None})
    assert poor40.stats["solve"]["stop"] == "stagnated" and 5 < info < 40


def test_a_healthy_solve_is_not_stopped():
    problem = helmholtz_fd(20, medium="wedge")
    ml = helmholtz_solver(problem.A, **SMALL)
    with warnings.catch_warnings():
        warnings.simplefilter("error", StagnationWarning)
        x, info = ml.solve(problem.b, rtol=1e-10, max_seconds=60)
        assert info == 0 and relres(problem.A, x, problem.b) <= 1e-10
        st_ = ml.stats["solve"]
        assert st_["stop"] == "converged" and st_["rate"] < 0.1
        # A tight window and rate that the method still meets.
        x, info = ml.solve(problem.b, rtol=1e-10, stagnation={"window": 2, "rate": 0.3})
        assert info == 0


def test_solve_time_limit(problem40, ml40):
    with pytest.warns(StagnationWarning, match=r"\(time\).*max_seconds=1e-09"):
        x, info = ml40.solve(problem40.b, rtol=1e-12, max_seconds=1e-9)
    st_ = ml40.stats["solve"]
    assert info == 1 and st_["stop"] == "time" and st_["iterations"] == 1
    # The first iteration's progress is kept.
    assert relres(problem40.A, x, problem40.b) == pytest.approx(st_["residual"], rel=1e-6)
    assert st_["residual"] < 1e-3


def test_shifted_laplacian_does_not_run_silently_to_maxiter(problem40):
    sl = shifted_laplacian_preconditioner(problem40)
    with warnings.catch_warnings():
        warnings.simplefilter("error", StagnationWarning)
        x, info = sl.solve(problem40.b, rtol=1e-6)
    its = sl.stats["solve"]["iterations"]
    assert info == 0 and sl.stats["solve"]["stop"] == "converged" and its > 20
    # A maxiter it cannot meet: stopped once the rate says so, well before maxiter.
    with pytest.warns(StagnationWarning, match="ShiftedLaplacian solve stopped.*maxiter=20"):
        x, info = sl.solve(problem40.b, rtol=1e-6, maxiter=20)
    assert 0 < info < 20 and sl.stats["solve"]["stop"] == "stagnated"
    assert sl.stats["solve"]["projected_iterations"] + info > 20
    assert relres(problem40.A, x, problem40.b) == pytest.approx(sl.stats["solve"]["residual"])


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"stagnation": 1}, "stagnation window must be an integer >= 2"),
        ({"stagnation": True}, "stagnation must be None"),
        ({"stagnation": "yes"}, "stagnation must be None"),
        ({"stagnation": {"window": 5, "rate": 1.5}}, r"stagnation rate .* \(0, 1\)"),
        ({"stagnation": {"windw": 5}}, "unknown key"),
        ({"max_seconds": 0}, "max_seconds"),
        ({"max_seconds": -1.0}, "max_seconds"),
        ({"max_seconds": "1"}, "max_seconds"),
        ({"max_seconds": float("inf")}, "max_seconds"),
    ],
)
def test_bad_watch_arguments(problem40, ml40, kwargs, match):
    with pytest.raises(OptionError, match=match):
        ml40.solve(problem40.b, **kwargs)
    with pytest.raises(OptionError, match=match):
        fgmres(problem40.A, problem40.b, **kwargs)


# ----------------------------------------------------------------------------- baselines


def test_shifted_laplacian_shift_sign_follows_the_damping(problem40):
    """The gallery's absorbing boundary damps with Im < 0, so β = 1 + 0.5i; the opposite
    sign (taken as given with match_damping=False) needs many more iterations."""
    sl = shifted_laplacian_preconditioner(problem40)
    assert sl.shift == 1 + 0.5j
    assert (
        abs(sl.M - (problem40.laplacian - (1 + 0.5j) * sp.diags_array(problem40.k**2))).max() < 1e-6
    )
    wrong = shifted_laplacian_preconditioner(problem40, match_damping=False)
    assert wrong.shift == 1 - 0.5j
    good, _ = gmres_iterations(problem40.A, problem40.b, M=sl.aspreconditioner())
    bad, _ = gmres_iterations(problem40.A, problem40.b, M=wrong.aspreconditioner())
    assert good < bad
    # From A and k alone: the same operator.
    alg = shifted_laplacian_preconditioner(problem40.A, k=problem40.k)
    assert abs(alg.M - sl.M).max() < 1e-6 * abs(sl.M).max()
    x, info = alg.solve(problem40.b)
    assert info == 0 and alg.stats["solve"]["iterations"] == good
    with pytest.raises(InvalidInputError, match="wavenumber"):
        shifted_laplacian_preconditioner(problem40.A)


def test_direct_baseline(problem40):
    d = direct_solver(problem40.A)
    x, info = d.solve(problem40.b)
    assert info == 0 and relres(problem40.A, x, problem40.b) < 1e-12
    its, _ = gmres_iterations(problem40.A, problem40.b, M=d.aspreconditioner())
    assert its == 1


# ----------------------------------------------------------------------------- bad input


def test_bad_input():
    with pytest.raises(InvalidInputError, match="square"):
        helmholtz_solver(sp.random_array((5, 4), density=0.5))
    A = sp.csr_array(helmholtz2d(6))
    A.data[3] = np.nan
    with pytest.raises(InvalidInputError, match="NaN"):
        helmholtz_solver(A)
    with pytest.raises(InvalidInputError, match="empty"):
        helmholtz_solver(sp.csr_array((0, 0)))
    ml = helmholtz_solver(helmholtz2d(6), max_coarse=10)
    with pytest.raises(InvalidInputError, match="length 36"):
        ml.solve(np.ones(5))


def test_singular_coarsest_level():
    # The Neumann Laplacian is singular (constants): as the only level, it is the coarsest.
    n = 8
    t = sp.diags_array(
        [-np.ones(n - 1), [1] + [2] * (n - 2) + [1], -np.ones(n - 1)], offsets=[-1, 0, 1]
    )
    A = sp.csr_array(sp.kron(t, sp.eye_array(n)) + sp.kron(sp.eye_array(n), t))
    with pytest.raises(SingularMatrixError, match="coarsest level"):
        helmholtz_solver(A, max_levels=1)
    # A nonsingular A whose coarse level, with zero interpolation weights, is A_cc = 0.
    B = sp.csr_array(sp.block_array([[sp.eye_array(4), sp.eye_array(4)], [sp.eye_array(4), None]]))
    with pytest.raises(SingularMatrixError, match="coarsest level"):
        helmholtz_solver(
            B,
            coarsening=lambda M, level: np.arange(8) < 4,
            transfer=lambda M, f, V: sp.csr_array((4, 4)),
            max_levels=2,
            max_coarse=1,
        )


@pytest.mark.parametrize(
    ("options", "match"),
    [
        ({"smoother": "gauss-seidel"}, "unknown smoother"),
        ({"smoother": ("polynomial", {"degree": 0})}, "degree"),
        ({"smoother": ("polynomial", {"order": 3})}, "unknown parameter"),
        ({"cycle": "F"}, "unknown cycle"),
        ({"cycle": ("K", {"inner": "two"})}, "inner"),
        ({"coarse_solver": ("pastix", {"precision": "half"})}, "precision"),
        ({"precision": "half"}, "precision must be one of"),
        ({"precision": None}, "precision must be one of"),
        ({"coarsening": ("cr", {"gamma": 1.5})}, "gamma"),
        ({"transfer": ("ls", {"distance": 3})}, "distance"),
        ({"test_vectors": 0}, "count"),
        ({"max_levels": 0}, "max_levels"),
        ({"coarsening": ("geometric", {"shape": (0, 3)})}, "shape"),
    ],
)
def test_bad_options(problem40, options, match):
    with pytest.raises(OptionError, match=match):
        helmholtz_solver(problem40.A, **options)


def test_sparsify_keeps_symmetry_and_the_near_kernel_action():
    """Dropping small entries of the coarsest operator: the refit on its near-kernel
    vectors moves the dropped couplings' action onto the kept entries, keeps the operator
    complex symmetric, and keeps the iterations of the exact coarsest operator, which
    dropping alone does not."""
    p = helmholtz_fd(80)
    full = helmholtz_solver(p.A, coarse_solver=("pastix", {"drop": 0}))
    A = full.levels[-1].A
    rng = np.random.default_rng(0)
    from pastixpy.multilevel.transfer import relaxed_test_vectors

    V = relaxed_test_vectors(A, PolynomialSmoother().setup(A, rng), 32, 3, rng)
    plain = sparsify(A, 0.2)
    fitted = sparsify(A, 0.2, V)
    assert plain.nnz < A.nnz / 3 and fitted.nnz <= plain.nnz
    assert abs(fitted - fitted.T).max() <= 1e-12 * abs(fitted).max()
    assert np.linalg.norm((fitted - A) @ V) < np.linalg.norm((plain - A) @ V)
    iterations = {}
    for compensate in (False, True):
        ml = helmholtz_solver(
            p.A,
            coarse_solver=(
                "pastix",
                {"drop": 0.2, "compensate": compensate, "sparsify_above": 0},
            ),
        )
        ml.solve(p.b)
        iterations[compensate] = ml.stats["solve"]["iterations"]
        assert ml.stats["coarsest_nnz"] < A.nnz / 3
    full.solve(p.b)
    assert iterations[True] <= full.stats["solve"]["iterations"] < iterations[False]
    assert galerkin(A, sp.eye_array(A.shape[0], format="csr")).nnz == A.nnz


def test_multilevel_solver_type(ml40):
    assert isinstance(ml40, MultilevelSolver)


def test_small_coarsest_levels_are_factored_whole():
    """A coarsest level of at most ``sparsify_above`` unknowns is factored without
    dropping (its refit on a few test vectors is what can go wrong, for little memory);
    a larger one, or any with ``sparsify_above=0``, is sparsified."""
    p = helmholtz_fd(40)
    whole = helmholtz_solver(p.A)
    coarsest = whole.levels[-1]
    assert coarsest.A.shape[0] <= 10000 and coarsest.A.nnz == coarsest.galerkin_nnz
    dropped = helmholtz_solver(p.A, coarse_solver=("pastix", {"sparsify_above": 0}))
    assert dropped.levels[-1].A.nnz < dropped.levels[-1].galerkin_nnz
    for solver in (whole, dropped):
        x, info = solver.solve(p.b, rtol=1e-8)
        assert info == 0
        assert np.linalg.norm(p.b - p.A @ x) <= 1e-8 * np.linalg.norm(p.b) * (1 + 1e-6)
    with pytest.raises(OptionError, match="sparsify_above"):
        helmholtz_solver(p.A, coarse_solver=("pastix", {"sparsify_above": -1}))
