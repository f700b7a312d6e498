"""Block low-rank compression of the factors (compress=): every kind and dtype against a
reference, the tiles against the dense factor they replace, threads, the options and
their errors, the preconditioner, the CLI, the statistics."""

import json
import os
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
import scipy.sparse.linalg as sla
from hypothesis import given, settings
from hypothesis import strategies as st

import pastixpy
from pastixpy import _numeric
from pastixpy.analysis import analyze
from pastixpy.cli import main
from pastixpy.compression import Compression, parse_compress, rank_histogram
from pastixpy.errors import OptionError, PastixWarning
from pastixpy.gallery import laplacian
from pastixpy.kinds import KINDS
from pastixpy.numeric import AssemblyMap, PanelLayout, factorize_numeric
from pastixpy.runtime import OPENMP

# Small problems compress only with small tiles: every cblk at least 16 wide is
# compressed, every blok at least 4 tall may be low-rank at any rank.
SMALL = {"min_width": 16, "min_height": 4, "max_ratio": 1.0, "clusters": (16, 32)}


def lap3d(n, dtype=np.float64, shift=0.0):
    A = laplacian((n, n, n)).astype(dtype)
    if shift:
        A = A - shift * sp.identity(A.shape[0], dtype=dtype, format="csc")
    return sp.csc_array(A)


def perturbed(A, seed=0, hermitian=False):
    """A with its off-diagonal values jittered (LU: unsymmetric values), complex ones
    complex; hermitian keeps Aᴴ = A."""
    rng = np.random.default_rng(seed)
    C = sp.coo_array(A)
    jitter = 1 + 0.2 * rng.standard_normal(C.nnz)
    if np.iscomplexobj(C.data):
        jitter = jitter + 0.2j * rng.standard_normal(C.nnz)
    off = C.row != C.col
    data = np.where(off, C.data * jitter, C.data)
    M = sp.csc_array((data.astype(A.dtype), (C.row, C.col)), shape=C.shape)
    if hermitian:
        M = (M + M.conj().T) / 2
    return sp.csc_array(M)


def backward_error(A, x, b):
    r = A @ x - b
    return np.abs(r).max() / (abs(A).sum(axis=1).max() * np.abs(x).max() + np.abs(b).max())


CASES = [
    ("llt", np.float64, lambda: lap3d(9)),
    ("llt", np.complex128, lambda: perturbed(lap3d(9, np.complex128), hermitian=True)),
    ("ldlt", np.float64, lambda: lap3d(9, shift=1.5)),
    ("ldlt", np.complex128, lambda: lap3d(9, np.complex128, shift=1.5 + 0.5j)),
    ("ldlh", np.complex128, lambda: perturbed(lap3d(9, np.complex128, 1.5), hermitian=True)),
    ("lu", np.float64, lambda: perturbed(lap3d(9))),
    ("lu", np.complex128, lambda: perturbed(lap3d(9, np.complex128))),
    ("llt", np.float32, lambda: lap3d(9, np.float32)),
    ("lu", np.complex64, lambda: perturbed(lap3d(9, np.complex64))),
    ("ldlt", np.float32, lambda: lap3d(9, np.float32, shift=1.5)),
]


@pytest.mark.parametrize("strategy", ["jit", "minmem"])
@pytest.mark.parametrize("kind,dtype,make", CASES, ids=[f"{k}-{np.dtype(d)}" for k, d, _ in CASES])
def test_every_kind_and_dtype_against_scipy(kind, dtype, make, strategy):
    A = make()
    assert A.dtype == dtype
    b = A @ np.arange(1, A.shape[0] + 1, dtype=dtype) / A.shape[0]
    single = np.dtype(dtype).char in "fF"
    F = pastixpy.factorize(
        A, kind=kind, compress=("blr", {"tol": 1e-3, "strategy": strategy, **SMALL})
    )
    c = F.stats["compression"]
    assert c["strategy"] == strategy
    assert c["lowrank_tiles"] > 0 and c["ratio"] < 1.0
    x = F.solve(b)
    reference = sla.spsolve(A.astype(np.complex128 if A.dtype.kind == "c" else np.float64), b)
    assert backward_error(A, x, b) <= (1e-5 if single else 1e-12)
    assert np.abs(x - reference).max() <= (1e-2 if single else 1e-8) * np.abs(reference).max()
    assert F.stats["refinement_steps"] >= 1  # compressed factors always call for refinement
    # The compressed factors alone: an error of the order of the tolerance, which
    # refinement removed.
    P = F.aspreconditioner()
    e = backward_error(A, P @ b, b)
    assert 1e-6 < e <= 0.1


@pytest.mark.parametrize("strategy", ["jit", "minmem"])
@pytest.mark.parametrize("kind", ["llt", "ldlt", "lu"])
def test_tiles_rebuild_the_factor_within_the_tolerance(kind, strategy):
    """The factors rebuilt densely from the panels, diagonal blocks and tiles reproduce
    P A Pᵀ (L Lᵀ, L D Lᵀ, L U) to about tol, the only error being the truncations: an
    independent check of the updates through the ranks and of the stored tiles. The
    matrices are diagonally dominant, so that no local pivoting permutes them."""
    A = lap3d(8)
    if kind == "lu":
        A = perturbed(A, seed=4)
    an = analyze(A, kind=kind, clusters=(16, 32))
    layout = PanelLayout.from_symbol(an.symbol)
    amap = AssemblyMap.build(A, an.iperm, layout, KINDS[kind].two_factors)
    P = A[an.perm][:, an.perm].toarray()
    for tol in (1e-4, 1e-8):
        comp = Compression(
            tol=tol, min_width=16, min_height=4, max_ratio=1.0, norm="absolute", strategy=strategy
        )
        F = factorize_numeric(A, an, layout, amap, KINDS[kind], 1e-300, threads=1, compression=comp)
        if kind != "llt":
            assert np.array_equal(F.pivots.lperm, np.arange(A.shape[0]))
        storage = F.storage
        assert storage.compressed_cblks > 0
        L, U = dense_factors(layout, storage, kind)
        if kind == "llt":
            product = L @ L.T
        elif kind == "ldlt":
            d = np.diag(L).copy()
            np.fill_diagonal(L, 1.0)
            product = (L * d) @ L.T
        else:
            product = L @ U
        err = np.linalg.norm(P - product)
        ntiles = storage.tiles()["rank"].size
        # Each tile within tol; the error of the product gathers them, times ‖L‖.
        assert err <= 10 * tol * np.sqrt(ntiles) * np.linalg.norm(L, 2) ** 2
        if tol == 1e-4:
            assert err >= 1e-3 * tol  # it did compress


def dense_factors(layout, storage, kind):
    """L (its diagonal blocks as stored) and, for LU, U, as dense arrays."""
    n = int(layout.fcol[-1])
    L = np.zeros((n, n))
    U = np.zeros((n, n)) if kind == "lu" else None
    for k in range(layout.ncblk):
        f0, f1 = layout.fcol[k], layout.fcol[k + 1]
        diag = storage.diagonal_block(k)
        L[f0:f1, f0:f1] = np.tril(diag)
        if kind == "lu":
            np.fill_diagonal(L[f0:f1, f0:f1], 1.0)
            U[f0:f1, f0:f1] = np.triu(diag)
        dense = storage.describe(k)["storage"] == "dense"
        for b in range(layout.bloknum[k] + 1, layout.bloknum[k + 1]):
            rows = np.arange(layout.frow[b], layout.lrow[b] + 1)
            for factor in ("L", "U") if kind == "lu" else ("L",):
                if dense:
                    block = storage.panel(k, factor)[layout.bcoef[b] : layout.bcoef[b] + rows.size]
                else:
                    Ut, Bt = storage.tile(k, b, factor)
                    block = Ut if Bt is None else Ut @ Bt
                if factor == "L":
                    L[rows, f0:f1] = block
                else:
                    U[f0:f1, rows] = block.T
    return L, U


@pytest.mark.parametrize("strategy", ["jit", "minmem"])
@pytest.mark.parametrize("kind", ["llt", "ldlt", "lu"])
def test_threads_agree_with_one_thread(kind, strategy, monkeypatch):
    from pastixpy.numeric import factorize as numeric_factorize

    monkeypatch.setattr(numeric_factorize, "PARALLEL_MIN_FLOPS", 0)
    A = lap3d(12, shift=0.0 if kind == "llt" else 0.5)
    if kind == "lu":
        A = perturbed(A)
    b = np.ones(A.shape[0])
    opts = {
        "kind": kind,
        "compress": ("blr", {"tol": 1e-6, "strategy": strategy, **SMALL}),
        "refine": "none",
    }
    x1 = pastixpy.factorize(A, threads=1, **opts).solve(b)
    F2 = pastixpy.factorize(A, threads=2, **opts)
    assert F2.stats["threads"] == (2 if OPENMP else 1)  # one without OpenMP (setup.py)
    x2 = F2.solve(b)
    # Same tiles up to the order of the updates' sums: the same accuracy.
    assert abs(backward_error(A, x1, b) - backward_error(A, x2, b)) <= 1e-6
    assert np.abs(x1 - x2).max() <= 1e-3 * np.abs(x1).max()


@pytest.mark.parametrize("method", ["rrqr", "svd", "randomized"])
def test_methods_reach_the_requested_accuracy(method):
    A = lap3d(10)
    b = np.ones(A.shape[0])
    F = pastixpy.factorize(A, compress=("blr", {"tol": 1e-8, "method": method, **SMALL}))
    assert F.stats["compression"]["method"] == method
    F.solve(b)
    assert F.stats["backward_error"] <= 1e-12


def test_svd_gives_no_larger_ranks_than_rrqr():
    A = lap3d(10)
    ranks = {}
    for method in ("svd", "rrqr"):
        F = pastixpy.factorize(A, compress=("blr", {"tol": 1e-6, "method": method, **SMALL}))
        ranks[method] = F.stats["compression"]["mean_rank"]
    assert ranks["svd"] <= ranks["rrqr"] * 1.0001


def test_several_right_hand_sides_and_transposes():
    A = perturbed(lap3d(9))
    B = np.random.default_rng(3).standard_normal((A.shape[0], 3))
    F = pastixpy.factorize(A, compress=("blr", {"tol": 1e-6, **SMALL}), refine="none")
    for trans, op in (("N", A), ("T", A.T)):
        X = F.solve(B, trans=trans)
        for j in range(3):
            x1 = F.solve(B[:, j], trans=trans)
            assert np.allclose(X[:, j], x1, rtol=1e-10, atol=1e-12)
        assert backward_error(sp.csc_array(op), X[:, 0], B[:, 0]) <= 1e-3


def test_a_smaller_tolerance_stores_more_and_solves_closer():
    A = lap3d(12)
    b = np.ones(A.shape[0])
    ratio, err = [], []
    for tol in (1e-2, 1e-6, 1e-10):
        F = pastixpy.factorize(A, compress=("blr", {"tol": tol, **SMALL}), refine="none")
        ratio.append(F.stats["compression"]["ratio"])
        err.append(backward_error(A, F.solve(b), b))
    assert ratio[0] < ratio[1] < ratio[2]
    assert err[0] > err[1] > err[2]


def test_mixed_precision_with_compression():
    A = lap3d(12)
    b = np.ones(A.shape[0])
    F = pastixpy.factorize(A, precision="mixed", compress=("blr", {"tol": 1e-5, **SMALL}))
    assert F.stats["factor_dtype"] == "float32"
    assert F.stats["compression"]["lowrank_tiles"] > 0
    F.solve(b)
    assert F.stats["backward_error"] <= 1e-12


def test_spsolve_factorized_and_refactorize_take_compress():
    A = lap3d(10)
    b = np.ones(A.shape[0])
    x = pastixpy.spsolve(A, b, compress=("blr", {"tol": 1e-6, **SMALL}))
    assert backward_error(A, x, b) <= 1e-12
    solve = pastixpy.factorized(A, compress=1e-6)
    assert backward_error(A, solve(b), b) <= 1e-12
    F = pastixpy.factorize(A, compress=("blr", {"tol": 1e-6, **SMALL}))
    F.refactorize(2 * A)
    assert F.stats["compression"]["lowrank_tiles"] > 0
    assert backward_error(2 * A, F.solve(b), b) <= 1e-12


def test_aspreconditioner_in_scipy_gmres():
    A = lap3d(14)
    b = np.ones(A.shape[0])
    F = pastixpy.factorize(A, compress=("blr", {"tol": 1e-3, **SMALL}))
    counts = {}
    for name, M in (("blr", F.aspreconditioner()), ("none", None)):
        its = []
        x, info = sla.gmres(
            A,
            b,
            M=M,
            rtol=1e-10,
            restart=200,
            maxiter=400,
            callback=its.append,
            callback_type="pr_norm",
        )
        assert info == 0
        counts[name] = len(its)
        assert np.linalg.norm(A @ x - b) <= 1e-9 * np.linalg.norm(b)
    assert counts["blr"] < counts["none"] / 2


def test_aspreconditioner_in_scipy_cg():
    """SPD factors compressed at a loose tolerance stay SPD enough for CG: fewer
    iterations than unpreconditioned CG, to the same residual."""
    A = lap3d(14)
    b = np.ones(A.shape[0])
    F = pastixpy.factorize(A, kind="llt", compress=("blr", {"tol": 1e-4, **SMALL}), refine="none")
    assert F.stats["compression"]["lowrank_tiles"] > 0
    counts = {}
    for name, M in (("blr", F.aspreconditioner()), ("none", None)):
        its = []
        x, info = sla.cg(A, b, M=M, rtol=1e-10, maxiter=1000, callback=its.append)
        assert info == 0
        assert np.linalg.norm(A @ x - b) <= 1e-9 * np.linalg.norm(b)
        counts[name] = len(its)
    assert counts["blr"] <= 10 < counts["none"]


def test_a_tolerance_too_loose_to_refine_falls_back_to_full_rank():
    # Every tile rank 0 at this tolerance: block Jacobi, which 30 GMRES iterations
    # do not refine to 1e-12.
    A = lap3d(14)
    with pytest.warns(PastixWarning, match="without compression"):
        F = pastixpy.factorize(
            A,
            compress=("blr", {"tol": 0.99, "min_width": 1, "min_height": 1}),
            refine=("auto", {"maxiter": 1}),
        )
    assert F.stats["compression"] is None
    assert "compression fell back to full rank" in F.stats["retries"]


@pytest.mark.parametrize(
    "value,match",
    [
        (True, "ambiguous"),
        ("lowrank", "not understood"),
        (("blr", {"tolerance": 1e-8}), "unknown parameter"),
        (("blr", {"strategy": "later"}), "unknown compress strategy"),
        (("blr", {"method": "aca"}), "unknown compress method"),
        (("blr", {"tol": 2.0}), "tol must be in"),
        (-1e-8, "tol must be in"),
        (("blr", {"min_width": 0}), "min_width"),
        (("blr", {"max_ratio": 0}), "max_ratio"),
        (("blr", {"norm": "spectral"}), "norm"),
        (("blr", {"clusters": (10, 5)}), "clusters"),
    ],
)
def test_bad_compress_options_say_what_to_give(value, match):
    with pytest.raises(OptionError, match=match):
        pastixpy.factorize(lap3d(4), compress=value)


@pytest.mark.parametrize("kind", ["llt", "ldlt", "lu"])
def test_minimal_memory_computes_what_just_in_time_does(kind):
    """The same tiles on one thread (the sums in another order: the same ranks and,
    to rounding, the same solutions); the compressed cblks' panels exist only while
    each is factored, so the storage holds no more than the compressed factors."""
    A = lap3d(10, shift=0.0 if kind == "llt" else 0.5)
    if kind == "lu":
        A = perturbed(A)
    b = np.ones(A.shape[0])
    out = {}
    for strategy in ("jit", "minmem"):
        F = pastixpy.factorize(
            A,
            kind=kind,
            threads=1,
            refine="none",
            compress=("blr", {"tol": 1e-6, "strategy": strategy, **SMALL}),
        )
        out[strategy] = (F.stats["compression"], F.solve(b), F.stats["factor_bytes"])
    (cj, xj, bj), (cm, xm, bm) = out["jit"], out["minmem"]
    assert cj["lowrank_tiles"] == cm["lowrank_tiles"] and cj["mean_rank"] == cm["mean_rank"]
    assert bj == bm
    assert np.abs(xj - xm).max() <= 1e-8 * np.abs(xj).max()


def test_option_forms():
    assert parse_compress(None) is None and parse_compress(False) is None
    assert parse_compress(1e-6).tol == 1e-6
    assert parse_compress("blr") == Compression()
    c = parse_compress(("blr", {"tol": 1e-4, "method": "svd", "clusters": (40, 80)}))
    assert (c.tol, c.method, c.clusters) == (1e-4, "svd", (40, 80))


def test_statistics():
    A = lap3d(12)
    F = pastixpy.factorize(A, compress=("blr", {"tol": 1e-6, **SMALL}))
    c = F.stats["compression"]
    full = pastixpy.factorize(A, analysis=F.analysis).stats["factor_bytes"]
    assert c["full_rank_bytes"] == full
    assert F.stats["factor_bytes"] < full
    assert c["ratio"] == pytest.approx(F.stats["factor_bytes"] / full)
    assert sum(c["rank_histogram"].values()) == c["lowrank_tiles"]
    assert c["lowrank_tiles"] + c["dense_tiles"] == c["tiles"]
    assert c["seconds"] > 0 and c["tol_absolute"] > c["tol"]  # ‖B‖_F > 1 here
    assert F.stats["n_clusters"] > 0


def test_rank_histogram_bins():
    h = rank_histogram(np.array([0, 1, 4, 5, 16, 17, 200]))
    assert h == {
        "0": 1,
        "1-4": 2,
        "5-8": 1,
        "9-16": 1,
        "17-32": 1,
        "33-64": 0,
        "65-128": 0,
        ">128": 1,
    }


def test_cli_compress_json(capsys):
    assert main(["solve", "--example", "lap3d:12", "--compress", "1e-6", "--json"]) == 0
    stats = json.loads(capsys.readouterr().out)
    assert stats["compression"]["tol"] == 1e-6
    assert stats["backward_error"] <= 1e-12
    assert stats["peak_memory_bytes"] > stats["factor_bytes"]
    assert (
        main(
            [
                "solve",
                "--example",
                "lap3d:8",
                "--compress",
                "1e-6",
                "--compress-strategy",
                "minmem",
                "--compress-method",
                "svd",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "compressed factors" in out and "minmem, svd" in out


def test_storage_refuses_what_it_does_not_hold():
    A = lap3d(8)
    F = pastixpy.factorize(A, compress=("blr", {"tol": 1e-6, **SMALL}))
    storage = F._factors.storage
    k = int(storage.tiles()["cblks"][0])
    with pytest.raises(ValueError, match="no dense panel"):
        storage.panel(k)
    with pytest.raises(IndexError):
        storage.tile(k, 0)
    dense = next(
        j for j in range(storage.structure.ncblk) if storage.describe(j)["storage"] == "dense"
    )
    with pytest.raises(ValueError, match="not compressed"):
        storage.tile(dense, 1)


def test_kernel_refuses_compress_marks_without_parameters():
    A = lap3d(6)
    an = analyze(A, kind="llt")
    layout = PanelLayout.from_symbol(an.symbol)
    mask = np.ones(layout.ncblk, dtype=np.int8)
    storage = _numeric.Storage(layout.structure, np.float64, False, compress=mask)
    amap = AssemblyMap.build(A, an.iperm, layout, False)
    values_l, values_u = amap.values(A.data, np.float64)
    from pastixpy.numeric.factors import Pivots

    with pytest.raises(ValueError, match="compression="):
        _numeric.factorize(
            layout.structure,
            storage,
            0,
            1e-300,
            amap,
            values_l,
            values_u,
            Pivots.empty(KINDS["llt"], A.shape[0], np.float64),
        )


@settings(max_examples=15, deadline=None)
@given(
    n=st.integers(5, 9),
    seed=st.integers(0, 2**31 - 1),
    tol=st.sampled_from([1e-3, 1e-6, 1e-9]),
    kind=st.sampled_from(["llt", "ldlt", "lu"]),
)
def test_property_refined_answers_reach_the_tolerance(n, seed, tol, kind):
    A = lap3d(n, shift=0.0 if kind == "llt" else 0.7)
    if kind == "lu":
        A = perturbed(A, seed)
    b = np.random.default_rng(seed).standard_normal(A.shape[0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PastixWarning)
        F = pastixpy.factorize(A, kind=kind, compress=("blr", {"tol": tol, **SMALL}))
    x = F.solve(b)
    assert backward_error(A, x, b) <= 1e-12


_PEAK = """
import json, sys
import numpy as np
import pastixpy
from pastixpy.gallery import laplacian

def status(key):
    with open("/proc/self/status") as fh:
        return int(next(l for l in fh if l.startswith(key)).split()[1]) * 1024

A = laplacian((36, 36, 36))
an = pastixpy.analyze(A, clusters=(160, 320))
with open("/proc/self/clear_refs", "w") as fh:
    fh.write("5")
base = status("VmRSS")
compress = None if sys.argv[1] == "full" else ("blr", {"tol": 1e-6, "strategy": sys.argv[1]})
F = pastixpy.factorize(A, analysis=an, compress=compress, threads=1)
print(json.dumps({"peak": status("VmHWM") - base, "factors": F.stats["factor_bytes"]}))
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/status")
def test_minimal_memory_lowers_the_peak(tmp_path):
    """In a fresh process each: just-in-time's peak is at most full rank's (its panels
    are made at their first update and freed once compressed, so some exist with the
    tiles), minimal memory's stays near the compressed factors."""
    # Away from the source tree (``-c`` puts the working directory first on the path),
    # on the package these tests import.
    env = {**os.environ, "PYTHONPATH": str(Path(pastixpy.__file__).parents[1])}
    peaks = {}
    for strategy in ("full", "jit", "minmem"):
        out = subprocess.run(
            [sys.executable, "-c", _PEAK, strategy],
            capture_output=True,
            text=True,
            cwd=tmp_path,
            env=env,
        )
        assert out.returncode == 0, out.stderr
        peaks[strategy] = json.loads(out.stdout)
    full, jit, mm = peaks["full"], peaks["jit"], peaks["minmem"]
    assert mm["factors"] == jit["factors"] < full["factors"]
    assert jit["peak"] <= 1.05 * full["peak"]
    assert mm["peak"] <= 1.05 * jit["peak"]
    assert mm["peak"] < 0.5 * (mm["factors"] + full["factors"])  # nearer compressed than full
