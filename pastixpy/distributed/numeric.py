"""One rank's part of a distributed factorization and of its triangular solves.

Collective: every rank of the communicator calls :func:`factor_rank`, then
:meth:`RankFactors.sweep` for each solve, with the same arguments. Ranks run the
kernels of ``pastixpy._numeric`` on their own cblks only (``factorize(only=...)``,
solve plans of their cblks), and exchange fan-in sums and solved rows as
:mod:`.schedule` lays out. Messages are numpy buffers (mpi4py's upper-case calls),
tagged with the cblk they belong to; sends never block.
"""

import time
from dataclasses import dataclass, field

import numpy as np

from .. import _numeric
from ..numeric.factors import Pivots
from ..runtime import blas_threads, kernel_threads, peak_memory
from .schedule import Schedule


@dataclass(frozen=True)
class _Plan:
    """A one-thread solve plan of some cblks (what the solve kernels read)."""

    cblks: np.ndarray
    ptr: np.ndarray
    topoff: np.ndarray = field(default_factory=lambda: np.empty(0, np.int64))
    ntop: int = 0

    @classmethod
    def of(cls, cblks):
        return cls(cblks, np.array([0, cblks.shape[0]], dtype=np.int64))


class Traffic:
    """Bytes and messages this rank sent and received, and its time waiting for them."""

    def __init__(self):
        self.sent = 0
        self.received = 0
        self.messages = 0
        self.waited = 0.0

    def as_dict(self):
        return {
            "sent_bytes": self.sent,
            "received_bytes": self.received,
            "messages_sent": self.messages,
            "wait_seconds": self.waited,
        }


class _Sender:
    """Non-blocking sends whose buffers are kept until they complete, then handed to
    ``done`` (a fan-in panel sent from its own memory is released then)."""

    def __init__(self, comm, traffic):
        self.comm = comm
        self.traffic = traffic
        self.pending = []

    def send(self, buffers, dest, tag, done=None):
        """Send ``buffers`` (one array or several, in order, with one tag)."""
        if isinstance(buffers, np.ndarray):
            buffers = [buffers]
        requests = []
        for buffer in buffers:
            buffer = np.ascontiguousarray(buffer)
            requests.append((self.comm.Isend(buffer, dest=dest, tag=tag), buffer))
            self.traffic.sent += buffer.nbytes
            self.traffic.messages += 1
        self.pending.append((requests, done))
        self.progress()

    def progress(self):
        """Give back the buffers of the sends that completed."""
        still = []
        for requests, done in self.pending:
            if all(r.Test() for r, _ in requests):
                if done is not None:
                    done()
            else:
                still.append((requests, done))
        self.pending = still

    def wait(self):
        for requests, done in self.pending:
            for r, _ in requests:
                r.Wait()
            if done is not None:
                done()
        self.pending = []


def _receive(comm, traffic, shape, dtype, source, tag):
    buffer = np.empty(shape, dtype=dtype)
    t0 = time.perf_counter()
    wait_for_message(comm, source, tag)
    comm.Recv(buffer, source=source, tag=tag)
    traffic.waited += time.perf_counter() - t0
    traffic.received += buffer.nbytes
    return buffer


#: Longest sleep between two looks for a message (seconds).
POLL_MAX_SLEEP = 2e-3


def wait_for_message(comm, source, tag):
    """Return once a message from ``source`` with ``tag`` has arrived, sleeping between
    looks (MPI implementations spin in a blocking receive, which takes the core from
    another rank's work when ranks outnumber cores, as in tests on two cores)."""
    if not hasattr(comm, "Iprobe"):
        return
    pause = 2e-5
    while not comm.Iprobe(source=source, tag=tag):
        time.sleep(pause)
        pause = min(2 * pause, POLL_MAX_SLEEP)


def probe_any(comm):
    """``(source, tag)`` of a message that has arrived, from any rank, or None."""
    if hasattr(comm, "probe_any"):  # LocalComm
        return comm.probe_any()
    from mpi4py import MPI

    status = MPI.Status()
    if comm.Iprobe(source=MPI.ANY_SOURCE, tag=MPI.ANY_TAG, status=status):
        return status.Get_source(), status.Get_tag()
    return None


def wait_for_all(comm):
    """A barrier that sleeps while it waits (see :func:`wait_for_message`)."""
    if not hasattr(comm, "Ibarrier"):
        comm.Barrier()
        return
    request = comm.Ibarrier()
    pause = 2e-5
    while not request.Test():
        time.sleep(pause)
        pause = min(2 * pause, POLL_MAX_SLEEP)


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
            _receive(comm, traffic, self.layout.panel_sizes[k], self.dtype, source, int(k))
            for _ in range(self.parts)
        ]
        self.taken.add((k, source))
        if self.storage is not None and valid:
            self.storage.accumulate(k, parts[0], parts[1] if self.parts == 2 else None)


def factor_rank(
    comm,
    layout,
    owner,
    kind,
    pivot_tol,
    dtype,
    values,
    amap,
    threads=1,
    compression=None,
    compress_mask=None,
):
    """This rank's cblks factored, the fan-in sums exchanged (collective).

    Parameters
    ----------
    comm : communicator (mpi4py's, or :class:`~pastixpy.distributed.local.LocalComm`)
    layout : PanelLayout
    owner : ndarray of int32
        Owner of each cblk (:func:`~pastixpy.distributed.mapping.proportional_mapping`).
    kind : Kind
    pivot_tol : float
    dtype : numpy dtype
        The factors' precision.
    values : (ndarray, ndarray)
        B's entries in the assembly map's order (L's, U's).
    amap : AssemblyMap
    threads : int
        Threads of this rank's kernels.
    compression : mapping, optional
        The kernels' compression parameters (just-in-time block low-rank), and
        ``compress_mask`` the cblks to compress (only this rank's are).

    Returns
    -------
    RankFactors
        Whatever the outcome: ``failed`` is the first column (pivot order) whose LLᵀ
        pivot is not positive on any rank, else -1; ``error`` a message where a rank
        could not allocate its memory. Both are the same on every rank.
    """
    rank = comm.Get_rank()
    schedule = Schedule.build(layout, owner, rank)
    owned = schedule.owned
    traffic = Traffic()
    t0 = time.perf_counter()
    mask = None
    if compress_mask is not None:
        mask = np.where(owned, compress_mask, 0).astype(np.int8)
    error = None
    try:
        storage = _numeric.Storage(
            layout.structure,
            dtype,
            kind.two_factors,
            owners=owner,
            rank=rank,
            compress=mask,
            fanin=schedule.fanin.astype(np.int8),
            touch_threads=kernel_threads(threads),
        )
    except MemoryError as exc:
        storage, error = None, f"rank {rank}: {exc}"
    pivots = Pivots.empty(kind, layout.fcol[-1], dtype)
    sender = _Sender(comm, traffic)
    fanin = _FanIn(layout, kind, dtype, storage, sender, owner)
    failed = -1
    only = np.zeros(layout.ncblk, dtype=np.int8)
    threads = kernel_threads(threads)
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
                with blas_threads(1 if threads > 1 else None):
                    _, got = _numeric.factorize(
                        layout.structure,
                        storage,
                        _numeric.KIND_CODES[kind.name],
                        pivot_tol,
                        amap,
                        values[0],
                        values[1],
                        pivots,
                        threads,
                        None,
                        compression,
                        only,
                    )
            except MemoryError as exc:
                got, error = -1, f"rank {rank}: {exc}"
            failed = got
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
    knows of the others (the schedule). Read by the root's solver as
    :class:`~pastixpy.numeric.Factors` is: ``dtype``, ``perturbed``, ``storage``,
    ``solve_inplace`` (here collective)."""

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

    @property
    def perturbed(self):
        return self.pivots.pert.astype(bool)

    @property
    def conj(self):
        return self.kind.conj(self.dtype)

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
        layout, schedule = self.layout, self.schedule
        comm, traffic = self.comm, self.traffic
        nrhs = X.shape[1]
        flat = X.reshape(-1)
        fcol = layout.fcol
        forward, backward = self.kind.sweeps(self.dtype, self.pivots.lperm, trans)
        owned_rows = np.repeat(schedule.owned, np.diff(fcol))
        X[~owned_rows] = 0  # others' rows gather this rank's updates to them
        sender = _Sender(comm, traffic)

        def rows(k):
            return X[fcol[k] : fcol[k + 1]]

        with blas_threads(1):
            for step in schedule.steps:
                for k, sources in step.receive.items():
                    for source in sources:
                        rows(k)[...] += _receive(
                            comm, traffic, rows(k).shape, X.dtype, source, int(k)
                        )
                _numeric.solve_forward(flat, nrhs, self.storage, forward, _Plan.of(step.cblks))
                for f in step.send:
                    sender.send(rows(f).copy(), int(schedule.owner[f]), int(f))
            if self.kind.block_diagonal:
                p = self.pivots
                _numeric.solve_diagonal(flat, nrhs, self.storage, p.dsub, self.conj, p.pivtype)
            for step in schedule.backward:
                for f, source in step.receive.items():
                    rows(f)[...] = _receive(comm, traffic, rows(f).shape, X.dtype, source, int(f))
                _numeric.solve_backward(flat, nrhs, self.storage, backward, _Plan.of(step.cblks))
                for k in step.send:
                    for dest in schedule.contributors[k]:
                        sender.send(rows(k).copy(), int(dest), int(k))
        sender.wait()
        # Every rank's rows to every rank.
        wait_for_all(comm)
        mine = np.ascontiguousarray(X[owned_rows])
        for r, part in enumerate(comm.allgather(mine)):
            X[np.repeat(schedule.owner == r, np.diff(fcol))] = part
        return X
