"""The command line: tables, JSON, exit codes and messages."""

import json
import subprocess
import sys

import pytest

from pastixpy.cli import main

from conftest import MATRIX_DIR


def test_example_table(capsys):
    assert main(["analyze", "--example", "lap3d:8"]) == 0
    out = capsys.readouterr().out
    assert "nonzeros of L" in out and "time: ordering" in out


def test_json_output(capsys):
    assert main(["analyze", "--example", "lap2d:12", "--ordering", "amd", "--json"]) == 0
    stats = json.loads(capsys.readouterr().out)
    assert stats["n"] == 144 and stats["ordering"] == "amd"


def test_matrix_market_file(capsys, tmp_path):
    import scipy.io

    from pastixpy.gallery import laplacian

    path = tmp_path / "a.mtx"
    scipy.io.mmwrite(path, laplacian((5, 5)))
    assert main(["analyze", str(path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["nnz_A"] == 105


def test_shared_matrix_file(capsys):
    path = MATRIX_DIR / "west0479.mtx"
    if not path.exists():
        pytest.skip("shared matrices not found")
    assert main(["analyze", str(path), "--ordering", "rcm"]) == 0
    assert "lu" in capsys.readouterr().out


def test_missing_file_is_one_line_error(capsys):
    assert main(["analyze", "does-not-exist.mtx"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("pastixpy: error: no such file") and err.count("\n") == 1


def test_non_square_file(capsys, tmp_path):
    import numpy as np
    import scipy.io
    import scipy.sparse as sp

    path = tmp_path / "rect.mtx"
    scipy.io.mmwrite(path, sp.csr_array(np.ones((2, 3))))
    assert main(["analyze", str(path)]) == 1
    assert "must be square" in capsys.readouterr().err


def test_python_dash_m():
    out = subprocess.run(
        [sys.executable, "-m", "pastixpy", "analyze", "--example", "elast3d:4", "--json"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert json.loads(out)["n_ordered"] == 64
