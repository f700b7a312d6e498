"""Reading matrices: Matrix Market through scipy, Harwell-Boeing through our reader."""

import re

import numpy as np
import pytest
import scipy.io
import scipy.sparse as sp

from pastixpy import InvalidInputError
from pastixpy.io import read_dense, read_matrix, write_dense

HEADER = "{title:<72}{key:<8}\n{tot:14d}{ptr:14d}{ind:14d}{val:14d}{rhs:14d}\n"


def _write_hb(path, A, mxtype, valfmt="(3E26.17)", lower=False):
    """A Harwell-Boeing file written by hand (scipy writes only real unsymmetric ones)."""
    A = sp.csc_array(sp.tril(A) if lower else A)
    A.sort_indices()
    ptr = A.indptr + 1
    ind = A.indices + 1
    if mxtype[0] == "C":
        vals = np.column_stack([A.data.real, A.data.imag]).ravel()
    else:
        vals = A.data

    def lines(values, per, fmt):
        return ["".join(fmt(v) for v in values[k : k + per]) for k in range(0, len(values), per)]

    p = lines(ptr, 10, lambda v: f"{v:8d}")
    i = lines(ind, 10, lambda v: f"{v:8d}")
    per, width, digits = map(int, re.fullmatch(r"\((\d+)E(\d+)\.(\d+)\)", valfmt).groups())
    v = lines(vals, per, lambda x: f"{x:{width}.{digits}E}".replace("E", "D"))
    v = [] if mxtype[0] == "P" else v
    with open(path, "w") as f:
        f.write(
            HEADER.format(
                title="test",
                key="KEY",
                tot=len(p) + len(i) + len(v),
                ptr=len(p),
                ind=len(i),
                val=len(v),
                rhs=0,
            )
        )
        f.write(f"{mxtype:<14}{A.shape[0]:14d}{A.shape[1]:14d}{A.nnz:14d}{0:14d}\n")
        f.write(f"{'(10I8)':<16}{'(10I8)':<16}{valfmt:<20}\n")
        f.write("\n".join(p + i + v) + "\n")


def _random(n, complex_=False, seed=0):
    rng = np.random.default_rng(seed)
    A = sp.random_array((n, n), density=0.2, rng=rng, format="csc") + sp.eye_array(n)
    if complex_:
        A = A + 1j * sp.random_array((n, n), density=0.2, rng=rng, format="csc")
    return sp.csc_array(A)


def test_real_unsymmetric_written_by_scipy(tmp_path):
    A = _random(30)
    scipy.io.hb_write(tmp_path / "a.rua", sp.csc_matrix(A))
    assert abs(read_matrix(tmp_path / "a.rua") - A).max() < 1e-15


def test_scipy_hb_write_with_negative_values(tmp_path):
    """scipy's hb_write writes 24-character fields under E25.16: with negative values the
    fields are read at the blanks between them (scipy's hb_read reads them so)."""
    A = sp.csc_array(_random(30) * -1e5 + 1e-3 * sp.eye_array(30))
    scipy.io.hb_write(tmp_path / "a.rua", sp.csc_matrix(A))
    B = read_matrix(tmp_path / "a.rua")
    assert (B != A).nnz == 0
    assert (B != sp.csc_array(scipy.io.hb_read(tmp_path / "a.rua"))).nnz == 0


def test_packed_fixed_width_fields(tmp_path):
    """Fields with no blank between them (a minus sign filling the field) are cut at
    the format's width, as Fortran reads them."""
    A = sp.csc_array(-_random(20, seed=4))
    path = tmp_path / "p.rua"
    _write_hb(path, A, "RUA", valfmt="(3E24.17)")
    assert "D+00-" in path.read_text()
    assert abs(read_matrix(path) - A).max() <= 1e-15 * abs(A).max()


@pytest.mark.parametrize(
    ("mxtype", "suffix", "make"),
    [
        ("RUA", ".rua", lambda A: A.real),
        ("RSA", ".rsa", lambda A: (A + A.T).real),
        ("CUA", ".cua", lambda A: A),
        ("CSA", ".csa", lambda A: A + A.T),
        ("CHA", ".cha", lambda A: A + A.conj().T),
        ("RZA", ".rza", lambda A: (A - A.T).real),
    ],
)
def test_harwell_boeing_types(tmp_path, mxtype, suffix, make):
    A = sp.csc_array(make(_random(25, complex_=True)))
    path = tmp_path / f"m{suffix}"
    _write_hb(path, A, mxtype, lower=mxtype[1] != "U")
    B = read_matrix(path)
    assert B.shape == A.shape and B.dtype.kind == ("c" if mxtype[0] == "C" else "f")
    assert abs(B - A).max() <= 1e-15 * abs(A).max()


def test_pattern_file_gets_ones(tmp_path):
    A = _random(12)
    _write_hb(tmp_path / "p.pua", A, "PUA")
    B = read_matrix(tmp_path / "p.pua")
    assert np.array_equal(B.toarray() != 0, A.toarray() != 0) and set(B.data) == {1.0}


def test_truncated_file_is_a_clear_error(tmp_path):
    A = _random(20)
    path = tmp_path / "t.rua"
    _write_hb(path, A, "RUA")
    path.write_text("\n".join(path.read_text().splitlines()[:-3]) + "\n")
    with pytest.raises(InvalidInputError, match="ends early"):
        read_matrix(path)


def test_unassembled_type_is_refused(tmp_path):
    A = _random(5)
    path = tmp_path / "e.rua"
    _write_hb(path, A, "RUE")
    with pytest.raises(InvalidInputError, match="not an assembled Harwell-Boeing"):
        read_matrix(path)


def test_missing_and_garbage_files(tmp_path):
    with pytest.raises(InvalidInputError, match="no such file"):
        read_matrix(tmp_path / "none.mtx")
    (tmp_path / "bad.mtx").write_text("this is not a matrix\n")
    with pytest.raises(InvalidInputError, match="cannot read"):
        read_matrix(tmp_path / "bad.mtx")


def test_dense_round_trip(tmp_path):
    X = np.random.default_rng(3).standard_normal((7, 3))
    write_dense(tmp_path / "x.mtx", X)
    assert np.array_equal(read_dense(tmp_path / "x.mtx"), X)
    write_dense(tmp_path / "v.mtx", X[:, 0])
    assert read_dense(tmp_path / "v.mtx").shape == (7, 1)
