"""Run by tests/test_distributed.py under ``mpiexec -n 2``: one rank is given bad input
or fails (the mode, first argument); the second argument names the files it writes.

- ``bad-rhs``: A given by rows, rank 1 passes b=None, a block of two columns, the whole
  b, text; each rank writes what each solve raised, then the backward error of a good
  solve after them, to ``OUT.RANK.json``.
- ``raise``: rank 1 raises between the factorization and the solve (the job must end).
- ``sigint``: each rank writes its process id to ``OUT.pid.RANK`` once the matrix is
  factored, then solves until a signal ends the job.
"""

import json
import os
import sys

import numpy as np
import scipy.sparse as sp
from mpi4py import MPI

import pastixpy
from pastixpy.errors import InvalidInputError
from pastixpy.gallery import laplacian

mode, out = sys.argv[1], sys.argv[2]
comm = MPI.COMM_WORLD
rank = comm.Get_rank()
A = sp.csr_array(laplacian((6, 6, 6)))
n = A.shape[0]

if mode == "bad-rhs":
    cuts = [0, n // 2, n]
    rows = slice(cuts[rank], cuts[rank + 1])
    F = pastixpy.factorize(A[rows], comm=comm)
    b = np.arange(n, dtype=float)
    bad = {"none": None, "block": np.ones((cuts[2] - cuts[1], 2)), "whole": b, "text": "b"}
    seen = {}
    for case, wrong in bad.items():
        try:
            F.solve(wrong if rank == 1 else b[rows])
            seen[case] = None
        except InvalidInputError as exc:
            seen[case] = str(exc)
    x = np.concatenate(comm.allgather(F.solve(b[rows])))  # the session goes on
    r = A @ x - b
    seen["backward_error"] = float(
        np.abs(r).max() / (abs(A).sum(axis=1).max() * np.abs(x).max() + np.abs(b).max())
    )
    with open(f"{out}.{rank}.json", "w") as fh:
        json.dump(seen, fh)
elif mode == "raise":
    F = pastixpy.factorize(A if rank == 0 else None, comm=comm)
    if rank == 1:
        raise RuntimeError("rank 1 fails between two collective calls")
    F.solve(np.ones(n))
elif mode == "sigint":
    F = pastixpy.factorize(A if rank == 0 else None, comm=comm)
    with open(f"{out}.pid.{rank}.part", "w") as fh:
        fh.write(str(os.getpid()))
    os.replace(f"{out}.pid.{rank}.part", f"{out}.pid.{rank}")  # seen whole or not at all
    while True:
        F.solve(np.ones(n) if rank == 0 else None)
else:
    raise SystemExit(f"unknown mode {mode!r}")
