"""Pickling and copy.deepcopy of factorizations and analyses: every kind and dtype, mixed
precision, block low-rank (both strategies), after refactorize; the copy holds the same
factors bit for bit, solves alike, is usable and independent of the original; a pickle
written here is loaded and solved with in a fresh process; distributed factorizations
refuse with a TypeError."""

import copy
import multiprocessing
import pickle
import subprocess
import sys
from concurrent.futures import ProcessPoolExecutor

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from test_distributed import mpiexec, needs_mpi, unsymmetric

import pastixpy
from pastixpy import _numeric
from pastixpy.gallery import laplacian
from pastixpy.numeric import PanelLayout

# Small problems compress only with small tiles (as in test_compression.py).
SMALL = {"min_width": 16, "min_height": 4, "max_ratio": 1.0, "clusters": (16, 32)}

DTYPES = [np.float32, np.float64, np.complex64, np.complex128]


def hermitian_part(A):
    """A (real, symmetric pattern) with an antisymmetric imaginary part added off the
    diagonal: Hermitian with complex entries."""
    S = sp.triu(A, 1) - sp.tril(A, -1)
    return sp.csc_array(A + 0.2j * S)


def matrix(kind, dtype, shape=(12, 12)):
    """A matrix that ``kind`` factors, in ``dtype``: LLᵀ (LLᴴ) positive definite, LDLᵀ
    symmetric (complex symmetric) indefinite, LDLᴴ Hermitian indefinite, LU unsymmetric."""
    A = sp.csc_array(laplacian(shape), dtype=np.float64)
    eye = sp.identity(A.shape[0], format="csc")
    complex_ = np.dtype(dtype).kind == "c"
    if kind == "llt":
        M = hermitian_part(A) + 0.5 * eye if complex_ else A
    elif kind == "ldlt":
        M = A * (1 + 0.5j) - 1.5 * eye if complex_ else A - 1.5 * eye
    elif kind == "ldlh":
        M = hermitian_part(A) - 1.5 * eye
    else:
        M = unsymmetric(A.astype(np.complex128) if complex_ else A)
    return sp.csc_array(M, dtype=dtype)


def rhs(A, seed=1, k=None):
    rng = np.random.default_rng(seed)
    shape = (A.shape[0],) if k is None else (A.shape[0], k)
    b = rng.standard_normal(shape)
    if np.iscomplexobj(A.data):
        b = b + 1j * rng.standard_normal(shape)
    return b.astype(A.dtype)


def bits(a):
    """An array's dtype, shape and bytes: equal for bitwise equal arrays (NaN, -0 too)."""
    a = np.asarray(a)
    return a.dtype, a.shape, np.ascontiguousarray(a).tobytes()


def storage_content(storage, timings=True):
    """Everything a Storage holds, cblk by cblk: descriptor, dense panels (L, Uᵀ),
    compressed cblks' diagonal blocks and tiles (U, Bt or dense), as bitwise keys; the
    seconds spent compressing unless ``timings`` is False (another run's differ)."""
    S = storage.structure
    out = [storage.dtype, storage.two_factors, storage.entries, storage.nbytes]
    factors = ("L", "U") if storage.two_factors else ("L",)
    for k in range(S.ncblk):
        d = storage.describe(k)
        out.append(sorted(d.items(), key=str))
        if d["storage"] == "dense":
            try:
                out.extend(bits(storage.panel(k, f)) for f in factors)
            except ValueError as exc:  # marked for compression, no panel made yet
                out.append(str(exc))
        elif d["storage"] == "lowrank":
            out.append(bits(storage.diagonal_block(k)))
            for b in range(S.bloknum[k] + 1, S.bloknum[k + 1]):
                for f in factors:
                    u, bt = storage.tile(k, b, f)
                    out.append((bits(u), None if bt is None else bits(bt)))
    tiles = storage.tiles()
    if not timings:
        del tiles["seconds"]
    out.append(sorted((name, bits(a)) for name, a in tiles.items()))
    return out


def assert_same_factors(F, G, timings=True):
    """G holds F's factors bit for bit, in memory of its own."""
    f, g = F._factors, G._factors
    assert storage_content(f.storage, timings) == storage_content(g.storage, timings)
    assert f.storage is not g.storage
    for name in ("lperm", "pivtype", "dsub", "pert"):
        a, b = getattr(f.pivots, name), getattr(g.pivots, name)
        assert bits(a) == bits(b)
        assert not b.flags.writeable  # frozen as the original's
    for name in ("fcol", "bloknum", "stride", "frow", "lrow", "fcblk", "bcoef"):
        assert bits(getattr(f.layout.structure, name)) == bits(getattr(g.layout.structure, name))
    # The layout and the storage share one block structure, as in the original.
    assert g.storage.structure is g.layout.structure
    assert f.threads == g.threads and f.kind == g.kind


def assert_same_solves(F, G, trans=("N",)):
    """G solves exactly as F (one and several right-hand sides), with the same info."""
    A = F._solver.C
    for t in trans:
        for b in (rhs(A), rhs(A, seed=2, k=3)):
            x, y = F.solve(b, trans=t), G.solve(b, trans=t)
            assert bits(x) == bits(y)
            sf, sg = F.stats, G.stats
            for key in ("backward_error", "refinement_steps", "refinement"):
                assert sf[key] == sg[key], key


def copies(F):
    """F through pickle (default and highest protocol) and through copy.deepcopy."""
    yield "pickle", pickle.loads(pickle.dumps(F))
    yield "pickle5", pickle.loads(pickle.dumps(F, protocol=pickle.HIGHEST_PROTOCOL))
    yield "deepcopy", copy.deepcopy(F)


def check_round_trips(F, A2=None, trans=("N",)):
    """Every copy of F: same stats, factors and solves; usable (solve, slogdet,
    refactorize); independent (refactorizing it leaves F as it was) and refactorized
    exactly as F is after."""
    stats = F.stats
    A = F._solver.C
    b = rhs(A)
    x = F.solve(b)
    before = storage_content(F._factors.storage)
    refactorized = []
    for how, G in copies(F):
        assert isinstance(G, pastixpy.Factorization), how
        assert G.stats == stats, how
        assert (G.shape, G.dtype, G.kind) == (F.shape, F.dtype, F.kind)
        assert repr(G) == repr(F)
        assert_same_factors(F, G)
        assert_same_solves(F, G, trans)
        with np.errstate(all="ignore"):
            assert G.slogdet() == F.slogdet()
        if A2 is not None:
            G.refactorize(A2)
            # The original is untouched: same factors, same solution.
            assert storage_content(F._factors.storage) == before
            assert bits(F.solve(b)) == bits(x)
            refactorized.append(G)
    if A2 is not None:
        F.refactorize(A2)
        for G in refactorized:
            assert_same_factors(F, G, timings=False)
            assert bits(G.solve(b)) == bits(F.solve(b))


def scaled_values(A, factor=2.0):
    """A of the same pattern with other values (the diagonal scaled)."""
    return sp.csc_array(A + (factor - 1) * sp.diags_array(A.diagonal()), dtype=A.dtype)


KIND_DTYPES = [
    (kind, dtype)
    for kind in ("llt", "ldlt", "ldlh", "lu")
    for dtype in DTYPES
    if kind != "ldlh" or np.dtype(dtype).kind == "c"
]


@pytest.mark.parametrize(
    "kind,dtype", KIND_DTYPES, ids=[f"{k}-{np.dtype(d)}" for k, d in KIND_DTYPES]
)
def test_dense_factorization_round_trips(kind, dtype):
    A = matrix(kind, dtype)
    F = pastixpy.factorize(A, kind=kind)
    assert F.kind == kind
    trans = ("N", "T", "H") if kind == "lu" else ("N",)
    check_round_trips(F, scaled_values(A), trans)


@pytest.mark.parametrize(
    "kind,dtype", [("llt", np.float64), ("lu", np.complex128), ("ldlt", np.float64)]
)
def test_mixed_precision_round_trips(kind, dtype):
    A = matrix(kind, dtype)
    F = pastixpy.factorize(A, kind=kind, precision="mixed")
    assert F.stats["precision"] == "mixed" and F._factors.dtype.itemsize * 2 == A.dtype.itemsize
    check_round_trips(F, scaled_values(A))


COMPRESSED = [
    (kind, dtype, strategy)
    for strategy in ("jit", "minmem")
    for kind, dtype in (
        ("llt", np.float64),
        ("ldlt", np.float32),
        ("ldlh", np.complex128),
        ("lu", np.complex64),
        ("lu", np.float64),
    )
]


@pytest.mark.parametrize(
    "kind,dtype,strategy",
    COMPRESSED,
    ids=[f"{k}-{np.dtype(d)}-{s}" for k, d, s in COMPRESSED],
)
def test_compressed_factorization_round_trips(kind, dtype, strategy):
    A = matrix(kind, dtype, (8, 8, 8))
    F = pastixpy.factorize(
        A, kind=kind, compress=("blr", {"tol": 1e-3, "strategy": strategy, **SMALL})
    )
    c = F.stats["compression"]
    assert c["strategy"] == strategy and c["lowrank_tiles"] > 0 and c["dense_tiles"] > 0
    storage = F._factors.storage
    kinds = {storage.describe(k)["storage"] for k in range(storage.structure.ncblk)}
    assert kinds == {"dense", "lowrank"}
    check_round_trips(F, scaled_values(A))


def test_compressed_mixed_precision_round_trips():
    A = matrix("lu", np.float64, (8, 8, 8))
    F = pastixpy.factorize(A, precision="mixed", compress=("blr", {"tol": 1e-4, **SMALL}))
    assert F.stats["precision"] == "mixed" and F.stats["compression"]["lowrank_tiles"] > 0
    check_round_trips(F, scaled_values(A))


@pytest.mark.parametrize("compress", [None, ("blr", {"tol": 1e-3, **SMALL})])
def test_round_trip_after_refactorize(compress):
    A = matrix("ldlt", np.float64, (8, 8, 8))
    F = pastixpy.factorize(A, kind="ldlt", compress=compress)
    F.refactorize(scaled_values(A, 3.0))
    check_round_trips(F, scaled_values(A, 0.5))


def test_round_trip_after_a_failed_refactorize():
    """A factorization left without factors pickles, and its copy refactorizes."""
    A = matrix("llt", np.float64)
    F = pastixpy.factorize(A, kind="llt")
    with pytest.raises(pastixpy.errors.NotPositiveDefiniteError):
        F.refactorize(sp.csc_array(A - 10 * sp.identity(A.shape[0], format="csc")))
    G = pickle.loads(pickle.dumps(F))
    with pytest.raises(pastixpy.errors.PastixError, match="holds no factors"):
        G.solve(np.ones(A.shape[0]))
    G.refactorize(A)
    b = rhs(A)
    assert bits(G.solve(b)) == bits(pastixpy.factorize(A, kind="llt").solve(b))


def test_copies_share_nothing_with_the_original():
    """The deep copy's coefficients, tiles and pivots are in memory of their own."""
    A = matrix("lu", np.float64, (8, 8, 8))
    F = pastixpy.factorize(A, compress=("blr", {"tol": 1e-3, **SMALL}))
    G = copy.deepcopy(F)
    f, g = F._factors, G._factors
    for k in range(f.storage.structure.ncblk):
        if f.storage.describe(k)["storage"] == "dense":
            for side in ("L", "U"):
                assert not np.shares_memory(f.storage.panel(k, side), g.storage.panel(k, side))
    assert not np.shares_memory(f.pivots.lperm, g.pivots.lperm)
    assert not np.shares_memory(F._solver.C.data, G._solver.C.data)
    del F, f  # the copy outlives the original (its tiles are its own)
    b = rhs(A)
    assert np.allclose(A @ G.solve(b), b)


def test_factorized_solver_pickles():
    """scipy's factorized(): the solve function (a bound method) goes through pickle."""
    A = matrix("lu", np.float64)
    solve = pastixpy.factorized(A)
    b = rhs(A)
    assert bits(pickle.loads(pickle.dumps(solve))(b)) == bits(solve(b))


PROGRESS = []


def record_progress(fraction):
    PROGRESS.append(fraction)


def test_copy_keeps_the_options():
    """The copy refactorizes with the options the original was made with, its progress
    callable included."""
    A = matrix("ldlt", np.float64)
    F = pastixpy.factorize(A, kind="ldlt", refine="gmres", scaling="off", progress=record_progress)
    for G in (pickle.loads(pickle.dumps(F)), copy.deepcopy(F)):
        assert G._options == F._options
        PROGRESS.clear()
        G.refactorize(scaled_values(A))
        assert PROGRESS and PROGRESS[-1] == 1.0
        assert not G.stats["scaling"]


def test_a_lambda_progress_deep_copies_but_does_not_pickle():
    A = matrix("llt", np.float64)
    F = pastixpy.factorize(A, progress=lambda fraction: None)
    G = copy.deepcopy(F)
    assert bits(G.solve(rhs(A))) == bits(F.solve(rhs(A)))
    with pytest.raises((pickle.PicklingError, AttributeError), match="lambda"):
        pickle.dumps(F)


# ---------------------------------------------------------------------------- the storage itself


def partial_storage(two_factors=True):
    """A Storage in every state a descriptor can be in: dense panels in the group arrays,
    panels of their own (cblks marked for compression that received contributions, and
    marked ones that have none yet), cblks of another owner (absent, and fan-in), with
    random values accumulated into some."""
    A = matrix("lu", np.float64, (6, 6, 6))
    layout = PanelLayout.from_symbol(pastixpy.analyze(A).symbol)
    n = layout.ncblk
    owners = (np.arange(n) % 5 == 4).astype(np.int32)  # every fifth cblk elsewhere
    compress = np.where(np.arange(n) % 3 == 1, 1, 0).astype(np.int8)
    compress[owners == 1] = 0
    fanin = ((owners == 1) & (np.arange(n) % 2 == 0)).astype(np.int8)
    storage = _numeric.Storage(
        layout.structure, np.float64, two_factors, owners=owners, compress=compress, fanin=fanin
    )
    rng = np.random.default_rng(3)
    for k in range(n):
        if owners[k] == 0 and k % 4 != 3:
            size = int(layout.panel_sizes[k])
            U = rng.standard_normal(size) if two_factors else None
            storage.accumulate(k, rng.standard_normal(size), U)
    return storage, compress


def test_storage_round_trips_in_every_state():
    storage, compress = partial_storage()
    own = [
        k
        for k in range(storage.structure.ncblk)
        if compress[k] and k % 4 != 3  # made by accumulate
    ]
    assert own
    for copied in (pickle.loads(pickle.dumps(storage)), copy.deepcopy(storage)):
        assert storage_content(copied) == storage_content(storage)
        assert (copied.held() == storage.held()).all()
        for k in own:
            assert bits(copied.panel(k, "U")) == bits(storage.panel(k, "U"))
        states = {copied.describe(k)["storage"] for k in range(copied.structure.ncblk)}
        assert states == {"dense", "absent", "fanin"}
        # A marked cblk without contributions still has no panel, as in the original.
        untouched = next(k for k in range(storage.structure.ncblk) if compress[k] and k % 4 == 3)
        with pytest.raises(ValueError, match="no panel yet"):
            copied.panel(untouched)


def test_storage_refuses_a_state_that_does_not_fit():
    """A damaged pickle is refused with a ValueError, never read out of bounds."""
    storage, _ = partial_storage()
    rebuild, (structure, dtype, two_factors, state) = storage.__reduce__()
    damaged = [
        {**state, "coef": state["coef"][:-1]},
        {**state, "storage": state["storage"][:-1]},
        {**state, "arrays": [(L[:-1], U) for L, U in state["arrays"]]},
        {**state, "storage": np.full_like(state["storage"], 7)},
    ]
    for bad in damaged:
        with pytest.raises(ValueError, match="does not fit"):
            rebuild(structure, dtype, two_factors, bad)
    F = pastixpy.factorize(
        matrix("lu", np.float64, (8, 8, 8)), compress=("blr", {"tol": 1e-3, **SMALL})
    )
    rebuild, (structure, dtype, two_factors, state) = F._factors.storage.__reduce__()
    ranks = state["ranks"].copy()
    ranks[0] = 10**6
    for bad in ({**state, "ranks": ranks}, {**state, "ranks": state["ranks"][:-1]}):
        with pytest.raises(ValueError, match="does not fit"):
            rebuild(structure, dtype, two_factors, bad)


CYCLE = """
import gc
import pastixpy
from pastixpy.gallery import laplacian
small = {"tol": 1e-3, "min_width": 16, "min_height": 4, "max_ratio": 1.0, "clusters": (16, 32)}
F = pastixpy.factorize(laplacian((8, 8, 8)), kind="lu", compress=("blr", small))
assert F.stats["compression"]["compressed_cblks"] > 0
cycle = [F]
cycle.append(cycle)
del F, cycle
print(gc.collect())
"""


def test_compressed_factors_in_a_reference_cycle_are_collected(tmp_path):
    """A compressed factorization reachable only from a reference cycle (an exception's
    traceback holding the frame that held it, say) is freed by the garbage collector
    without a crash: the storage frees its tiles through its block structure, which
    the collector must not clear first."""
    # Away from the source tree, whose pastixpy/ (unbuilt under a plain install) -c would
    # import first.
    run = subprocess.run(
        [sys.executable, "-c", CYCLE], capture_output=True, timeout=120, cwd=tmp_path
    )
    assert run.returncode == 0, run.stderr.decode()[-2000:]


# ---------------------------------------------------------------------------- analyses


def test_analysis_round_trips():
    A = matrix("lu", np.float64, (8, 8, 8))
    an = pastixpy.analyze(A)
    b = rhs(A)
    x = pastixpy.factorize(A, analysis=an).solve(b)
    for copied in (pickle.loads(pickle.dumps(an)), copy.deepcopy(an)):
        assert repr(copied) == repr(an) and copied.stats == an.stats
        for name in ("perm", "iperm"):
            assert bits(getattr(copied, name)) == bits(getattr(an, name))
        for obj, other in ((an.tree, copied.tree), (an.symbol, copied.symbol)):
            for name, value in vars(obj).items():
                if isinstance(value, np.ndarray):
                    assert bits(getattr(other, name)) == bits(value)
                    # Read-only as the original's: a result object is not changed behind
                    # its back.
                    assert getattr(other, name).flags.writeable == value.flags.writeable
        copied.check()
        assert bits(pastixpy.factorize(A, analysis=copied).solve(b)) == bits(x)


# ---------------------------------------------------------------------------- random matrices


@settings(max_examples=25, deadline=None)
@given(
    n=st.integers(1, 60),
    density=st.floats(0.0, 0.3),
    seed=st.integers(0, 2**31 - 1),
    dtype=st.sampled_from(DTYPES),
    symmetric=st.booleans(),
)
def test_random_matrices_round_trip(n, density, seed, dtype, symmetric):
    rng = np.random.default_rng(seed)
    R = sp.random_array((n, n), density=density, rng=rng, format="csc")
    if np.dtype(dtype).kind == "c":
        R = R + 1j * sp.random_array((n, n), density=density, rng=rng, format="csc")
    if symmetric:
        R = R + R.T
    # Diagonally dominant: it factors whatever the kind.
    d = np.asarray(abs(R).sum(axis=1)).ravel() + abs(R).sum(axis=0) + 1
    A = sp.csc_array(R + sp.diags_array(d), dtype=dtype)
    F = pastixpy.factorize(A)
    b = rhs(A, seed=seed % 1000)
    x = F.solve(b)
    for _, G in copies(F):
        assert_same_factors(F, G)
        assert bits(G.solve(b)) == bits(x)


# ---------------------------------------------------------------------------- other processes

LOAD_AND_SOLVE = """
import pickle, sys
import numpy as np
with open(sys.argv[1], "rb") as f:
    factorizations = pickle.load(f)
b = np.load(sys.argv[2])
np.savez(sys.argv[3], *[F.solve(b.astype(F.dtype)) for F in factorizations])
"""


def test_pickle_loaded_and_solved_in_a_fresh_process(tmp_path):
    """Pickled here, loaded in a new interpreter (as multiprocessing's spawn does): the
    same solutions bit for bit, dense, compressed and mixed precision."""
    A = matrix("lu", np.float64, (8, 8, 8))
    Fs = [
        pastixpy.factorize(A),
        pastixpy.factorize(A, compress=("blr", {"tol": 1e-3, **SMALL})),
        pastixpy.factorize(A, compress=("blr", {"tol": 1e-3, "strategy": "minmem", **SMALL})),
        pastixpy.factorize(A.astype(np.complex64), kind="lu"),
        pastixpy.factorize(matrix("ldlh", np.complex128, (8, 8, 8)), precision="mixed"),
    ]
    b = rhs(A)
    with open(tmp_path / "F.pkl", "wb") as f:
        pickle.dump(Fs, f, protocol=pickle.HIGHEST_PROTOCOL)
    np.save(tmp_path / "b.npy", b)
    subprocess.run(
        [
            sys.executable,
            "-c",
            LOAD_AND_SOLVE,
            tmp_path / "F.pkl",
            tmp_path / "b.npy",
            tmp_path / "x.npz",
        ],
        check=True,
        timeout=300,
        cwd=tmp_path,  # away from the source tree (see above)
    )
    with np.load(tmp_path / "x.npz") as xs:
        for i, F in enumerate(Fs):
            assert bits(xs[f"arr_{i}"]) == bits(F.solve(b.astype(F.dtype)))


def test_solve_in_a_spawned_worker():
    """A factorization handed to a multiprocessing worker (spawn) solves there as here."""
    A = matrix("ldlt", np.float64, (8, 8, 8))
    F = pastixpy.factorize(A, compress=("blr", {"tol": 1e-3, **SMALL}))
    b = rhs(A)
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
        x = pool.submit(F.solve, b).result(timeout=300)
    assert bits(x) == bits(F.solve(b))


# ---------------------------------------------------------------------------- distributed


def test_distributed_factorization_refuses_to_pickle():
    from pastixpy.distributed import run_ranks

    A = matrix("llt", np.float64, (6, 6, 6))

    def job(comm):
        F = pastixpy.factorize(A if comm.Get_rank() == 0 else None, comm=comm)
        errors = []
        objects = [F] + ([F._root] if F._root is not None else [])
        for obj in objects:
            for dump in (pickle.dumps, copy.deepcopy):
                with pytest.raises(TypeError, match="distributed factorization") as info:
                    dump(obj)
                errors.append(str(info.value))
        F.solve(np.ones(A.shape[0]) if comm.Get_rank() == 0 else None)  # still usable
        return errors

    root, other = run_ranks(2, job)
    assert len(root) == 4 and len(other) == 2
    assert "ranks" in root[0]


MPI_SCRIPT = """
import copy, pickle, sys
import numpy as np
from mpi4py import MPI
import pastixpy
from pastixpy.gallery import laplacian

comm = MPI.COMM_WORLD
A = laplacian((6, 6, 6)) if comm.rank == 0 else None
F = pastixpy.factorize(A, comm=comm)
refusals = []
for dump in (pickle.dumps, copy.deepcopy):
    try:
        dump(F)
    except TypeError as exc:
        refusals.append(str(exc))
x = F.solve(np.ones(216) if comm.rank == 0 else None)
assert np.allclose(laplacian((6, 6, 6)) @ x, 1)
# One file per rank: the ranks' printed lines may interleave in mpiexec's output.
with open(f"{sys.argv[1]}/rank{comm.rank}.txt", "w") as f:
    f.write("\\n".join(refusals))
"""


@needs_mpi
def test_mpi_distributed_factorization_refuses_to_pickle(tmp_path):
    script = tmp_path / "pickle_mpi.py"
    script.write_text(MPI_SCRIPT)
    mpiexec(2, script, tmp_path, timeout=120)
    for rank in (0, 1):
        refusals = (tmp_path / f"rank{rank}.txt").read_text().splitlines()
        assert len(refusals) == 2, refusals
        assert all("distributed factorization cannot be pickled" in r for r in refusals)
