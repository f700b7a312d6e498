"""F.save(path) / pastixpy.load(path): a versioned file that a later process loads and
solves with, without factoring again; another format version or a damaged file is a
clear PersistError, never a wrong solve."""

import struct
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import scipy.sparse as sp

import pastixpy
from pastixpy import persist
from pastixpy.gallery import laplacian


def saddle(n=30, m=8, seed=0):
    rng = np.random.default_rng(seed)
    K = laplacian((n,)) + sp.eye(n)
    B = sp.random(m, n, density=0.3, random_state=rng) + sp.eye(m, n)
    return sp.csc_array(sp.bmat([[K, B.T], [B, None]]))


CASES = {
    "llt": (lambda: laplacian((15, 15)), {}),
    "ldlt pairs": (saddle, {"kind": "ldlt"}),
    "lu complex": (
        lambda: sp.csc_array(
            laplacian((12, 12)) + 0.3j * sp.random(144, 144, 0.02, random_state=1)
        ),
        {"kind": "lu"},
    ),
    "mixed": (lambda: laplacian((15, 15)), {"precision": "mixed"}),
    "compressed": (lambda: laplacian((8, 8, 8)), {"compress": 1e-8}),
    "float32": (lambda: laplacian((15, 15)).astype(np.float32), {}),
}


@pytest.mark.parametrize("case", CASES)
def test_a_saved_factorization_solves_as_the_original(case, tmp_path):
    build, options = CASES[case]
    A = build()
    F = pastixpy.factorize(A, **options)
    path = F.save(tmp_path / "F.pastixpy")
    G = pastixpy.load(path, expect="Factorization")
    b = np.arange(A.shape[0], dtype=A.dtype) + 1
    assert np.array_equal(G.solve(b), F.solve(b))  # the same factors, bit for bit
    assert G.stats["factor_entries"] == F.stats["factor_entries"]
    assert G.kind == F.kind and G.dtype == F.dtype


@pytest.mark.parametrize("case", ["llt", "mixed", "compressed", "ldlt pairs"])
def test_a_later_process_solves_without_factoring(case, tmp_path):
    """A fresh interpreter loads the file and solves, bit for bit as here; the pipeline
    never runs there (compressed tiles, single-precision factors and 2x2 pivots too)."""
    build, options = CASES[case]
    A = build()
    F = pastixpy.factorize(A, **options)
    F.save(tmp_path / "F.pastixpy")
    b = np.ones(A.shape[0])
    np.save(tmp_path / "x.npy", F.solve(b))
    script = textwrap.dedent(
        """
        import sys, numpy as np, pastixpy, pastixpy.pipeline
        def refuse(*a, **k):
            raise AssertionError("the pipeline ran")
        pastixpy.pipeline.run_factorization = refuse
        F = pastixpy.load("F.pastixpy")
        x = F.solve(np.ones(F.shape[0]))
        assert np.array_equal(x, np.load("x.npy")), "another solution"
        print("ok", F.stats["backward_error"])
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("ok")


def test_a_saved_analysis_is_reused(tmp_path):
    A = laplacian((12, 12, 12))
    an = pastixpy.analyze(A)
    path = an.save(tmp_path / "an.pastixpy")
    again = pastixpy.load(path, expect="Analysis")
    assert np.array_equal(again.perm, an.perm)
    F = pastixpy.factorize(A, analysis=again)
    assert F.analysis is again  # used as loaded, not made again
    x = F.solve(np.ones(A.shape[0]))
    assert np.abs(A @ x - 1).max() < 1e-10


def _damaged(tmp_path, how):
    F = pastixpy.factorize(laplacian((10, 10)))
    path = F.save(tmp_path / "F.pastixpy")
    data = bytearray(path.read_bytes())
    head = len(persist.MAGIC) + 8
    if how == "version":
        data[len(persist.MAGIC) : len(persist.MAGIC) + 4] = struct.pack("<I", 999)
    elif how == "payload":
        data[-100] ^= 0xFF  # one byte of the factors
    elif how == "truncated":
        data = data[:-1000]
    elif how == "record":
        data[head + 2] = ord("!")
    elif how == "magic":
        data[:8] = b"NOTPASTI"
    path.write_bytes(bytes(data))
    return path


@pytest.mark.parametrize(
    "how, words",
    [
        ("version", "format 999, and this pastixpy reads format 1"),
        ("payload", "does not match its checksum"),
        ("truncated", "truncated or corrupted"),
        ("record", "header record cannot be read"),
        ("magic", "not a file pastixpy saved"),
    ],
)
def test_a_damaged_or_foreign_file_is_a_clear_error(tmp_path, how, words):
    path = _damaged(tmp_path, how)
    with pytest.raises(pastixpy.PersistError, match=words):
        pastixpy.load(path)


def test_the_kind_of_object_is_checked(tmp_path):
    path = pastixpy.analyze(laplacian((6, 6))).save(tmp_path / "an.pastixpy")
    with pytest.raises(pastixpy.PersistError, match="holds a Analysis, not a Factorization"):
        pastixpy.load(path, expect="Factorization")
    with pytest.raises(TypeError, match="saves a Factorization or an Analysis"):
        persist.save(np.ones(3), tmp_path / "x.pastixpy")


def test_a_failed_save_leaves_no_file(tmp_path):
    F = pastixpy.factorize(laplacian((6, 6)), progress=lambda f: None)
    with pytest.raises((TypeError, AttributeError, pickle_error())):
        F.save(tmp_path / "F.pastixpy")
    assert not (tmp_path / "F.pastixpy").exists()


def pickle_error():
    import pickle

    return pickle.PicklingError
