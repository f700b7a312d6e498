"""Run by tests/test_distributed.py under ``mpiexec -n N``: LLᵀ, LDLᵀ and LU of small 3D
problems over the ranks; rank 0 writes the backward errors and each rank's share of
the factor entries to the JSON file given as the argument."""

import json
import sys

import numpy as np
import scipy.sparse as sp
from mpi4py import MPI

import pastixpy
from pastixpy.gallery import laplacian

comm = MPI.COMM_WORLD
root = comm.Get_rank() == 0
A = sp.csc_array(laplacian((14, 14, 14)))
n = A.shape[0]
rng = np.random.default_rng(0)
problems = {
    "llt": A,
    "ldlt": sp.csc_array(A - 1.5 * sp.identity(n)),
    "lu": sp.csc_array(A + sp.diags_array(rng.standard_normal(n - 1), offsets=1)),
}
b = rng.standard_normal(n)
errors, shares = {}, []
for kind, M in problems.items():
    F = pastixpy.factorize(M if root else None, comm=comm, kind=kind, threads=1)
    x = F.solve(b if root else None)
    r = M @ x - b
    errors[kind] = float(
        np.abs(r).max() / (abs(M).sum(axis=1).max() * np.abs(x).max() + np.abs(b).max())
    )
    total = comm.allreduce(F.stats["factor_entries_local"])
    shares = comm.gather(F.stats["factor_entries_local"] / total)
if root:
    with open(sys.argv[1], "w") as fh:
        json.dump({"ranks": comm.Get_size(), "backward_error": errors, "shares": shares}, fh)
