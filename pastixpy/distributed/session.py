"""Who does what in a distributed factorization: rank 0 runs the pipeline, the others
serve it.

Rank 0 (the root) runs the whole pipeline of a one-process factorization (checks,
preprocessing, analysis, the retries, the check solves, refinement, statistics); only
its numeric factorization and its triangular sweeps are spread over the ranks. The
other ranks wait in :func:`serve` for its commands, broadcast one at a time:

- ``factorize``: the block structure, the owners, B's entries and the parameters;
  every rank factors its cblks (:func:`~.numeric.factor_rank`);
- ``solve``: a right-hand side (every rank takes part in the sweeps);
- ``stats``: each rank's own statistics, gathered on the root;
- ``return`` / ``raise``: the collective call is over (with what to return, or the
  root's exception, raised on every rank).

A failure of one rank alone cannot be handed over this way when the other ranks are
in the middle of an exchange with it (a command's work, :func:`exchange`; a non-root
rank's :func:`serve`; the collective steps around them, :func:`collective`): over MPI
it aborts the job (:mod:`.abort`). Bad input is found by a check that every rank
makes and compares (:func:`raise_everywhere`), so it is an error on every rank.

So a retry of the pipeline (LDLᵀ after a failed LLᵀ, mixed precision falling back
to double, compression falling back to full rank) is simply another ``factorize``.
"""

import pickle
from contextlib import contextmanager

import numpy as np

from ..numeric import PanelLayout
from .abort import abort
from .mapping import proportional_mapping
from .numeric import factor_rank, wait_for_all, wait_for_message

# Commands the root broadcasts.
FACTORIZE, SOLVE, STATS, RETURN, RAISE = "factorize", "solve", "stats", "return", "raise"

#: The tag of the commands, on a communicator of their own (:class:`Ranks`).
COMMAND_TAG = 1


class Ranks:
    """The ranks of one distributed factorization: two duplicates of the user's
    communicator (collective), one for the data (its methods are this object's) and
    one for the commands (``control``), so that neither meets the other's messages
    nor the user's.

    ``mpi``: whether the ranks are processes whose job can be aborted (mpi4py's
    communicators; not :class:`~.local.LocalComm`'s threads, which wake each other);
    ``agreed``: the exception of the current collective call that every rank raises.
    """

    def __init__(self, comm):
        self.data = comm.Dup()
        self.control = comm.Dup()
        self.mpi = hasattr(comm, "Abort")
        self.agreed = None

    def __getattr__(self, name):
        return getattr(self.data, name)


@contextmanager
def collective(comm, what):
    """One collective call of the user's (a factorization, a solve), on every rank:
    an exception that is not raised on every rank (:func:`raise_everywhere`, the root's
    ``raise`` command) leaves the other ranks waiting for this one, so over MPI it
    aborts the job.

    It begins with a barrier whose waits sleep: a rank that arrives first (the others
    still reading their input) neither spins on a core nor sits in a blocking MPI call,
    where Python cannot act on a signal: Ctrl-C reaches it at once."""
    comm.agreed = None
    try:
        wait_for_all(comm.data)
        yield
    except BaseException as exc:
        if comm.mpi and exc is not comm.agreed:
            abort(comm.data, exc, what)
        raise


@contextmanager
def exchange(comm, what):
    """The root's part of a command's work, which the other ranks do with it: over MPI,
    a failure here aborts the job (they cannot hear a ``raise`` command until the work
    is over, and it never will be)."""
    try:
        yield
    except BaseException as exc:
        if comm.mpi:
            abort(comm.data, exc, what)
        raise


def raise_everywhere(comm, exc):
    """Raise ``exc``, which every rank raises alike (each decided on it from what all
    ranks gathered): a typed error the script may catch, not a failure of one rank."""
    comm.agreed = exc
    raise exc


def command(comm, cmd, payload=None):
    """Rank 0: send a command to every other rank (point to point, so that they can
    wait for it without spinning)."""
    control = comm.control
    for r in range(1, comm.Get_size()):
        control.send((cmd, payload), dest=r, tag=COMMAND_TAG)


def next_command(comm):
    """A non-root rank: the root's next command, waited for without spinning."""
    control = comm.control
    wait_for_message(control, 0, COMMAND_TAG)
    return control.recv(source=0, tag=COMMAND_TAG)


class DistributedFactors:
    """The root's handle on the ranks' factors, read by its :class:`~pastixpy.solve.Solver`
    and pipeline as :class:`~pastixpy.numeric.Factors` is: each solve is collective."""

    def __init__(self, comm, mine, totals):
        self.comm = comm
        self.mine = mine  # the root's RankFactors
        self.kind = mine.kind
        self.layout = mine.layout
        self.pivots = mine.pivots
        self.threads = mine.threads
        self.storage = totals

    @property
    def dtype(self):
        return self.mine.dtype

    @property
    def perturbed(self):
        return self.mine.perturbed

    @property
    def conj(self):
        return self.mine.conj

    def solve_inplace(self, X, trans="N"):
        with exchange(self.comm, "during a distributed solve"):
            command(self.comm, SOLVE, (trans, X))
            return self.mine.sweep(X, trans)

    def diagonal(self):
        raise NotImplementedError("the diagonal of distributed factors is spread over the ranks")

    def d_blocks(self):
        raise NotImplementedError("the pivots of distributed factors are spread over the ranks")


class StorageTotals:
    """What the pipeline's statistics read of a storage, summed over the ranks."""

    def __init__(self, parts, dtype, two_factors):
        self.entries = sum(p["entries"] for p in parts)
        self.nbytes = sum(p["nbytes"] for p in parts)
        self.compressed_cblks = sum(p["compressed_cblks"] for p in parts)
        self.dtype = np.dtype(dtype)
        self.two_factors = two_factors
        self._tiles = [p["tiles"] for p in parts if p["tiles"] is not None]

    def tiles(self):
        """Every rank's compressed tiles (:meth:`pastixpy._numeric.Storage.tiles`)."""
        keys = ("cblk", "blok", "factor", "rows", "cols", "rank", "cblks", "held", "seconds")
        if not self._tiles:
            return {k: np.zeros(0, np.float64 if k == "seconds" else np.int64) for k in keys}
        return {k: np.concatenate([t[k] for t in self._tiles]) for k in keys}


def _storage_part(factors):
    s = factors.storage
    if s is None:  # it could not be allocated
        return {"entries": 0, "nbytes": 0, "compressed_cblks": 0, "tiles": None}
    compressed = s.compressed_cblks
    return {
        "entries": int(s.entries),
        "nbytes": int(s.nbytes),
        "compressed_cblks": int(compressed),
        "tiles": s.tiles() if compressed else None,
    }


def _layout_arrays(layout):
    return tuple(
        np.asarray(a)
        for a in (
            layout.fcol,
            layout.bloknum,
            layout.stride,
            layout.frow,
            layout.lrow,
            layout.fcblk,
            layout.bcoef,
        )
    )


def _factorize_payload(
    layout, owner, amap, values, kind, pivot_tol, dtype, threads, compression, compress_mask
):
    return {
        "layout": _layout_arrays(layout),
        "owner": owner,
        "amap": (amap.pos_l, amap.ptr_l, amap.pos_u, amap.ptr_u),
        "values": values,
        "kind": kind.name,
        "pivot_tol": pivot_tol,
        "dtype": np.dtype(dtype).str,
        "threads": threads,
        "compression": compression,
        "compress_mask": compress_mask,
    }


class _Map:
    """The parts of an AssemblyMap the kernels read."""

    def __init__(self, pos_l, ptr_l, pos_u, ptr_u):
        self.pos_l, self.ptr_l, self.pos_u, self.ptr_u = pos_l, ptr_l, pos_u, ptr_u


def _factor_from(comm, payload, layout=None):
    from ..kinds import KINDS

    layout = layout or PanelLayout(*payload["layout"])
    return factor_rank(
        comm,
        layout,
        payload["owner"],
        KINDS[payload["kind"]],
        payload["pivot_tol"],
        np.dtype(payload["dtype"]),
        payload["values"],
        _Map(*payload["amap"]),
        threads=payload["threads"],
        compression=payload["compression"],
        compress_mask=payload["compress_mask"],
    )


def root_factorize(comm, B, layout, amap, kind, pivot_tol, dtype, threads, compression):
    """The root's numeric factorization: the command to the other ranks, its own part,
    and the handle its pipeline reads.

    Returns
    -------
    factors : DistributedFactors
    failed : int
        As :func:`pastixpy._numeric.factorize`'s: the first column (pivot order) whose
        LLᵀ pivot is not positive, on any rank, else -1.

    Raises
    ------
    OutOfMemoryError
        A rank could not allocate its part (the other ranks keep serving).
    """
    from ..errors import OutOfMemoryError

    owner = proportional_mapping(layout, comm.Get_size())
    params, mask = None, None
    if compression is not None:
        params = compression.kernel_params(B, layout)
        mask = compression.candidates(layout)
    payload = _factorize_payload(
        layout,
        owner,
        amap,
        amap.values(B.data, dtype),
        kind,
        pivot_tol,
        dtype,
        threads,
        params,
        mask,
    )
    with exchange(comm, "during a distributed factorization"):
        command(comm, FACTORIZE, payload)
        mine = _factor_from(comm, payload, layout)
        parts = comm.gather(_storage_part(mine), root=0)
    if mine.error is not None:
        raise OutOfMemoryError(
            f"a rank could not allocate its part of the factors ({mine.error}); more ranks "
            "spread them thinner",
            needed=0,
            available=0,
        )
    totals = StorageTotals(parts, dtype, kind.two_factors)
    return DistributedFactors(comm, mine, totals), mine.failed


def serve(comm, factors=None):
    """A non-root rank's part of a collective call: run the root's commands until it
    says ``return`` (its payload is returned, with this rank's factors: ``factors``, or
    those a ``factorize`` command made) or ``raise`` (its exception is raised here
    too). Any other exception here leaves the root waiting (inside :func:`collective`,
    over MPI, it aborts the job)."""
    while True:
        cmd, payload = next_command(comm)
        if cmd == FACTORIZE:
            factors = None  # the previous try's memory first
            factors = _factor_from(comm, payload)
            comm.gather(_storage_part(factors), root=0)
        elif cmd == SOLVE:
            trans, X = payload
            factors.sweep(np.array(X, copy=True), trans)
        elif cmd == STATS:
            comm.gather(None if factors is None else factors.local_stats(), root=0)
        elif cmd == RETURN:
            return factors, payload
        elif cmd == RAISE:
            comm.agreed = payload
            raise payload
        else:
            raise RuntimeError(f"unknown command {cmd!r} from rank 0")


def root_call(comm, function, *args, **kwargs):
    """Run ``function`` on the root while the other ranks :func:`serve`; then end the
    collective call: ``return`` with the result, or ``raise`` with the exception (a
    failure during a command's work aborts the job first, see :func:`exchange`)."""
    try:
        result = function(*args, **kwargs)
    except BaseException as exc:
        try:
            pickle.dumps(exc)
            sent = exc
        except Exception:  # an exception that does not pickle: its message
            sent = RuntimeError(f"rank 0: {type(exc).__name__}: {exc}")
        command(comm, RAISE, sent)
        comm.agreed = exc
        raise
    return result


def finish(comm, payload):
    """End the collective call on the root with ``payload`` for every rank."""
    command(comm, RETURN, payload)


def gather_stats(comm, factors):
    """Every rank's own statistics, on the root (a collective step)."""
    with exchange(comm, "while gathering the ranks' statistics"):
        command(comm, STATS)
        return comm.gather(factors.local_stats(), root=0)
