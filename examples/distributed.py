"""Factor and solve a 3D Poisson problem over several processes.

Run it with MPI (``pip install "pastixpy[mpi]"``)::

    mpiexec -n 2 python -m mpi4py examples/distributed.py

or, without MPI, with the ranks as threads of this process::

    python examples/distributed.py

Rank 0 holds the matrix and the right-hand side; every rank factors its share of the
factor and takes part in the solve; rank 0 prints what each rank held and sent.
"""

import numpy as np

import pastixpy
from pastixpy.distributed import run_ranks, world
from pastixpy.gallery import laplacian


def main(comm):
    root = comm.Get_rank() == 0
    A = laplacian((30, 30, 30)) if root else None
    b = np.ones(30**3) if root else None
    F = pastixpy.factorize(A, comm=comm, threads=1)
    x = F.solve(b)
    if root:
        stats = F.stats
        print(
            f"{stats['distributed']['ranks']} ranks, kind {stats['kind']}, "
            f"backward error {stats['backward_error']:.1e}"
        )
        for r in stats["distributed"]["per_rank"]:
            print(
                f"  rank {r['rank']}: {r['cblks']:5d} cblks, "
                f"{r['factor_entries_local'] / stats['factor_entries']:5.1%} of the entries, "
                f"peak {r['peak_memory_bytes'] / 2**20:6.1f} MiB, "
                f"sent {r['sent_bytes'] / 2**20:6.1f} MiB, waited {r['wait_seconds']:.2f} s"
            )
        print("x[:3] =", x[:3])
    return x


if __name__ == "__main__":
    comm = world()
    if comm is not None:
        main(comm)
    else:
        run_ranks(2, main)  # no mpiexec: two ranks as threads
