"""Use the command line on a Matrix Market file: write one, analyse it, read the JSON.

Run: python examples/cli_analyze.py
"""

import json
import subprocess
import sys
import tempfile
from pathlib import Path

import scipy.io

from pastixpy.gallery import laplacian

with tempfile.TemporaryDirectory() as tmp:
    path = Path(tmp) / "poisson2d.mtx"
    scipy.io.mmwrite(path, laplacian((100, 100)))
    cmd = [sys.executable, "-m", "pastixpy", "analyze", str(path), "--ordering", "amd"]
    subprocess.run(cmd, check=True)  # the readable table
    stats = json.loads(
        subprocess.run(cmd + ["--json"], check=True, capture_output=True, text=True).stdout
    )
    print(f"\nfrom JSON: nnz(L) = {stats['nnz_L']:,}, flops = {stats['flops']:.3g}")
