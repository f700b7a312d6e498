"""Who does what in a distributed factorization: rank 0 runs the pipeline, the others
serve it.

Rank 0 (the root) runs the whole pipeline of a one-process factorization (checks,
preprocessing, analysis, the retries, the check solves, refinement, statistics); only
its numeric factorization and its triangular sweeps are spread over the ranks. The
other ranks wait in :func:`serve` for its commands, broadcast one at a time:

- ``factorize``: the :class:`~pastixpy.numeric.NumericTask`, the owners and the threads;
  every rank factors its cblks (:func:`~.numeric.factor_rank`; rank 0's part is
  :class:`~.backend.DistributedBackend`'s);
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

from .abort import abort
from .messages import wait_for_all, wait_for_message
from .numeric import factor_rank

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
            task, owner, threads = payload
            factors = factor_rank(comm, task, owner, threads)
            comm.gather((factors.footprint(), factors.tiles()), root=0)
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
