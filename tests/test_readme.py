"""The Python blocks of the README and of docs/*.md run as written, each pasted into a
fresh interpreter."""

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import pastixpy

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
BLOCKS = [
    (page.relative_to(ROOT).as_posix(), i, block)
    for page in PAGES
    for i, block in enumerate(re.findall(r"^```python\n(.*?)^```", page.read_text(), re.S | re.M))
]

#: Blocks that show what only a run over several ranks gives (``mpiexec``): skipped,
#: with the reason; tests/test_distributed.py runs that code under mpiexec.
NEEDS_MPIEXEC = {("docs/distributed.md", 0): "reads the statistics of a run over ranks"}


def test_the_readme_has_python_blocks():
    assert sum(page == "README.md" for page, _, _ in BLOCKS) >= 2


@pytest.mark.parametrize("page, index, block", BLOCKS, ids=[f"{p}:{i}" for p, i, _ in BLOCKS])
def test_block_runs(page, index, block, tmp_path):
    if (page, index) in NEEDS_MPIEXEC:
        pytest.skip(f"needs mpiexec: {NEEDS_MPIEXEC[page, index]}")
    for optional in ("mpi4py", "jax"):  # the blocks that use an optional extra
        if optional in block and importlib.util.find_spec(optional) is None:
            pytest.skip(f"{optional} is not installed")
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
    assert run.returncode == 0, f"{page} block {index} failed:\n{block}\n{run.stderr}"
