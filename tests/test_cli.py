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


def test_python_dash_m(tmp_path):
    import os
    from pathlib import Path

    import pastixpy

    # Run away from the source tree, on the package these tests import.
    env = {**os.environ, "PYTHONPATH": str(Path(pastixpy.__file__).parents[1])}
    out = subprocess.run(
        [sys.executable, "-m", "pastixpy", "analyze", "--example", "elast3d:4", "--json"],
        capture_output=True,
        text=True,
        check=True,
        cwd=tmp_path,
        env=env,
    ).stdout
    assert json.loads(out)["n_ordered"] == 64


def test_solve_example_reports_backward_error(capsys):
    assert main(["solve", "--example", "lap3d:10"]) == 0
    out = capsys.readouterr().out
    assert "backward error" in out and "time: factorize" in out


def test_solve_rhs_and_output_files(capsys, tmp_path):
    import numpy as np
    import scipy.io

    from pastixpy.gallery import convection_diffusion3d

    A = convection_diffusion3d(6)
    B = np.random.default_rng(0).standard_normal((A.shape[0], 3))
    scipy.io.mmwrite(tmp_path / "A.mtx", A)
    scipy.io.mmwrite(tmp_path / "B.mtx", B)
    argv = [
        "solve",
        str(tmp_path / "A.mtx"),
        "--rhs",
        str(tmp_path / "B.mtx"),
        "-o",
        str(tmp_path / "X.mtx"),
        "--ordering",
        "amd",
        "--threads",
        "1",
        "--json",
    ]
    assert main(argv) == 0
    stats = json.loads(capsys.readouterr().out)
    X = scipy.io.mmread(tmp_path / "X.mtx")
    assert stats["kind"] == "lu" and stats["backward_error"] <= 1e-12
    assert np.abs(A @ X - B).max() <= 1e-10 * np.abs(B).max()


def test_solve_default_rhs_is_a_times_ones(tmp_path):
    import numpy as np
    import scipy.io

    from pastixpy.gallery import helmholtz2d

    A = helmholtz2d(12)
    scipy.io.mmwrite(tmp_path / "H.mtx", A)
    assert main(["solve", str(tmp_path / "H.mtx"), "-o", str(tmp_path / "x.mtx")]) == 0
    x = scipy.io.mmread(tmp_path / "x.mtx")
    assert np.abs(x - 1).max() < 1e-10


def test_solve_singular_matrix_is_one_line_error(capsys):
    path = MATRIX_DIR / "mbeacxc.mtx"
    if not path.exists():
        pytest.skip("shared matrices not found")
    assert main(["solve", str(path)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("pastixpy: error: the matrix is structurally singular")
    assert err.count("\n") == 1


def test_solve_rhs_of_wrong_size(capsys, tmp_path):
    import numpy as np
    import scipy.io

    scipy.io.mmwrite(tmp_path / "b.mtx", np.ones((5, 1)))
    assert main(["solve", "--example", "lap2d:4", "--rhs", str(tmp_path / "b.mtx")]) == 1
    assert "b has shape (5,)" in capsys.readouterr().err


def test_progress_bar_only_after_a_second(capsys):
    import time

    from pastixpy.cli import _ProgressBar

    fast = _ProgressBar()
    fast(0.5)
    fast(1.0)
    fast.close()
    assert "factorizing" not in capsys.readouterr().err
    slow = _ProgressBar()
    time.sleep(1.1)
    slow(0.5)
    err = capsys.readouterr().err
    slow.close()
    assert "factorizing" in err and "50%" in err
