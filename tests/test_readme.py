"""The README's Python blocks run as written, each pasted into a fresh interpreter."""

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import pastixpy

ROOT = Path(__file__).resolve().parents[1]
BLOCKS = re.findall(r"^```python\n(.*?)^```", (ROOT / "README.md").read_text(), re.S | re.M)


def test_the_readme_has_python_blocks():
    assert len(BLOCKS) >= 2


@pytest.mark.parametrize("index", range(len(BLOCKS)))
def test_readme_block_runs(index, tmp_path):
    block = BLOCKS[index]
    if "mpi4py" in block and importlib.util.find_spec("mpi4py") is None:
        pytest.skip("mpi4py is not installed")
    # Away from the source tree, on the package these tests import, one thread per
    # process (the shared CI cores).
    env = {
        **os.environ,
        "PYTHONPATH": str(Path(pastixpy.__file__).parents[1]),
        "OMP_NUM_THREADS": "1",
    }
    run = subprocess.run(
        [sys.executable, "-c", block],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=300,
    )
    assert run.returncode == 0, f"README block {index} failed:\n{block}\n{run.stderr}"
