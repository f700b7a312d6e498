"""Run by tests/test_distributed.py under ``mpiexec -n 2``: every shared matrix (the
folder given as the first argument) factored and solved over the ranks and in one
process; rank 0 writes, per matrix, both backward errors (or the error both raised)
to the JSON file given as the second argument."""

import json
import sys
from pathlib import Path

import numpy as np
import scipy.io
import scipy.sparse as sp
from mpi4py import MPI

import pastixpy

comm = MPI.COMM_WORLD
root = comm.Get_rank() == 0


def backward_error(A, x, b):
    r = b - A @ x
    return float(np.abs(r).max() / (abs(A).sum(axis=1).max() * np.abs(x).max() + np.abs(b).max()))


def run(A, b, comm):
    """(backward error, None) or (None, the exception's type) on rank 0."""
    try:
        F = pastixpy.factorize(A, comm=comm, threads=1)
        x = F.solve(b)
    except pastixpy.PastixError as exc:
        return None, type(exc).__name__
    return (backward_error(A, x, b) if A is not None else None), None


results = {}
for path in sorted(Path(sys.argv[1]).glob("*.mtx")):
    A = b = None
    if root:
        A = sp.csc_array(scipy.io.mmread(path))
        rng = np.random.default_rng(0)
        x_true = rng.standard_normal(A.shape[0])
        if np.iscomplexobj(A.data):
            x_true = x_true + 1j * rng.standard_normal(A.shape[0])
        b = A @ x_true
        one = run(A, b, None)
    many = run(A, b, comm)
    if root:
        results[path.stem] = {"one": one, "ranks": many}
if root:
    with open(sys.argv[2], "w") as fh:
        json.dump(results, fh)
