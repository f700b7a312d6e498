"""Distributed factorization and solves over MPI (mpi4py): ``pip install "pastixpy[mpi]"``.

Every rank of the communicator calls the same functions (they are collective)::

    from mpi4py import MPI
    import pastixpy

    comm = MPI.COMM_WORLD
    A = load_matrix() if comm.rank == 0 else None   # or each rank its block of rows
    F = pastixpy.factorize(A, comm=comm)            # pastixpy.distributed.factorize
    x = F.solve(b if comm.rank == 0 else None)      # x on every rank
    F.stats["factor_entries_local"]                 # what this rank stores

Rank 0 runs the pipeline (checks, preprocessing, analysis, retries, refinement);
the cblks of the factor are mapped onto the ranks by proportional mapping
(:mod:`.mapping`), each rank allocating and factoring only its own, and sending its
updates to other ranks' cblks once, summed (fan-in, :mod:`.schedule`); the triangular
sweeps run the same way on the vector. :class:`~.local.LocalComm` runs the ranks as
threads of one process, without MPI. See docs/distributed.md.

Bad input on any rank is an :class:`~pastixpy.errors.InvalidInputError` on every rank,
and so is any error of rank 0's pipeline; any other failure of one rank (Ctrl-C, an
exception in the script between collective calls) aborts the MPI job with a message
(:mod:`.abort`), rather than leaving the other ranks waiting for it.
"""

import time
from dataclasses import replace

import numpy as np
import scipy.sparse as sp

from ..errors import InvalidInputError, PastixError
from ..factorization import Factorization
from ..matrix import canonical_csc
from ..options import Options
from .abort import install_abort_handler
from .backend import DistributedBackend, DistributedFactors
from .local import LocalComm, run_ranks
from .mapping import proportional_mapping
from .messages import wait_for_all
from .schedule import Schedule
from .session import Ranks, collective, finish, raise_everywhere, root_call, serve

__all__ = [
    "factorize",
    "DistributedFactorization",
    "DistributedBackend",
    "DistributedFactors",
    "LocalComm",
    "run_ranks",
    "proportional_mapping",
    "Schedule",
    "install_abort_handler",
    "world",
]


def world():
    """mpi4py's ``MPI.COMM_WORLD`` when this process was started by ``mpiexec`` with more
    than one rank, else None (mpi4py absent, or a single process: MPI is not even
    initialized then)."""
    import os

    launched = any(
        int(os.environ.get(v, "1")) > 1
        for v in ("PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "MPI_LOCALNRANKS", "PMIX_SIZE")
        if os.environ.get(v, "").isdigit()
    )
    if not launched:
        return None
    try:
        from mpi4py import MPI
    except ImportError:
        return None
    return MPI.COMM_WORLD if MPI.COMM_WORLD.Get_size() > 1 else None


def _shape(A):
    """A's shape, or why it has none (an object numpy cannot read as an array)."""
    if A is None:
        return None
    try:
        return tuple(np.shape(A))
    except Exception as exc:  # a ragged list, say: reported by every rank below
        return f"{type(A).__name__} ({exc})"


def _distribution(comm, A):
    """How A is given: ``"root"`` (rank 0's matrix, None elsewhere) or ``"rows"`` (each
    rank its consecutive block of rows, in rank order); the row counts for "rows".
    Decided by every rank from every rank's shape, so that all raise alike."""
    shapes = comm.allgather(_shape(A))
    if isinstance(shapes[0], tuple) and all(s is None for s in shapes[1:]):
        return "root", None
    if all(isinstance(s, tuple) and len(s) == 2 for s in shapes):
        ncols = {s[1] for s in shapes}
        counts = [s[0] for s in shapes]
        if len(ncols) == 1 and sum(counts) == shapes[0][1]:
            return "rows", counts
    raise_everywhere(
        comm,
        InvalidInputError(
            "a distributed factorization takes A on rank 0 (None on the other ranks), or on "
            f"every rank its block of consecutive rows (row counts summing to n); got {shapes}"
        ),
    )


def _gather_rows(comm, block):
    """The blocks of rows of every rank, stacked on rank 0 (None elsewhere): sparse
    where any block is."""
    parts = comm.gather(block, root=0)
    if comm.Get_rank() != 0:
        return None
    if any(sp.issparse(p) for p in parts):
        return sp.csc_array(sp.vstack([sp.csr_array(p) for p in parts]))
    return np.concatenate([np.asarray(p) for p in parts], axis=0)


def _rhs_rows(b, count):
    """This rank's rows of b (a matrix given by rows) as an array, and what is wrong
    with them (a list of messages, empty when they are fine)."""
    expected = f"its {count} rows of b, shape ({count},) or ({count}, k)"
    if b is None:
        return None, [f"b is None; with A given by rows, every rank passes {expected}"]
    try:
        b = b.toarray() if sp.issparse(b) else np.asarray(b)
    except Exception as exc:  # not readable as an array (ragged, say)
        return None, [f"b ({type(b).__name__}) is not an array ({exc}); pass {expected}"]
    if b.dtype.kind not in "biufc":
        return None, [f"b has dtype {b.dtype}; it must be numeric"]
    if b.ndim not in (1, 2) or b.shape[0] != count:
        return None, [f"b has shape {b.shape}; with A given by rows, pass {expected}"]
    return b, []


def factorize(A, comm, **options):
    """Factor A over the ranks of ``comm`` (collective: every rank calls it).

    Parameters
    ----------
    A : sparse matrix or None
        On rank 0 the whole matrix and None on the others, or on every rank its block
        of consecutive rows (rank 0 the first ones), each a sparse (n_i, n) matrix.
    comm : mpi4py communicator (or :class:`LocalComm`)
    **options
        As :func:`pastixpy.factorize`'s (validated on every rank). ``threads``: each
        rank's (default 1); ``compress``: just-in-time only.

    Returns
    -------
    DistributedFactorization
        On every rank.

    Raises
    ------
    Whatever :func:`pastixpy.factorize` raises, on every rank.
    """
    t0 = time.perf_counter()
    return factorize_with(A, Options.parse(comm=comm, **options), t0)


def _session(comm):
    """The :class:`Ranks` of a new distributed factorization (collective); over MPI, an
    uncaught exception on any rank aborts the job from now on. The ranks meet first at
    a barrier whose waits sleep (see :func:`.session.collective`)."""
    if hasattr(comm, "Abort"):
        install_abort_handler()
    wait_for_all(comm)
    return Ranks(comm)


def factorize_with(A, options, t0):
    """:func:`factorize` for validated Options (the same check made on every rank).

    Rank 0 runs the pipeline with a :class:`~.backend.DistributedBackend` as its numeric
    phase, the others serve it (:func:`.session.serve`) until it is done."""
    if options.comm is None:  # one rank
        return Factorization.from_matrix(canonical_csc(A), options, t0=t0)
    ranks = _session(options.comm)
    options = replace(options, comm=ranks)
    with collective(ranks, "during a distributed factorization"):
        how, counts = _distribution(ranks, A)
        if how == "rows":
            A = _gather_rows(ranks, A)
        if ranks.Get_rank() != 0:
            factors, summary = serve(ranks)
            return DistributedFactorization(ranks, None, factors, summary, how, counts)
        backend = DistributedBackend(ranks)

        def run():  # every failure of rank 0's, bad input included, is raised everywhere
            return Factorization.from_matrix(canonical_csc(A), options, None, backend, t0)

        F = root_call(ranks, run)
        summary = dict(F.stats, shape=F.shape)
        finish(ranks, summary)
    return DistributedFactorization(ranks, F, backend.factors, summary, how, counts)


#: Why a distributed factorization offers no selected inverse.
SELECTED_INVERSE = (
    "inv_diag() and inv_selected() need the whole factor in one process; a distributed "
    "factorization (comm=) spreads it over the ranks of its communicator: factorize "
    "without comm= for the entries of A⁻¹"
)


class DistributedFactorization:
    """A factorization spread over the ranks of a communicator, on every rank.

    Its solves are collective. ``stats`` is rank 0's (the pipeline's) with this
    rank's own figures: ``factor_entries_local``, ``factor_bytes_local``,
    ``peak_memory_bytes`` (this process's peak), ``sent_bytes``, ``received_bytes``;
    on rank 0 ``stats["distributed"]`` has every rank's.
    """

    def __init__(self, comm, root, factors, summary, how, counts):
        self.comm = comm
        self._root = root  # the pipeline's Factorization, on rank 0
        self._factors = factors  # this rank's RankFactors (rank 0's: its backend's)
        self._summary = summary
        self.distribution = how
        self._counts = counts
        self.shape = tuple(summary["shape"])
        self.kind = summary["kind"]

    def __reduce__(self):
        raise TypeError(
            "a distributed factorization cannot be pickled or copied: its factors are "
            f"spread over the {self.comm.Get_size()} ranks of its communicator, each "
            "holding its own cblks, and its solves are collective; factorize without "
            "comm= for a factorization that pickles"
        )

    @property
    def rank(self):
        return self.comm.Get_rank()

    @property
    def stats(self):
        base = self._root.stats if self._root is not None else dict(self._summary)
        return {**base, **(self._factors.local_stats() if self._factors else {})}

    def solve(self, b, trans="N"):
        """Solve A x = b (collective).

        The collective form of :meth:`pastixpy.Factorization.solve`: every rank calls
        it, rank 0's factorization solves and the other ranks serve their factors.

        Parameters
        ----------
        b : array_like or None
            On rank 0 the right-hand side(s) (ignored elsewhere: None will do), or, for
            a matrix given by rows, each rank's rows of it (every rank the same number
            of columns).
        trans : {"N", "T", "H"}

        Returns
        -------
        ndarray
            x on every rank (for a matrix given by rows: each rank's rows of x).

        Raises
        ------
        InvalidInputError
            On every rank, where b is not valid on any rank (the message names it).
        Whatever the one-process solve raises, on every rank.
        """
        comm = self.comm
        with collective(comm, "during a distributed solve"):
            if self.distribution == "rows":
                b = self._gather_rhs(b)
            if self.rank != 0:
                _, x = serve(comm, self._factors)
            else:
                x = root_call(comm, self._root.solve, b, trans)
                finish(comm, x)
        if self.distribution == "rows":
            start = sum(self._counts[: self.rank])
            return x[start : start + self._counts[self.rank]]
        return x

    __call__ = solve

    def inv_diag(self):
        """Not for distributed factors: raises PastixError on every rank (see
        :meth:`pastixpy.Factorization.inv_diag`)."""
        raise PastixError(SELECTED_INVERSE)

    def inv_selected(self):
        """Not for distributed factors: raises PastixError on every rank (see
        :meth:`pastixpy.Factorization.inv_selected`)."""
        raise PastixError(SELECTED_INVERSE)

    def _gather_rhs(self, b):
        """Every rank's rows of b, checked on every rank, stacked on rank 0."""
        comm = self.comm
        b, problems = _rhs_rows(b, self._counts[self.rank])
        everyone = comm.allgather((problems, None if b is None else b.shape[1:]))
        found = [f"rank {r}: {p}" for r, (mine, _) in enumerate(everyone) for p in mine]
        if not found and len({columns for _, columns in everyone}) > 1:
            shapes = [(n, *columns) for n, (_, columns) in zip(self._counts, everyone, strict=True)]
            found = [f"every rank's rows of b must have the same columns; got shapes {shapes}"]
        if found:
            raise_everywhere(comm, InvalidInputError("; ".join(found)))
        return _gather_rows(comm, b)
