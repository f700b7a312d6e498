"""Solve a Matrix Market system from the command line and read the solution back.

Run: python examples/cli_solve.py
"""

import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import scipy.io

from pastixpy.gallery import convection_diffusion3d

with tempfile.TemporaryDirectory() as tmp:
    A = convection_diffusion3d(20)  # unsymmetric: factored by LU
    b = np.random.default_rng(0).standard_normal((A.shape[0], 2))
    scipy.io.mmwrite(Path(tmp) / "A.mtx", A)
    scipy.io.mmwrite(Path(tmp) / "b.mtx", b)
    cmd = [
        sys.executable,
        "-m",
        "pastixpy",
        "solve",
        str(Path(tmp) / "A.mtx"),
        "--rhs",
        str(Path(tmp) / "b.mtx"),
        "-o",
        str(Path(tmp) / "x.mtx"),
    ]
    subprocess.run(cmd, check=True)  # the readable report
    stats = json.loads(
        subprocess.run(cmd + ["--json"], check=True, capture_output=True, text=True).stdout
    )
    x = scipy.io.mmread(Path(tmp) / "x.mtx")
    print(
        f"\nkind {stats['kind']}, backward error {stats['backward_error']:.1e}, "
        f"residual {np.abs(b - A @ x).max():.1e}"
    )
