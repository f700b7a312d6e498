"""The command line: tables, JSON, exit codes and messages."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import pastixpy
from pastixpy.cli import main
from pastixpy.runtime import OPENMP

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
    assert json.loads(out)["n_ordered"] == 100  # 4 x 5 x 5 free nodes, 3 unknowns each


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


# ---------------------------------------------------------------------------- output that
# cannot be written: exit 1 with one line, found before any work where a path shows it


def _one_line_error(capsys, argv, expected):
    assert main(argv) == 1
    captured = capsys.readouterr()
    assert captured.err.count("\n") == 1 and captured.err.startswith("pastixpy: error: ")
    assert expected in captured.err, captured.err
    return captured


@pytest.mark.parametrize(
    "output, expected",
    [
        ("/nonexistent_dir/x.mtx", "directory /nonexistent_dir does not exist"),
        ("DIR", "it is a directory"),
        ("FILE/x.mtx", "is not a directory"),
    ],
)
def test_unwritable_output_is_refused_before_reading_the_matrix(capsys, tmp_path, output, expected):
    (tmp_path / "FILE").write_text("")
    output = output.replace("DIR", str(tmp_path)).replace("FILE", str(tmp_path / "FILE"))
    # The matrix does not exist either: the output is checked first, before any work.
    _one_line_error(capsys, ["solve", str(tmp_path / "missing.mtx"), "-o", output], expected)


def test_output_under_proc_is_refused(capsys):
    if not Path("/proc/self").exists():
        pytest.skip("no /proc here")
    _one_line_error(capsys, ["solve", "--example", "lap2d:4", "-o", "/proc/x.mtx"], "/proc/x.mtx")


def test_a_failed_write_is_exit_status_one(capsys):
    if not Path("/dev/full").exists():
        pytest.skip("no /dev/full here")
    _one_line_error(
        capsys, ["solve", "--example", "lap2d:4", "-o", "/dev/full"], "No space left on device"
    )


def test_read_only_output_keeps_the_old_file(capsys, tmp_path):
    if os.geteuid() == 0:
        pytest.skip("root writes read-only files")
    out = tmp_path / "x.mtx"
    out.write_text("old")
    out.chmod(0o444)
    _one_line_error(capsys, ["solve", "--example", "lap2d:4", "-o", str(out)], "ermission denied")
    assert out.read_text() == "old"


def test_solution_goes_to_exactly_the_path_given(tmp_path):
    import gzip

    import numpy as np
    import scipy.io

    from pastixpy.gallery import laplacian

    for name in ("x.txt", "x.mtx", "x.mtx.gz"):
        assert main(["solve", "--example", "lap2d:5", "-o", str(tmp_path / name)]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["x.mtx", "x.mtx.gz", "x.txt"]
    A = laplacian((5, 5))
    for name in ("x.txt", "x.mtx"):
        x = scipy.io.mmread(tmp_path / name).ravel()
        assert np.abs(A @ x - A @ np.ones(25)).max() < 1e-12
    with gzip.open(tmp_path / "x.mtx.gz") as f:
        assert f.read().startswith(b"%%MatrixMarket matrix array real general")


def test_failed_write_leaves_the_previous_file_whole(tmp_path, monkeypatch):
    from pastixpy import io

    out = tmp_path / "x.mtx"
    out.write_text("previous solution")

    def fail(*args):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(io.os, "replace", fail)
    with pytest.raises(pastixpy.OutputError, match="No space left"):
        io.write_dense(out, [1.0, 2.0])
    assert out.read_text() == "previous solution"
    assert [p.name for p in tmp_path.iterdir()] == ["x.mtx"]  # no temporary left behind


@pytest.mark.parametrize("where", ["matrix", "rhs"])
def test_a_directory_as_input_says_so(capsys, tmp_path, where):
    argv = ["solve", str(tmp_path)] if where == "matrix" else ["solve", "--example", "lap2d:4"]
    if where == "rhs":
        argv += ["--rhs", str(tmp_path)]
    what = "a matrix file" if where == "matrix" else "a right-hand-side file"
    _one_line_error(capsys, argv, f"{tmp_path} is a directory, not {what}")


@pytest.mark.parametrize(
    "spec, expected",
    [
        ("foo:3", "unknown example 'foo': choose one of lap1d, lap2d, lap3d"),
        ("lap3d", "lap3d needs a positive SIZE or a shape AxBxC, as in lap3d:20"),
        ("lap3d:0", "lap3d needs a positive SIZE"),
        ("lap2d:3x4x5", "lap2d needs a positive SIZE or a shape AxB"),
        ("helmholtz2d:4x4", "helmholtz2d needs a positive SIZE, as in"),
    ],
)
def test_bad_example_is_a_short_usage_error(capsys, spec, expected):
    """A bad --example is a usage error (exit 2) of one short line, not the whole
    registry's descriptions (which --help lists, one a line)."""
    with pytest.raises(SystemExit) as info:
        main(["solve", "--example", spec])
    assert info.value.code == 2
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert expected in last and len(last) < 250


def test_help_describes_the_examples(capsys):
    with pytest.raises(SystemExit):
        main(["analyze", "--help"])
    out = capsys.readouterr().out
    assert "elast3d      3D linear elasticity" in out


def test_example_too_large_for_memory_is_one_line_error(capsys):
    """The example is built after the command line is read: a size whose matrix cannot
    be allocated is the one-line error of exit status 1, not a traceback."""
    assert main(["analyze", "--example", "lap3d:3000000"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("pastixpy: error: --example lap3d:3000000 does not fit in memory")
    assert "choose a smaller SIZE" in err and err.count("\n") == 1


@pytest.mark.parametrize(
    "flags, strategy, method",
    [
        (["--compress-strategy", "minmem"], "minmem", "rrqr"),
        (["--compress-method", "svd"], "jit", "svd"),
        (["--compress", "1e-6", "--compress-method", "randomized"], "jit", "randomized"),
    ],
)
def test_compress_strategy_or_method_alone_implies_compression(capsys, flags, strategy, method):
    """--compress-strategy / --compress-method were ignored without --compress: they now
    ask for compression at the default tolerance (1e-8) unless --compress gives one."""
    assert main(["solve", "--example", "lap2d:30", "--json", *flags]) == 0
    c = json.loads(capsys.readouterr().out)["compression"]
    assert (c["strategy"], c["method"]) == (strategy, method)
    assert c["tol"] == (1e-6 if "--compress" in flags else 1e-8)


def test_no_compress_flag_means_no_compression(capsys):
    assert main(["solve", "--example", "lap2d:30", "--json"]) == 0
    assert not json.loads(capsys.readouterr().out).get("compression")


def test_version(capsys):
    """``pastixpy --version`` prints the package's version (that of pyproject.toml) and
    whether its kernels have OpenMP threads, and exits 0, without a command."""
    with pytest.raises(SystemExit) as e:
        main(["--version"])
    assert e.value.code == 0
    build = "OpenMP" if OPENMP else "built without OpenMP: kernels run on one thread"
    assert capsys.readouterr().out.strip() == f"pastixpy {pastixpy.__version__} ({build})"
    pyproject = (Path(__file__).parents[1] / "pyproject.toml").read_text()
    assert f'version = "{pastixpy.__version__}"' in pyproject
    F = pastixpy.factorize(pastixpy.gallery.laplacian((5, 5)))
    assert F.stats["version"] == pastixpy.__version__
