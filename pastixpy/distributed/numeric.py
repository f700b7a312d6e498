"""One rank's part of a distributed factorization and of its triangular solves.

Collective: every rank of the communicator calls :func:`factor_rank`, then
:meth:`RankFactors.sweep` for each solve, with the same arguments. Ranks run the
kernels (:func:`pastixpy.numeric.factor_cblks`, the one-process factorization's) on
their own cblks only, and the one triangular :func:`pastixpy.numeric.sweep` over
their own cblks' solve plans, exchanging fan-in sums and solved rows between the steps
as :mod:`.schedule` lays out (:mod:`.messages`).
"""

import time

import numpy as np

from ..numeric import Pivots, SolvePlan, allocate_storage, factor_cblks, storage_footprint, sweep
from ..runtime import blas_threads, kernel_threads, peak_memory
from .messages import Sender, Traffic, probe_any, receive, wait_for_all
from .schedule import Schedule


class _FanIn:
    """This rank's fan-in panels on the wire: each one L's sums then, for LU, U's (two
    messages with one tag, the cblk), sent from the panel's own memory, which is
    released once the send completes; and the sums received for this rank's cblks."""

    def __init__(self, layout, kind, dtype, storage, sender, owner):
        self.layout = layout
        self.parts = 2 if kind.two_factors else 1
        self.dtype = dtype
        self.storage = storage
        self.sender = sender
        self.owner = owner
        self.taken = set()  # (cblk, source) received

    def send(self, f, valid):
        """Send fan-in panel f to its owner (zeros where it could not be made, or the
        factorization failed: the owner waits for it whatever happened)."""
        views = None if self.storage is None or not valid else self.storage.fanin_views(f)
        if views is None:
            zeros = np.zeros(self.layout.panel_sizes[f], dtype=self.dtype)
            buffers, done = [zeros] * self.parts, None
        else:
            buffers = [v for v in views if v is not None]
            done = (lambda f=f: self.storage.release(f)) if self.storage is not None else None
        if views is None and self.storage is not None:
            self.storage.release(f)
        self.sender.send(buffers, int(self.owner[f]), int(f), done)

    def drain(self, comm, traffic, valid):
        """Take the sums that have arrived, whichever cblks they are for."""
        while True:
            hit = probe_any(comm)
            if hit is None:
                return
            self.take(comm, traffic, hit[1], hit[0], valid)

    def take(self, comm, traffic, k, source, valid):
        """Receive the sums of cblk k from ``source`` and add them into its panel."""
        parts = [
            receive(comm, traffic, self.layout.panel_sizes[k], self.dtype, source, int(k))
            for _ in range(self.parts)
        ]
        self.taken.add((k, source))
        if self.storage is not None and valid:
            self.storage.accumulate(k, parts[0], parts[1] if self.parts == 2 else None)


def factor_rank(comm, task, owner, threads=1):
    """This rank's cblks of ``task`` factored, the fan-in sums exchanged (collective).

    Parameters
    ----------
    comm : communicator (mpi4py's, or :class:`~pastixpy.distributed.local.LocalComm`)
    task : NumericTask
        The same on every rank (its compression mask: only this rank's cblks of it are
        compressed).
    owner : ndarray of int32
        Owner of each cblk (:func:`~pastixpy.distributed.mapping.proportional_mapping`).
    threads : int
        Threads of this rank's kernels.

    Returns
    -------
    RankFactors
        Whatever the outcome: ``failed`` is the first column (pivot order) whose LLᵀ
        pivot is not positive on any rank, else -1; ``error`` a message where a rank
        could not allocate its memory. Both are the same on every rank.
    """
    rank = comm.Get_rank()
    layout, kind, dtype = task.layout, task.kind, task.dtype
    schedule = Schedule.build(layout, owner, rank)
    traffic = Traffic()
    t0 = time.perf_counter()
    threads = kernel_threads(threads)
    error = None
    try:
        storage = allocate_storage(
            task, threads, owner=owner, rank=rank, fanin=schedule.fanin.astype(np.int8)
        )
    except MemoryError as exc:
        storage, error = None, f"rank {rank}: {exc}"
    pivots = Pivots.empty(kind, task.n, dtype)
    sender = Sender(comm, traffic)
    fanin = _FanIn(layout, kind, dtype, storage, sender, owner)
    failed = -1
    only = np.zeros(layout.ncblk, dtype=np.int8)
    for step in schedule.steps:
        # Sums that have arrived are taken at once, whichever cblk they are for: their
        # senders keep them in memory until then.
        fanin.drain(comm, traffic, failed < 0)
        for k, sources in step.receive.items():
            for source in sources:
                if (k, source) not in fanin.taken:
                    fanin.take(comm, traffic, k, source, failed < 0)
        if storage is not None and failed < 0 and error is None:
            only[:] = 0
            only[step.cblks] = 1
            try:
                failed = factor_cblks(task, storage, pivots, threads, only=only)
            except MemoryError as exc:
                failed, error = -1, f"rank {rank}: {exc}"
        for f in step.send:
            fanin.send(f, failed < 0)
        sender.progress()
    sender.wait()
    seconds = time.perf_counter() - t0
    # The outcome, the same everywhere: the lowest failing column, any rank's error.
    wait_for_all(comm)
    failures = comm.allgather((failed, error))
    columns = [c for c, _ in failures if c >= 0]
    errors = [e for _, e in failures if e]
    if storage is not None:
        storage.count_held()
        storage.freeze()
    # Which pivots were perturbed, everywhere (the pipeline reads them on rank 0).
    pivots.pert[:] = np.maximum.reduce(comm.allgather(pivots.pert))
    pivots.freeze()
    return RankFactors(
        comm,
        schedule,
        kind,
        layout,
        storage,
        pivots,
        threads,
        failed=min(columns) if columns else -1,
        error=errors[0] if errors else None,
        traffic=traffic,
        seconds=seconds,
    )


class RankFactors:
    """This rank's factors: its own cblks (dense or compressed) and pivots, and what it
    knows of the others (the schedule). Every rank holds one; rank 0's is read through
    :class:`~.backend.DistributedFactors`."""

    def __init__(
        self,
        comm,
        schedule,
        kind,
        layout,
        storage,
        pivots,
        threads,
        failed,
        error,
        traffic,
        seconds,
    ):
        self.comm = comm
        self.schedule = schedule
        self.kind = kind
        self.layout = layout
        self.storage = storage
        self.pivots = pivots
        self.threads = threads
        self.failed = failed
        self.error = error
        self.traffic = traffic
        self.seconds = seconds

    @property
    def dtype(self):
        return self.storage.dtype

    def footprint(self):
        """This rank's :class:`~pastixpy.numeric.Footprint`."""
        return storage_footprint(self.storage)

    def tiles(self):
        """This rank's compressed tiles, or None where it holds none."""
        if self.storage is None or not self.storage.compressed_cblks:
            return None
        return self.storage.tiles()

    def local_stats(self):
        """What this rank holds and did."""
        return {
            "rank": self.schedule.rank,
            "cblks": int(self.schedule.owned.sum()),
            "factor_entries_local": int(self.storage.entries),
            "factor_bytes_local": int(self.storage.nbytes),
            "peak_memory_bytes": peak_memory(),
            "factor_seconds": self.seconds,
            **self.traffic.as_dict(),
        }

    def sweep(self, X, trans="N"):
        """op(P B Pᵀ) X = R solved in place, collectively: X (n, nrhs) row-major in the
        factors' dtype, the right-hand sides on entry and the solution on return on
        every rank (each rank solves its own cblks' rows and passes the rest)."""
        schedule, fcol = self.schedule, self.layout.fcol
        comm, traffic = self.comm, self.traffic
        owned_rows = np.repeat(schedule.owned, np.diff(fcol))
        X[~owned_rows] = 0  # others' rows gather this rank's updates to them
        sender = Sender(comm, traffic)

        def rows(k):
            return X[fcol[k] : fcol[k + 1]]

        def forward():
            for step in schedule.steps:
                for k, sources in step.receive.items():
                    for source in sources:
                        rows(k)[...] += receive(
                            comm, traffic, rows(k).shape, X.dtype, source, int(k)
                        )
                yield SolvePlan.serial(step.cblks)
                for f in step.send:
                    sender.send(rows(f).copy(), int(schedule.owner[f]), int(f))

        def backward():
            for step in schedule.backward:
                for f, source in step.receive.items():
                    rows(f)[...] = receive(comm, traffic, rows(f).shape, X.dtype, source, int(f))
                yield SolvePlan.serial(step.cblks)
                for k in step.send:
                    for dest in schedule.contributors[k]:
                        sender.send(rows(k).copy(), int(dest), int(k))

        with blas_threads(1):
            sweep(X, self.storage, self.kind, self.pivots, trans, forward(), backward())
        sender.wait()
        # Every rank's rows to every rank.
        wait_for_all(comm)
        mine = np.ascontiguousarray(X[owned_rows])
        for r, part in enumerate(comm.allgather(mine)):
            X[np.repeat(schedule.owner == r, np.diff(fcol))] = part
        return X
