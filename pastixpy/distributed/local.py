"""An in-process communicator: the ranks of a distributed run as threads of one process.

:class:`LocalComm` offers the part of mpi4py's communicator interface that pastixpy's
distributed mode uses (``Get_rank``, ``Get_size``, ``bcast``, ``gather``,
``allgather``, ``Barrier``, ``Isend``, ``Recv``, ``send``, ``recv``, ``Iprobe``,
``Dup``), so that the distributed
code runs, and is tested, without MPI: :func:`run_ranks` starts one thread per rank.
The kernels release the GIL, so the ranks' factorizations do run side by side.
Messages are copied (as MPI copies them, pickled objects too): a rank may reuse its
buffer at once; collectives hand the ranks the same objects.
"""

import pickle
import threading
from collections import defaultdict, deque

import numpy as np


class _Hub:
    """What the ranks of one communicator share: mailboxes and a collective slot."""

    def __init__(self, size, parent=None):
        self.size = size
        self.parent = parent  # the hub this one duplicates: its failures are ours
        self.cond = threading.Condition()
        self.boxes = defaultdict(deque)  # (source, dest, tag) -> messages
        self.barrier = threading.Barrier(size)
        self.slots = [None] * size
        self.dups = {}
        self.aborted = None


class _Request:
    """A completed send (messages are copied when sent)."""

    def Test(self):  # noqa: N802 (mpi4py's name)
        return True

    def Wait(self):  # noqa: N802
        return None


class LocalComm:
    """Rank ``rank`` of ``size`` threads sharing a hub (see :func:`run_ranks`)."""

    def __init__(self, hub, rank):
        self._hub = hub
        self._rank = rank
        self._ndup = 0

    def Get_rank(self):  # noqa: N802
        return self._rank

    def Get_size(self):  # noqa: N802
        return self._hub.size

    def Dup(self):  # noqa: N802
        """A communicator of the same ranks with mailboxes of its own."""
        self._ndup += 1
        key = self._ndup
        with self._hub.cond:
            hub = self._hub.dups.setdefault(key, _Hub(self._hub.size, self._hub))
        return LocalComm(hub, self._rank)

    def Free(self):  # noqa: N802
        return None

    # -- point to point

    def Isend(self, buffer, dest, tag=0):  # noqa: N802
        data = np.array(buffer, copy=True)
        with self._hub.cond:
            self._hub.boxes[(self._rank, dest, tag)].append(data)
            self._hub.cond.notify_all()
        return _Request()

    def Send(self, buffer, dest, tag=0):  # noqa: N802
        self.Isend(buffer, dest, tag)

    def send(self, obj, dest, tag=0):
        obj = pickle.loads(pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL))  # as MPI does
        with self._hub.cond:
            self._hub.boxes[(self._rank, dest, tag)].append(obj)
            self._hub.cond.notify_all()

    def recv(self, source, tag=0):
        return self._take((source, self._rank, tag))

    def Iprobe(self, source, tag=0):  # noqa: N802
        self._check()
        with self._hub.cond:
            return bool(self._hub.boxes[(source, self._rank, tag)])

    def probe_any(self):
        """``(source, tag)`` of a message waiting for this rank, or None (what mpi4py's
        ``Iprobe(ANY_SOURCE, ANY_TAG, status)`` tells)."""
        self._check()
        with self._hub.cond:
            for (source, dest, tag), box in self._hub.boxes.items():
                if dest == self._rank and box:
                    return source, tag
        return None

    def _take(self, key):
        with self._hub.cond:
            while not self._hub.boxes[key]:
                self._check()
                self._hub.cond.wait(timeout=0.1)
            return self._hub.boxes[key].popleft()

    def Recv(self, buffer, source, tag=0):  # noqa: N802
        data = self._take((source, self._rank, tag))
        if data.size != buffer.size:
            raise ValueError(f"message of {data.size} items into a buffer of {buffer.size}")
        buffer.reshape(-1)[...] = data.reshape(-1)

    # -- collectives (every rank calls them in the same order)

    def _exchange(self, value):
        """Every rank's ``value``, in rank order."""
        hub = self._hub
        hub.slots[self._rank] = value
        self._wait()
        out = list(hub.slots)
        self._wait()
        return out

    def _wait(self):
        try:
            self._hub.barrier.wait()
        except threading.BrokenBarrierError:
            self._check()
            raise

    def _check(self):
        hub = self._hub
        while hub is not None:
            if hub.aborted is not None:
                raise RuntimeError(f"another rank failed: {hub.aborted!r}")
            hub = hub.parent

    def Barrier(self):  # noqa: N802
        self._wait()

    def bcast(self, obj, root=0):
        return self._exchange(obj)[root]

    def gather(self, obj, root=0):
        out = self._exchange(obj)
        return out if self._rank == root else None

    def allgather(self, obj):
        return self._exchange(obj)

    def abort(self, exc):
        """Wake the other ranks with an error (a rank's thread failed), on this
        communicator and its duplicates."""
        hubs = [self._hub]
        while hubs:
            hub = hubs.pop()
            with hub.cond:
                hub.aborted = exc
                hub.cond.notify_all()
                hubs.extend(hub.dups.values())
            hub.barrier.abort()


def run_ranks(size, function, *args, **kwargs):
    """Call ``function(comm, *args, **kwargs)`` on ``size`` threads, one per rank, each
    with its own :class:`LocalComm`; returns the results in rank order and raises the
    first exception a rank raised."""
    if size < 1:
        raise ValueError(f"size must be >= 1, got {size}")
    hub = _Hub(size)
    results = [None] * size
    errors = [None] * size

    def body(rank):
        comm = LocalComm(hub, rank)
        try:
            results[rank] = function(comm, *args, **kwargs)
        except BaseException as exc:  # handed to the caller below
            errors[rank] = exc
            comm.abort(exc)

    threads = [threading.Thread(target=body, args=(r,), daemon=True) for r in range(size)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    first = next((e for e in errors if e is not None and not _secondary(e)), None)
    first = first or next((e for e in errors if e is not None), None)
    if first is not None:
        raise first
    return results


def _secondary(exc):
    """Whether a rank's exception only reports another rank's failure."""
    return isinstance(exc, threading.BrokenBarrierError) or (
        isinstance(exc, RuntimeError) and str(exc).startswith("another rank failed")
    )
