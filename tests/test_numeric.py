"""Numeric phase: every kind in every precision against LAPACK/SuperLU, the kernels directly.

References are scipy's dense LAPACK solves (in double precision) and
``scipy.sparse.linalg.splu``; the accuracy measure is the backward error
‖b − Ax‖∞ / (‖A‖∞‖x‖∞ + ‖b‖∞), computed here, not taken from the solver.
"""

import warnings
from unittest.mock import patch

import numpy as np
import pytest
import scipy.linalg as la
import scipy.sparse as sp
import scipy.sparse.linalg as sla
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pastixpy
from pastixpy._numeric import residual_maxima
from pastixpy.analysis import analyze
from pastixpy.gallery import (
    convection_diffusion3d,
    elasticity3d,
    helmholtz2d,
    laplacian,
    saddle_point,
    vector_laplacian,
)
from pastixpy.kinds import KINDS
from pastixpy.numeric import AssemblyMap, PanelLayout, factorize_numeric
from pastixpy.refine import Operator
from pastixpy.refine import backward_error as column_backward_errors
from pastixpy.solve import (
    MatrixOperator,
    permuted_rows,
    unpermute_rows,
    unpermute_rows_inplace,
)

DTYPES = [np.float32, np.float64, np.complex64, np.complex128]
ORDERINGS = ["metis", "amd", "rcm", "natural"]


# ---------------------------------------------------------------------------- helpers


def tol_for(dtype):
    """The backward error the solver promises in this precision."""
    return 1e-6 if np.dtype(dtype).char in "fF" else 1e-12


def backward_error(A, x, b):
    """Column-wise ‖b − Ax‖∞ / (‖A‖∞‖x‖∞ + ‖b‖∞), in double precision."""
    A = sp.csc_array(A).astype(np.complex128)
    x = np.asarray(x, dtype=np.complex128).reshape(A.shape[0], -1)
    b = np.asarray(b, dtype=np.complex128).reshape(A.shape[0], -1)
    norm_a = np.abs(A).sum(axis=1).max()
    r = b - A @ x
    return np.abs(r).max(axis=0) / (norm_a * np.abs(x).max(axis=0) + np.abs(b).max(axis=0))


def op(A, trans):
    """A, Aᵀ or Aᴴ as a sparse array."""
    A = sp.csc_array(A)
    return {"N": A, "T": sp.csc_array(A.T), "H": sp.csc_array(A.conj().T)}[trans]


def dense_solve(A, b, trans="N"):
    """LAPACK solve of op(A) x = b in double precision (the reference)."""
    M = op(A, trans).toarray()
    wide = np.complex128 if np.iscomplexobj(M) or np.iscomplexobj(b) else np.float64
    return la.solve(M.astype(wide), np.asarray(b).astype(wide))


def assert_solution(A, x, b, dtype, trans="N"):
    """x solves op(A) x = b to the promised backward error and agrees with LAPACK."""
    M = op(A, trans)
    tol = tol_for(dtype)
    berr = backward_error(M, x, b)
    assert berr.max() <= tol, f"backward error {berr.max():.2e} > {tol:.0e}"
    ref = dense_solve(A, b, trans).reshape(np.shape(x))
    cond = np.linalg.cond(M.toarray().astype(np.complex128), 1)
    scale = np.abs(ref).max()
    assert np.abs(x - ref).max() <= 10 * tol * cond * scale + 1e-300


def rng_for(seed):
    return np.random.default_rng(seed)


def random_vector(rng, shape, complex_):
    v = rng.standard_normal(shape)
    if complex_:
        v = v + 1j * rng.standard_normal(shape)
    return v


def derangement(n, rng):
    """A permutation with no fixed point (n >= 2)."""
    while True:
        p = rng.permutation(n)
        if not np.any(p == np.arange(n)):
            return p


# ---------------------------------------------------------------------------- test matrices


def dominant_symmetric(n, seed, *, complex_=False, hermitian=True, signs="positive", density=0.2):
    """Diagonally dominant (so nonsingular) symmetric, Hermitian or complex symmetric matrix.

    ``signs="positive"`` makes it (Hermitian) positive definite, ``"mixed"``
    gives both signs on the diagonal: indefinite.
    """
    rng = rng_for(seed)
    R = sp.random_array((n, n), density=density, rng=rng, format="csc")
    R.data -= 0.5
    if complex_:
        R = R + 1j * (sp.random_array((n, n), density=density, rng=rng, format="csc"))
    S = R + (R.conj().T if hermitian else R.T)
    S = S - sp.diags_array(S.diagonal())
    mag = np.abs(S).sum(axis=1) + rng.uniform(0.5, 1.5, n)
    if signs == "positive":
        sign = np.ones(n)
    else:
        sign = np.where(np.arange(n) % 3 == 1, -1.0, 1.0)[rng.permutation(n)]
    diag = sign * mag
    if complex_ and not hermitian:
        diag = diag * np.exp(1j * rng.uniform(-0.5, 0.5, n))
    return sp.csc_array(S + sp.diags_array(diag))


def kkt(nh, nb, seed, *, complex_=False, hermitian=True):
    """[[H, Bᴴ], [B, 0]] (or Bᵀ): H SPD, B of full row rank (it holds an identity block)."""
    rng = rng_for(seed)
    H = dominant_symmetric(nh, seed, complex_=complex_, hermitian=hermitian)
    B = sp.random_array((nb, nh), density=0.3, rng=rng, format="csc")
    if complex_:
        B = B + 1j * sp.random_array((nb, nh), density=0.3, rng=rng, format="csc")
    B = sp.csc_array(B + sp.eye_array(nb, nh, k=int(rng.integers(0, nh - nb + 1))))
    Bt = B.conj().T if hermitian else B.T
    return sp.csc_array(sp.block_array([[H, Bt], [B, None]], format="csc"))


def unsymmetric_zero_diagonal(n, seed, *, complex_=False, density=0.15):
    """A nonsingular unsymmetric matrix whose strong entries lie off the diagonal.

    A diagonally dominant matrix with its rows deranged: factoring it without
    row matching would hit zero pivots.
    """
    rng = rng_for(seed)
    R = sp.random_array((n, n), density=density, rng=rng, format="csc")
    if complex_:
        R = R + 1j * sp.random_array((n, n), density=density, rng=rng, format="csc")
    R = R - sp.diags_array(R.diagonal())
    d = (np.abs(R).sum(axis=1) + 1) * np.where(rng.random(n) < 0.5, -1, 1)
    D = sp.csr_array(R + sp.diags_array(d))
    A = sp.csc_array(D[derangement(n, rng)])
    A.eliminate_zeros()
    return A


def real_builders():
    return {
        "llt": {
            "laplacian2d": lambda: laplacian((6, 5)),
            "elasticity3d": lambda: elasticity3d((2, 2, 1)),
            "vector_laplacian": lambda: vector_laplacian((3, 4), dofs=2),
            "random_spd": lambda: dominant_symmetric(40, 1),
        },
        "ldlt": {
            "saddle_point2d": lambda: saddle_point((4, 3)),
            "random_indefinite": lambda: dominant_symmetric(40, 2, signs="mixed"),
            "random_kkt": lambda: kkt(24, 9, 3),
        },
        "ldlh": {
            "saddle_point2d": lambda: saddle_point((3, 3)),
            "random_kkt": lambda: kkt(20, 7, 4),
        },
        "lu": {
            "convection_diffusion3d": lambda: convection_diffusion3d(4, peclet=50.0),
            "zero_diagonal": lambda: unsymmetric_zero_diagonal(40, 5),
            "saddle_point_as_lu": lambda: saddle_point((3, 3)),
        },
    }


def complex_builders():
    return {
        "llt": {
            "random_hpd": lambda: dominant_symmetric(40, 11, complex_=True),
            "laplacian_complex": lambda: laplacian((5, 6), dtype=np.complex128),
        },
        "ldlt": {
            "helmholtz2d": lambda: helmholtz2d(6),
            "random_complex_symmetric": lambda: dominant_symmetric(
                40, 12, complex_=True, hermitian=False, signs="mixed"
            ),
            "complex_symmetric_kkt": lambda: kkt(20, 8, 13, complex_=True, hermitian=False),
        },
        "ldlh": {
            "random_hermitian_indefinite": lambda: dominant_symmetric(
                40, 14, complex_=True, signs="mixed"
            ),
            "hermitian_kkt": lambda: kkt(22, 8, 15, complex_=True),
        },
        "lu": {
            "zero_diagonal": lambda: unsymmetric_zero_diagonal(40, 16, complex_=True),
            "helmholtz_as_lu": lambda: helmholtz2d(5),
            "shifted_convection": lambda: (
                convection_diffusion3d(3, peclet=20.0) + 0.5j * sp.eye_array(27)
            ),
        },
    }


def generated_cases():
    cases = []
    for dtype in DTYPES:
        builders = complex_builders() if np.dtype(dtype).kind == "c" else real_builders()
        for kind, named in builders.items():
            for name in named:
                cases.append(pytest.param(dtype, kind, name, id=f"{np.dtype(dtype)}-{kind}-{name}"))
    return cases


def build(dtype, kind, name):
    builders = complex_builders() if np.dtype(dtype).kind == "c" else real_builders()
    return sp.csc_array(builders[kind][name]()).astype(dtype)


# ---------------------------------------------------------------------------- generated cases


@pytest.mark.parametrize("dtype, kind, name", generated_cases())
def test_generated_case_all_kinds_and_dtypes(dtype, kind, name):
    A = build(dtype, kind, name)
    n = A.shape[0]
    complex_ = np.dtype(dtype).kind == "c"
    F = pastixpy.factorize(A, kind=kind)
    assert F.kind == kind
    assert F.dtype == dtype
    assert F.stats["perturbed_pivots"] == 0
    rng = rng_for(n)
    B = random_vector(rng, (n, 3), complex_).astype(dtype)
    for trans in ("N", "T", "H"):
        X = F.solve(B, trans=trans)
        assert X.shape == (n, 3) and X.dtype == dtype
        assert_solution(A, X, B, dtype, trans)
    x = F.solve(B[:, 0])
    assert x.shape == (n,) and x.dtype == dtype
    assert_solution(A, x, B[:, 0], dtype)


@pytest.mark.parametrize(
    "builder, dtype, expected",
    [
        (lambda: laplacian((5, 5)), np.float64, "llt"),
        (lambda: elasticity3d((2, 1, 1)), np.float32, "llt"),
        (lambda: dominant_symmetric(30, 21, complex_=True), np.complex128, "llt"),
        (lambda: laplacian((4, 4), dtype=np.complex64), np.complex64, "llt"),
        (lambda: saddle_point((3, 3)), np.float64, "ldlt"),
        (lambda: dominant_symmetric(30, 22, signs="mixed"), np.float32, "ldlt"),
        (lambda: helmholtz2d(5), np.complex128, "ldlt"),
        (lambda: helmholtz2d(5), np.complex64, "ldlt"),
        (lambda: dominant_symmetric(30, 23, complex_=True, signs="mixed"), np.complex128, "ldlh"),
        (lambda: kkt(16, 6, 24, complex_=True), np.complex64, "ldlh"),
        (lambda: convection_diffusion3d(3), np.float64, "lu"),
        (lambda: unsymmetric_zero_diagonal(30, 25), np.float32, "lu"),
        (lambda: unsymmetric_zero_diagonal(30, 26, complex_=True), np.complex128, "lu"),
    ],
    ids=[
        "spd",
        "spd-float32",
        "hpd",
        "hpd-real-valued",
        "saddle-point",
        "symmetric-indefinite-float32",
        "complex-symmetric",
        "complex-symmetric-complex64",
        "hermitian-indefinite",
        "hermitian-kkt-complex64",
        "convection",
        "zero-diagonal-float32",
        "zero-diagonal-complex",
    ],
)
def test_kind_auto_picks(builder, dtype, expected):
    A = sp.csc_array(builder()).astype(dtype)
    F = pastixpy.factorize(A)
    assert F.kind == expected
    assert F.stats["kind"] == expected
    b = random_vector(rng_for(1), A.shape[0], np.dtype(dtype).kind == "c").astype(dtype)
    assert_solution(A, F.solve(b), b, dtype)


def test_real_symmetric_accepts_ldlh_and_lu_and_complex_symmetric_warns_on_hermitian_kinds():
    A = saddle_point((3, 3))
    for kind in ("ldlt", "ldlh", "lu"):
        F = pastixpy.factorize(A, kind=kind)
        b = np.arange(A.shape[0], dtype=float)
        assert_solution(A, F.solve(b), b, np.float64)
    H = helmholtz2d(4)
    for kind in ("llt", "ldlh"):
        with pytest.warns(pastixpy.PastixWarning, match="not Hermitian"):
            try:
                pastixpy.factorize(H, kind=kind, refine="none")
            except pastixpy.NotPositiveDefiniteError:
                pass


# ---------------------------------------------------------------------------- right-hand sides


@pytest.mark.parametrize("dtype", DTYPES)
def test_rhs_forms(dtype):
    A = (helmholtz2d(5) if np.dtype(dtype).kind == "c" else convection_diffusion3d(3)).astype(dtype)
    n = A.shape[0]
    F = pastixpy.factorize(A)
    rng = rng_for(3)
    complex_ = np.dtype(dtype).kind == "c"
    # (n, 1) keeps its shape in F.solve (spsolve is the one that flattens).
    b = random_vector(rng, (n, 1), complex_).astype(dtype)
    x = F.solve(b)
    assert x.shape == (n, 1)
    assert_solution(A, x, b, dtype)
    # F(b) is F.solve(b).
    np.testing.assert_array_equal(F(b), F.solve(b))
    # Many right-hand sides at once agree with one at a time.
    B = random_vector(rng, (n, 5), complex_).astype(dtype)
    X = F.solve(B)
    cols = np.column_stack([F.solve(B[:, j]) for j in range(5)])
    assert_solution(A, X, B, dtype)
    np.testing.assert_allclose(X, cols, rtol=0, atol=100 * tol_for(dtype) * np.abs(X).max())
    # Sparse b is densified: the result is a dense array.
    Bs = sp.random_array((n, 4), density=0.2, rng=rng, format="csr", dtype=dtype)
    Xs = F.solve(Bs)
    assert isinstance(Xs, np.ndarray) and Xs.shape == (n, 4)
    assert_solution(A, Xs, Bs.toarray(), dtype)
    # Integer b: promoted to float, then to A's precision at least.
    bi = np.arange(n) - n // 2
    xi = F.solve(bi)
    assert xi.dtype == np.promote_types(dtype, np.float64)
    assert_solution(A, xi, bi.astype(float), dtype)
    # A list works like an array.
    np.testing.assert_array_equal(F.solve(list(bi)), xi)
    # Zero b gives x = 0 exactly.
    assert np.all(F.solve(np.zeros(n)) == 0)


@pytest.mark.parametrize("kind", ["llt", "ldlt", "ldlh", "lu"])
def test_rhs_layouts_and_inputs_left_alone(kind):
    A = dominant_symmetric(
        24,
        8,
        complex_=True,
        hermitian=kind != "ldlt",
        signs="positive" if kind == "llt" else "mixed",
    )
    if kind == "lu":
        A = unsymmetric_zero_diagonal(24, 9, complex_=True)
    A0 = A.copy()
    F = pastixpy.factorize(A, kind=kind)
    assert (A != A0).nnz == 0 and np.array_equal(A.indices, A0.indices)
    rng = rng_for(10)
    wide = random_vector(rng, (24, 8), True)
    layouts = {
        "fortran": np.asfortranarray(wide[:, :3]),
        "strided-columns": wide[:, ::3],
        "strided-vector": random_vector(rng, 48, True)[::2],
        "reversed": wide[::-1, :2],
    }
    for label, b in layouts.items():
        b0 = b.copy()
        x = F.solve(b)
        assert np.array_equal(b, b0), f"{label}: b was modified"
        assert x.shape == b.shape
        assert_solution(A, x, b, np.complex128)
    ro = wide[:, :2].copy()
    ro.setflags(write=False)
    assert_solution(A, F.solve(ro), ro, np.complex128)


@pytest.mark.parametrize("kind", ["llt", "ldlt", "lu"])
def test_no_right_hand_sides(kind):
    # b of shape (n, 0), as scipy's splu/spsolve accept: x of shape (n, 0).
    A = laplacian((3, 3))
    F = pastixpy.factorize(A, kind=kind)
    x = F.solve(np.ones((9, 0)))
    assert x.shape == (9, 0)
    assert F.solve(np.ones((9, 0)), trans="T").shape == (9, 0)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("kind", ["llt", "ldlt", "lu"])
@pytest.mark.parametrize("trans", ["N", "T", "H"])
def test_complex_b_with_real_matrix(dtype, kind, trans):
    A = {
        "llt": laplacian((5, 5)),
        "ldlt": saddle_point((3, 3)),
        "lu": unsymmetric_zero_diagonal(25, 31),
    }[kind].astype(dtype)
    n = A.shape[0]
    F = pastixpy.factorize(A, kind=kind)
    b = random_vector(rng_for(4), (n, 2), True)
    x = F.solve(b, trans=trans)
    assert x.dtype == np.promote_types(dtype, np.complex128)
    assert_solution(A, x, b, dtype, trans)
    # Real and imaginary parts are solved separately and agree with real solves.
    re = F.solve(b.real, trans=trans)
    np.testing.assert_allclose(x.real, re, rtol=0, atol=100 * tol_for(dtype) * np.abs(x).max())


def test_rhs_precision_promotion():
    A32 = laplacian((4, 4), dtype=np.float32)
    F = pastixpy.factorize(A32)
    b64 = np.linspace(1, 2, 16)
    x = F.solve(b64)
    assert x.dtype == np.float64
    assert_solution(A32, x, b64, np.float32)
    x = F.solve(b64.astype(np.complex64))
    assert x.dtype == np.complex64
    Fc = pastixpy.factorize(helmholtz2d(4, dtype=np.complex64))
    assert Fc.solve(np.ones(16, dtype=np.float32)).dtype == np.complex64


# ---------------------------------------------------------------------------- orderings


@pytest.mark.parametrize(
    "A, kind",
    [
        (laplacian((6, 6)), "llt"),
        (saddle_point((3, 4)), "ldlt"),
        (dominant_symmetric(30, 41, complex_=True, signs="mixed"), "ldlh"),
        (helmholtz2d(5), "ldlt"),
        (unsymmetric_zero_diagonal(36, 42), "lu"),
        (unsymmetric_zero_diagonal(36, 43, complex_=True), "lu"),
    ],
    ids=["llt", "ldlt", "ldlh", "ldlt-complex", "lu", "lu-complex"],
)
def test_orderings_give_the_same_answer(A, kind):
    n = A.shape[0]
    b = random_vector(rng_for(5), n, np.iscomplexobj(A.data))
    ref = dense_solve(A, b)
    orderings = ORDERINGS + [rng_for(6).permutation(n), np.arange(n)[::-1].copy()]
    perms = []
    for ordering in orderings:
        F = pastixpy.factorize(A, kind=kind, ordering=ordering)
        x = F.solve(b)
        assert_solution(A, x, b, np.float64)
        np.testing.assert_allclose(x, ref, rtol=1e-9, atol=1e-9 * np.abs(ref).max())
        assert sorted(F.perm.tolist()) == list(range(n))
        perms.append(tuple(F.perm.tolist()))
    assert len(set(perms)) > 1  # the orderings did differ


# ---------------------------------------------------------------------------- hypothesis


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    n=st.integers(1, 40),
    density=st.floats(0.0, 0.3),
    seed=st.integers(0, 2**32 - 1),
    structure=st.sampled_from(["general", "spd", "indefinite", "hpd", "hermitian", "csym"]),
    ordering=st.sampled_from(ORDERINGS + ["random"]),
    nrhs=st.sampled_from([None, 1, 3, 13]),
    double=st.booleans(),
)
def test_random_diagonally_dominant(n, density, seed, structure, ordering, nrhs, double):
    rng = rng_for(seed)
    complex_ = structure in ("hpd", "hermitian", "csym") or (
        structure == "general" and seed % 2 == 1
    )
    if structure == "general":
        R = sp.random_array((n, n), density=density, rng=rng, format="csc")
        if complex_:
            R = R + 1j * sp.random_array((n, n), density=density, rng=rng, format="csc")
        R = R - sp.diags_array(R.diagonal())
        A = sp.csc_array(R + sp.diags_array(np.abs(R).sum(axis=1) + rng.uniform(0.5, 2, n)))
    else:
        A = dominant_symmetric(
            n,
            seed,
            complex_=complex_,
            hermitian=structure != "csym",
            signs="positive" if structure in ("spd", "hpd") else "mixed",
            density=density,
        )
    dtype = (np.complex128 if double else np.complex64) if complex_ else np.float64
    if not double and not complex_:
        dtype = np.float32
    A = A.astype(dtype)
    if ordering == "random":
        ordering = rng.permutation(n)
    shape = (n,) if nrhs is None else (n, nrhs)
    b = random_vector(rng, shape, complex_).astype(dtype)
    F = pastixpy.factorize(A, ordering=ordering)
    expected = {
        "general": {"lu"},
        "spd": {"llt"},
        "hpd": {"llt"},
        "indefinite": {"llt", "ldlt"},  # "mixed" signs can be all positive when n is small
        "hermitian": {"llt", "ldlh"},
        "csym": {"ldlt"},
    }[structure]
    if structure == "general" and ((A != A.T).nnz == 0 or (A != A.conj().T).nnz == 0):
        expected = {"llt", "ldlt"}  # a sparse random matrix can come out symmetric
    assert F.kind in expected
    x = F.solve(b)
    assert x.shape == shape
    berr = backward_error(A, x, b)
    assert berr.max() <= tol_for(dtype)
    ref = sla.splu(A.astype(np.complex128 if complex_ else np.float64)).solve(
        b.astype(np.complex128 if complex_ else np.float64)
    )
    # Diagonally dominant: well conditioned, so x is accurate too.
    assert np.abs(x - ref).max() <= 1e3 * tol_for(dtype) * max(np.abs(ref).max(), 1e-30)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    n=st.integers(2, 40),
    density=st.floats(0.0, 0.25),
    seed=st.integers(0, 2**32 - 1),
    complex_=st.booleans(),
    ordering=st.sampled_from(ORDERINGS + ["random"]),
    nrhs=st.sampled_from([None, 1, 2]),
    trans=st.sampled_from(["N", "T", "H"]),
)
def test_random_zero_diagonal_needs_matching(n, density, seed, complex_, ordering, nrhs, trans):
    A = unsymmetric_zero_diagonal(n, seed, complex_=complex_, density=density)
    rng = rng_for(seed + 1)
    if ordering == "random":
        ordering = rng.permutation(n)
    shape = (n,) if nrhs is None else (n, nrhs)
    b = random_vector(rng, shape, complex_)
    F = pastixpy.factorize(A, ordering=ordering)
    if (A != A.T).nnz:
        assert F.kind == "lu"
    x = F.solve(b, trans=trans)
    assert x.shape == shape
    M = op(A, trans)
    assert backward_error(M, x, b).max() <= 1e-12
    ref = sla.splu(sp.csc_array(M)).solve(b)
    np.testing.assert_allclose(x, ref, rtol=1e-9, atol=1e-9 * np.abs(ref).max())


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    nh=st.integers(2, 25),
    nb_frac=st.floats(0.1, 0.9),
    seed=st.integers(0, 2**32 - 1),
    complex_=st.booleans(),
    ordering=st.sampled_from(ORDERINGS + ["random"]),
)
def test_random_kkt(nh, nb_frac, seed, complex_, ordering):
    nb = max(1, min(nh - 1, int(nb_frac * nh)))
    A = kkt(nh, nb, seed, complex_=complex_)
    n = A.shape[0]
    rng = rng_for(seed)
    if ordering == "random":
        ordering = rng.permutation(n)
    b = random_vector(rng, (n, 2), complex_)
    F = pastixpy.factorize(A, ordering=ordering)
    assert F.kind == ("ldlh" if complex_ else "ldlt")
    x = F.solve(b)
    assert backward_error(A, x, b).max() <= 1e-12
    ref = sla.splu(A).solve(b)
    cond = np.linalg.cond(A.toarray(), 1)
    assert np.abs(x - ref).max() <= 1e-13 * cond * np.abs(ref).max()


# ---------------------------------------------------------------------------- the kernels directly


def kernel_factor(B, kind, ordering="metis", pivot_tol=1e-300, progress=None):
    """Analyse and factor B with no preprocessing; returns (analysis, factors)."""
    B = sp.csc_array(B)
    B.sort_indices()
    B.indptr = B.indptr.astype(np.int64)
    B.indices = B.indices.astype(np.int64)
    an = analyze(B, ordering=ordering, kind=kind)
    layout = PanelLayout.from_symbol(an.symbol)
    amap = AssemblyMap.build(B, an.iperm, layout, KINDS[kind].two_factors)
    return an, factorize_numeric(B, an, layout, amap, KINDS[kind], pivot_tol, progress=progress)


def kernel_solve(factors, an, R, trans="N"):
    """x = B⁻¹ R (or B⁻ᵀ R) with the raw factors, mapping to and from pivot order."""
    X = np.ascontiguousarray(R[an.perm].astype(factors.dtype))
    factors.solve_inplace(X, trans)
    x = np.empty_like(X)
    x[an.perm] = X
    return x


KERNEL_CASES = [
    ("llt", np.float64, lambda: laplacian((7, 6))),
    ("llt", np.float32, lambda: vector_laplacian((3, 3), dofs=3)),
    ("llt", np.complex128, lambda: dominant_symmetric(45, 51, complex_=True)),
    ("llt", np.complex64, lambda: dominant_symmetric(30, 52, complex_=True)),
    ("ldlt", np.float64, lambda: dominant_symmetric(45, 53, signs="mixed")),
    ("ldlt", np.float32, lambda: dominant_symmetric(30, 54, signs="mixed")),
    ("ldlt", np.complex128, lambda: helmholtz2d(6)),
    ("ldlt", np.complex64, lambda: dominant_symmetric(30, 55, complex_=True, hermitian=False)),
    ("ldlh", np.complex128, lambda: dominant_symmetric(45, 56, complex_=True, signs="mixed")),
    ("ldlh", np.complex64, lambda: dominant_symmetric(30, 57, complex_=True, signs="mixed")),
    ("ldlh", np.float64, lambda: dominant_symmetric(30, 58, signs="mixed")),
    ("lu", np.float64, lambda: convection_diffusion3d(4, peclet=10.0)),
    ("lu", np.float32, lambda: convection_diffusion3d(3, peclet=5.0)),
    ("lu", np.complex128, lambda: convection_diffusion3d(3) + 1j * sp.eye_array(27)),
    ("lu", np.complex64, lambda: helmholtz2d(5, ppw=40)),
]


@pytest.mark.parametrize("ordering", ["metis", "natural"])
@pytest.mark.parametrize(
    "kind, dtype, builder",
    KERNEL_CASES,
    ids=[f"{k}-{np.dtype(d)}-{i}" for i, (k, d, _) in enumerate(KERNEL_CASES)],
)
def test_kernel_factor_and_solve(kind, dtype, builder, ordering):
    B = sp.csc_array(builder()).astype(dtype)
    n = B.shape[0]
    an, fac = kernel_factor(B, kind, ordering)
    assert fac.kind.name == kind
    assert fac.dtype == dtype
    assert not fac.perturbed.any()
    assert not fac.panel(0).flags.writeable
    R = random_vector(rng_for(n), (n, 4), np.dtype(dtype).kind == "c")
    X = kernel_solve(fac, an, R)
    # One plain solve (no refinement): accurate to a modest multiple of eps * cond.
    eps = np.finfo(dtype).eps
    assert backward_error(B, X, R).max() <= 50 * n * eps
    if kind == "lu":
        Xt = kernel_solve(fac, an, R, "T")
        assert backward_error(sp.csc_array(B.T), Xt, R).max() <= 50 * n * eps
    # The product of the pivots is the determinant (|det| for LLᵀ, squared).
    d = fac.diagonal().astype(np.complex128)
    Bd = B.toarray().astype(np.complex128)
    sign, logabs = np.linalg.slogdet(Bd)
    if kind == "llt":
        assert np.all(d.real > 0)
        np.testing.assert_allclose(2 * np.log(np.abs(d)).sum(), logabs, rtol=100 * eps, atol=1e-3)
    elif kind == "lu":
        np.testing.assert_allclose(np.log(np.abs(d)).sum(), logabs, rtol=100 * eps, atol=1e-3)
        np.testing.assert_allclose(np.prod(d / np.abs(d)), sign, atol=1e-3)
    else:
        assert fac.pivots.pivtype.shape == (n,) and set(np.unique(fac.pivots.pivtype)) <= {0, 1, 2}
        # A 2x2 pivot starts at a 2 and is followed by a 0.
        twos = np.flatnonzero(fac.pivots.pivtype == 2)
        assert np.all(fac.pivots.pivtype[twos + 1] == 0)
        assert np.sum(fac.pivots.pivtype == 0) == twos.size
        assert sorted(fac.pivots.lperm.tolist()) == list(range(n))


def hermitian_weak_diagonal(n, seed, density=1.0):
    """Hermitian indefinite with a weak diagonal (0.1 against off-diagonal entries near 1):
    Bunch-Kaufman takes many 2x2 pivots on it. Well conditioned (about 1e3 at n = 200)."""
    rng = np.random.default_rng(seed)
    M = sp.random_array((n, n), density=density, rng=rng, dtype=complex)
    M = sp.triu(M, 1)
    return sp.csc_array(M + M.conj().T + sp.diags_array(0.1 * rng.standard_normal(n)))


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
@pytest.mark.parametrize("ordering", ["natural", "metis"])
def test_kernel_hermitian_pivots_keep_the_diagonal_real(dtype, ordering):
    # The Schur complements' diagonals pick up imaginary rounding (gemm updates from
    # other cblks, the 1x1 and 2x2 updates inside a block); kept, they made D⁻¹
    # non-Hermitian and the error grew step by step: backward error 7e-8 in double and
    # 7e-2 in single precision at n = 200, against about eps for a real matrix.
    n = 200
    B = hermitian_weak_diagonal(n, 0, density=1.0 if ordering == "natural" else 0.1)
    B = B.astype(dtype)
    an, fac = kernel_factor(B, "ldlh", ordering)
    assert not fac.perturbed.any() and np.count_nonzero(fac.pivots.pivtype == 2) > 10
    assert not fac.diagonal().imag.any()  # D's diagonal is real, 2x2 blocks included
    R = random_vector(rng_for(n), (n, 2), True)
    X = kernel_solve(fac, an, R)
    assert backward_error(B, X, R).max() <= 20 * n * np.finfo(dtype).eps


def test_single_precision_hermitian_indefinite_is_solved():
    # The reproducer, and more like it: complex64 Hermitian indefinite matrices
    # with condition numbers below 1e3, solved without perturbed pivots or errors.
    for seed in range(3, 23):
        rng = np.random.default_rng(seed)
        n = 200
        M = sp.random(n, n, density=0.2, random_state=rng, dtype=complex)
        M = sp.triu(M, 1)
        M = M + M.conj().T + sp.diags(0.1 * rng.standard_normal(n))
        A = sp.csc_matrix(M).astype(np.complex64)
        if np.linalg.cond(A.toarray()) > 1e3:
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("error", pastixpy.PastixWarning)
            F = pastixpy.factorize(A)
            x = F.solve(np.ones(n, np.complex64))
        assert F.kind == "ldlh" and F.stats["perturbed_pivots"] == 0
        assert backward_error(A, x, np.ones(n)).max() <= 1e-6


@pytest.mark.parametrize("ordering", ["metis", "natural"])
@pytest.mark.parametrize(
    "kind, dtype, builder",
    KERNEL_CASES
    + [
        # Wide supernodes (natural ordering fills in): gemv and trsv go to the BLAS,
        # and the real double ones' backward products with 4+ right-hand sides to
        # rows.h's unpacked kernel.
        ("llt", np.complex128, lambda: dominant_symmetric(120, 61, complex_=True)),
        ("llt", np.float64, lambda: dominant_symmetric(120, 64)),
        ("ldlt", np.float64, lambda: dominant_symmetric(120, 65, signs="mixed")),
        ("ldlh", np.complex64, lambda: dominant_symmetric(120, 62, complex_=True, signs="mixed")),
        (
            "lu",
            np.float64,
            lambda: sp.random_array((120, 120), density=0.2, rng=63) + 30 * sp.eye_array(120),
        ),
    ],
    ids=[f"{k}-{np.dtype(d)}-{i}" for i, (k, d, _) in enumerate(KERNEL_CASES)]
    + ["llt-wide", "llt-wide-double", "ldlt-wide-double", "ldlh-wide", "lu-wide"],
)
@pytest.mark.parametrize("nrhs", [3, 13])
def test_kernel_single_rhs_matches_block_solve(kind, dtype, builder, ordering, nrhs):
    """One right-hand side runs level-2 code (plain loops on small panels, the BLAS on
    large ones), several run rows.h's loops (narrow cblks), gemm/trsm and the unpacked
    kernel (wide ones; 13 = 8 + 4 + 1 right-hand sides takes each of its branches):
    all must give the same solution."""
    B = sp.csc_array(builder()).astype(dtype)
    n = B.shape[0]
    an, fac = kernel_factor(B, kind, ordering)
    assert not fac.perturbed.any()
    R = random_vector(rng_for(n + 1), (n, nrhs), np.dtype(dtype).kind == "c")
    eps = np.finfo(dtype).eps
    for trans in ("N", "T") if kind == "lu" else ("N",):
        X = kernel_solve(fac, an, R, trans)
        for j in range(nrhs):
            x = kernel_solve(fac, an, R[:, j : j + 1], trans)
            np.testing.assert_allclose(x, X[:, j : j + 1], rtol=0, atol=1e3 * eps * abs(X).max())


def reference_position(layout, r, c):
    """Index of entry (r, c), pivot order, in its cblk's panel, found by scanning the bloks."""
    k = int(np.searchsorted(layout.fcol, c, side="right") - 1)
    f, start = layout.fcol[k], (c - layout.fcol[k]) * layout.stride[k]
    if f <= r < layout.fcol[k + 1]:
        return start + r - f
    for b in range(layout.bloknum[k] + 1, layout.bloknum[k + 1]):
        if layout.frow[b] <= r <= layout.lrow[b]:
            return start + layout.bcoef[b] + r - layout.frow[b]
    raise AssertionError(f"({r}, {c}) is in no blok")


@pytest.mark.parametrize(
    "kind, builder",
    [
        ("llt", lambda: vector_laplacian((4, 3), dofs=2)),
        ("lu", lambda: convection_diffusion3d(3, peclet=5.0)),
        (
            "lu",
            lambda: sp.csc_array(sp.random_array((40, 40), density=0.1, rng=7)) + sp.eye_array(40),
        ),
    ],
)
def test_assembly_map_groups_entries_by_cblk(kind, builder):
    B = sp.csc_array(builder())
    B.sort_indices()
    B.indptr, B.indices = B.indptr.astype(np.int64), B.indices.astype(np.int64)
    an = analyze(B, ordering="metis", kind=kind)
    layout = PanelLayout.from_symbol(an.symbol)
    amap = AssemblyMap.build(B, an.iperm, layout, kind == "lu")
    cols = np.repeat(np.arange(B.shape[0]), np.diff(B.indptr))
    pr, pc = an.iperm[B.indices], an.iperm[cols]
    lower = pr >= pc
    for src, pos, ptr, upper in (
        (amap.src_l, amap.pos_l, amap.ptr_l, False),
        (amap.src_u, amap.pos_u, amap.ptr_u, True),
    ):
        ncblk = layout.fcol.size - 1
        k = np.repeat(np.arange(ncblk), np.diff(ptr))
        assert ptr[0] == 0 and ptr[-1] == src.size == pos.size
        # Each cblk's entries lie in its own panel, where the scan puts them.
        assert np.all((pos >= 0) & (pos < layout.panel_sizes[k]))
        r, c = (pc[src], pr[src]) if upper else (pr[src], pc[src])
        assert [reference_position(layout, *rc) for rc in zip(r, c, strict=True)] == pos.tolist()
    if kind == "llt":
        assert sorted(amap.src_l) == np.flatnonzero(lower).tolist() and amap.src_u.size == 0
    else:
        assert sorted(np.concatenate([amap.src_l, amap.src_u])) == list(range(B.nnz))


def test_panel_positions_reject_entries_outside_the_structure():
    an = analyze(laplacian((6, 6)), ordering="metis")
    layout = PanelLayout.from_symbol(an.symbol)
    n = int(layout.fcol[-1])
    outside = []
    for c in range(n):
        for r in range(c + 1, n):
            try:
                reference_position(layout, r, c)
            except AssertionError:
                outside.append((r, c))
    assert outside  # a 2D grid's factor is not dense
    r, c = outside[len(outside) // 2]
    with pytest.raises(ValueError, match="outside the block structure"):
        layout.position(np.array([r]), np.array([c]))
    with pytest.raises(ValueError, match="outside the block structure"):
        layout.position(np.array([0]), np.array([n - 1]))  # above the diagonal block


def reference_assembly_map(B, iperm, layout, two_factors):
    """AssemblyMap's fields by numpy passes and :meth:`PanelLayout.position` (the map as it
    was built before its one-pass kernel): entries sorted by pivot column, filtered,
    positioned, grouped by cblk."""

    def by_pivot_column(indptr, indices, perm):
        lengths = np.diff(indptr)[perm]
        starts = np.asarray(indptr[:-1], dtype=np.int64)[perm]
        first = np.cumsum(lengths) - lengths
        src = np.repeat(starts - first, lengths) + np.arange(int(lengths.sum()))
        return src, iperm[indices[src]], np.repeat(np.arange(iperm.size), lengths)

    def cblk_ptr(pc):
        return np.searchsorted(pc, layout.fcol)

    perm = np.argsort(iperm)
    src, pr, pc = by_pivot_column(B.indptr, B.indices, perm)
    none = np.empty(0, dtype=np.int64)
    if not two_factors:
        lower = pr >= pc
        pr, pc = pr[lower], pc[lower]
        no_entries = np.zeros(layout.ncblk + 1, dtype=np.int64)
        return src[lower], layout.position(pr, pc), cblk_ptr(pc), none, none, no_entries
    to_l = pr >= layout.fcol[layout.col2cblk[pc]]
    src, pr, pc = src[to_l], pr[to_l], pc[to_l]
    n = B.shape[0]
    T = sp.csc_array((np.arange(B.nnz), B.indices, B.indptr), shape=(n, n)).T.tocsc()
    src_t, pr_t, pc_t = by_pivot_column(T.indptr, T.indices, perm)
    to_u = pr_t >= layout.fcol[layout.col2cblk[pc_t] + 1]
    pr_t, pc_t = pr_t[to_u], pc_t[to_u]
    return (
        src,
        layout.position(pr, pc),
        cblk_ptr(pc),
        T.data[src_t[to_u]],
        layout.position(pr_t, pc_t),
        cblk_ptr(pc_t),
    )


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    n=st.integers(1, 60),
    density=st.floats(0.0, 0.3),
    seed=st.integers(0, 2**32 - 1),
    kind=st.sampled_from(["llt", "lu"]),
    ordering=st.sampled_from(["amd", "metis", "natural", "random"]),
    split=st.sampled_from(["auto", (2, 4), None]),
)
def test_assembly_map_matches_its_numpy_reference(n, density, seed, kind, ordering, split):
    rng = rng_for(seed)
    R = sp.random_array((n, n), density=density, rng=rng, format="csc")
    if kind == "llt":
        R = R + R.T
    B = sp.csc_array(R + sp.eye_array(n))
    B.sort_indices()
    B.indptr, B.indices = B.indptr.astype(np.int64), B.indices.astype(np.int64)
    if ordering == "random":
        ordering = rng.permutation(n)
    an = analyze(B, ordering=ordering, kind=kind, split=split)
    layout = PanelLayout.from_symbol(an.symbol)
    amap = AssemblyMap.build(B, an.iperm, layout, kind == "lu")
    ref = reference_assembly_map(B, an.iperm, layout, kind == "lu")
    names = ("src_l", "pos_l", "ptr_l", "src_u", "pos_u", "ptr_u")
    for name, expected in zip(names, ref, strict=True):
        assert getattr(amap, name).tolist() == expected.tolist(), name


def test_assembly_map_rejects_entries_outside_the_structure():
    A = laplacian((6, 6))
    an = analyze(A, ordering="metis")
    layout = PanelLayout.from_symbol(an.symbol)
    B = sp.csc_array(np.ones((36, 36)))  # dense: most entries lie outside a grid's factor
    B.indptr, B.indices = B.indptr.astype(np.int64), B.indices.astype(np.int64)
    with pytest.raises(ValueError, match="outside the block structure"):
        AssemblyMap.build(B, an.iperm, layout, False)


def test_kernel_solve_identity_gives_inverse():
    B = dominant_symmetric(20, 61, signs="mixed")
    an, fac = kernel_factor(B, "ldlt")
    Inv = kernel_solve(fac, an, np.eye(20))
    np.testing.assert_allclose(Inv, np.linalg.inv(B.toarray()), rtol=0, atol=1e-12)


def test_kernel_progress_reports_up_to_one():
    seen = []
    kernel_factor(laplacian((12, 12)), "llt", progress=seen.append)
    assert seen, "progress was never called"
    assert all(0 < f <= 1 for f in seen)
    assert seen == sorted(seen)
    assert seen[-1] == pytest.approx(1.0)


@pytest.mark.parametrize("ordering", ORDERINGS)
def test_kernel_not_positive_definite_names_the_column(ordering):
    # Removing column 9 leaves an SPD matrix, so whatever the order, 9's pivot is the one to fail.
    A = laplacian((4, 4)).tolil()
    A[9, 9] = -10.0
    with pytest.raises(pastixpy.NotPositiveDefiniteError, match="pivot of column 9") as info:
        kernel_factor(A.tocsc(), "llt", ordering)
    assert info.value.column == 9


@pytest.mark.parametrize("kind", ["ldlt", "lu"])
@pytest.mark.parametrize("ordering", ["natural", "metis", "amd"])
def test_kernel_static_pivoting_flags_the_zero_pivot(kind, ordering):
    # Block diagonal: an exactly singular 1x1 block at column 5 (a stored zero) amid SPD blocks.
    A = sp.csc_array(
        sp.block_diag([laplacian((5,)), sp.csc_array([[1.0]]), laplacian((3, 2))], format="csc")
    )
    assert A.indptr[6] - A.indptr[5] == 1
    A.data[A.indptr[5]] = 0.0
    an, fac = kernel_factor(A, kind, ordering, pivot_tol=1e-8)
    assert fac.perturbed.sum() == 1
    assert an.perm[np.flatnonzero(fac.perturbed)[0]] == 5
    # The other pivots were left alone: the solve is exact away from column 5.
    b = np.ones(A.shape[0])
    b[5] = 0.0
    x = kernel_solve(fac, an, b.reshape(-1, 1))[:, 0]
    assert abs(x[5]) < 1e-6
    mask = np.arange(A.shape[0]) != 5
    sub = A.toarray()[np.ix_(mask, mask)]
    np.testing.assert_allclose(x[mask], np.linalg.solve(sub, b[mask]), rtol=1e-12, atol=1e-12)


def test_kernel_perturbation_warning_through_the_api():
    A = sp.csc_array(np.array([[1.0, 1.0, 0.0], [1.0, 1.0, 0.0], [0.0, 0.0, 2.0]]))
    with pytest.warns(pastixpy.PastixWarning, match=r"1 pivot\(s\) smaller than .* perturbed"):
        F = pastixpy.factorize(A, kind="lu", refine="none", scaling="off", matching="off")
    assert F.stats["perturbed_pivots"] == 1


def test_one_by_one_every_kind():
    for dtype in DTYPES:
        A = sp.csc_array(np.array([[4.0]], dtype=dtype))
        kinds = ["llt", "ldlh", "lu"] if np.dtype(dtype).kind == "c" else ["llt", "ldlt", "lu"]
        for kind in kinds:
            F = pastixpy.factorize(A, kind=kind)
            x = F.solve(np.array([2.0], dtype=dtype))
            np.testing.assert_allclose(x, [0.5], rtol=1e-6)
            assert F.slogdet()[1] == pytest.approx(np.log(4.0))


def test_block_diagonal_and_disconnected():
    blocks = [laplacian((5, 4)), saddle_point((2, 2)), sp.csc_array([[-3.0]]), laplacian((3,))]
    A = sp.csc_array(sp.block_diag(blocks, format="csc"))
    b = np.arange(A.shape[0], dtype=float)
    for ordering in ORDERINGS:
        F = pastixpy.factorize(A, ordering=ordering)
        assert F.kind == "ldlt"
        assert_solution(A, F.solve(b), b, np.float64)


def test_explicit_zeros_in_the_pattern_are_harmless():
    L = laplacian((5, 5)).tocoo()
    A = sp.csc_array(
        (np.r_[L.data, 0.0, 0.0, 0.0], (np.r_[L.row, 3, 17, 0], np.r_[L.col, 17, 3, 24])),
        shape=L.shape,
    )
    assert A.nnz == L.nnz + 3
    b = np.ones(25)
    for kind in ("llt", "ldlt", "lu"):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            x = pastixpy.factorize(A, kind=kind).solve(b)
        assert_solution(A, x, b, np.float64)


# ----------------------------------------------------------------------------- solve helpers

DTYPES = [np.float32, np.float64, np.complex64, np.complex128]


@settings(max_examples=40, deadline=None)
@given(
    n=st.integers(1, 60),
    k=st.integers(1, 20),
    dtype=st.sampled_from(DTYPES),
    seed=st.integers(0, 2**31 - 1),
)
def test_permuted_rows_match_numpy(n, k, dtype, seed):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((n, k)).astype(dtype)
    if np.iscomplexobj(a):
        a += 1j * rng.standard_normal((n, k)).astype(dtype)
    p = rng.permutation(n)
    np.testing.assert_array_equal(permuted_rows(a, p), a[p])
    np.testing.assert_array_equal(permuted_rows(np.asfortranarray(a), p), a[p])
    back = np.empty_like(a)
    back[p] = a
    inplace = a.copy()
    assert unpermute_rows_inplace(inplace, p) is inplace
    np.testing.assert_array_equal(inplace, back)
    # Both ways of unpermute_rows: a gather into a new array (narrow rows), in place.
    inverse = np.argsort(p)
    np.testing.assert_array_equal(unpermute_rows(a.copy(), p, inverse), back)
    with patch("pastixpy.solve.GATHER_MAX_ROW_BYTES", 0):
        big = a.copy()
        assert unpermute_rows(big, p, inverse) is big
        np.testing.assert_array_equal(big, back)


def test_permuted_rows_rejects_bad_index():
    a = np.ones((4, 2))
    with pytest.raises(IndexError, match="row 4 out of range"):
        permuted_rows(a, np.array([0, 1, 2, 4]))
    with pytest.raises(ValueError, match="shapes do not match"):
        permuted_rows(a, np.array([0, 1, 2]))
    with pytest.raises(ValueError, match="not a permutation"):
        unpermute_rows_inplace(a.copy(), np.array([0, 1, 1, 3]))
    with pytest.raises(ValueError, match="not a permutation"):
        unpermute_rows_inplace(a.copy(), np.array([0, 1, 2, 7]))


@settings(max_examples=40, deadline=None)
@given(
    n=st.integers(1, 40),
    k=st.integers(1, 8),
    dtype=st.sampled_from(DTYPES + [np.int32]),
    seed=st.integers(0, 2**31 - 1),
)
def test_backward_error_columns_match_definition(n, k, dtype, seed):
    # ‖b − Ax‖∞ / (‖A‖∞ ‖x‖∞ + ‖b‖∞) per column, against numpy's own reductions.
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((n, n))
    x = (10 * rng.standard_normal((n, k))).astype(dtype)
    b = (10 * rng.standard_normal((n, k))).astype(dtype)
    norm_a = np.abs(A).sum(axis=1).max()
    berr = column_backward_errors(Operator(lambda X: A @ X), x, b, norm_a)
    r = b - A @ x
    denominator = norm_a * np.abs(x).max(axis=0) + np.abs(b).max(axis=0)
    # x = b = 0 (integer columns that round to zero): the exact solution, backward error 0.
    expect = np.abs(r).max(axis=0) / np.where(denominator == 0, 1.0, denominator)
    np.testing.assert_allclose(berr, expect, rtol=1e-5)


def test_backward_error_flags_non_finite_columns():
    x = np.array([[1.0, np.nan], [2.0, 1.0]])
    berr = column_backward_errors(Operator(lambda X: X), x, np.ones((2, 2)), 1.0)
    assert np.isfinite(berr[0]) and berr[1] == np.inf


@settings(max_examples=60, deadline=None)
@given(
    n=st.integers(1, 40),
    k=st.integers(1, 6),
    dtype=st.sampled_from(DTYPES),
    conj=st.booleans(),
    density=st.floats(0.0, 0.5),
    seed=st.integers(0, 2**31 - 1),
)
def test_backward_error_by_rows_matches_the_product(n, k, dtype, conj, density, seed):
    """The fused pass over op(A)'s rows (C's columns, conjugated or not) gives the
    figures of the product-then-subtract path."""
    rng = np.random.default_rng(seed)
    C = sp.random_array((n, n), density=density, rng=rng, format="csc", dtype=np.float64)
    if np.dtype(dtype).kind == "c":
        C = C + 1j * sp.random_array((n, n), density=density, rng=rng, format="csc")
    C = sp.csc_array(C.astype(dtype))
    C.sort_indices()
    C.indptr, C.indices = C.indptr.astype(np.int64), C.indices.astype(np.int64)
    x = random_vector(rng, (n, k), np.dtype(dtype).kind == "c").astype(dtype)
    b = random_vector(rng, (n, k), np.dtype(dtype).kind == "c").astype(dtype)
    op = C.conj().T if conj else C.T  # the operator whose rows are C's columns
    norm_a = float(abs(op).sum(axis=1).max()) if C.nnz else 1.0
    # C's columns are the rows of op(A) = Cᵀ (Cᴴ): read in one pass.
    fused_op = MatrixOperator(C, "H" if conj else "T", False, False)
    fused = column_backward_errors(fused_op, x, b, norm_a)
    expect = column_backward_errors(Operator(lambda X: op @ X), x, b, norm_a)
    eps = np.finfo(dtype).eps
    np.testing.assert_allclose(fused, expect, rtol=0, atol=64 * eps * max(expect.max(), eps))


def test_residual_maxima_checks_and_flags_nan():
    indptr, indices = np.array([0, 1, 2]), np.array([0, 1])
    data = np.array([2.0, 3.0])
    x = np.array([[1.0, np.nan], [1.0, 1.0]])
    res = residual_maxima(indptr, indices, data, False, x, np.ones((2, 2)))
    np.testing.assert_array_equal(res[:, 0], [2.0, 1.0, 1.0])
    assert np.isnan(res[0, 1]) and np.isnan(res[1, 1])
    with pytest.raises(ValueError, match="row 1 has a column index out of range"):
        residual_maxima(indptr, np.array([0, 2]), data, False, x, np.ones((2, 2)))
    with pytest.raises(ValueError, match="shapes do not match"):
        residual_maxima(indptr, indices, data, False, x, np.ones((3, 2)))
    with pytest.raises(ValueError, match="does not fit"):
        residual_maxima(np.array([0, 1, 3]), indices, data, False, x, np.ones((2, 2)))
