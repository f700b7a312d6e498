"""Process concerns, in one place: the cores a process may use and whether it may fork,
the BLAS's and OpenMP's threads, memory given back to the system, the peak measured,
and a forked child that computes an array.

What a process may do is one record, :class:`Allowance`, made by one of two rules:

- **An ordinary process** (:meth:`Allowance.process`) runs on the ``threads`` asked
  for, by default what its environment says (:func:`default_threads`: the OpenMP
  limit in force, ``OMP_NUM_THREADS`` or threadpoolctl's, else every core of its
  affinity mask). It may
  fork helper processes (the analysis's METIS runs after the first, each computing a
  permutation while this process computes another) where it has more than one core
  and runs on Linux: elsewhere fork() is missing or unsafe with threads alive.
- **A rank of an MPI job** (:meth:`Allowance.mpi_rank`) runs on its ``threads``, by
  default one: the ranks of a node share its cores. It never forks: a child would
  share the MPI library's registered memory and network connections, which MPI
  implementations do not support.

The kernels' OpenMP threads follow a rule of their own, whatever the allowance
(:func:`kernel_threads`): a build without OpenMP (:data:`OPENMP`, a compiler without
it: see setup.py) runs them on one thread, and GNU OpenMP's thread pool does not
survive fork(), so in a child forked from a process that ran threaded kernels they
run on one thread. A
forked child may still fork in turn: the children of :func:`fork_child` run no
OpenMP.
"""

import ctypes
import ctypes.util
import functools
import importlib
import os
import signal
import sys
import threading
import warnings
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np
from scipy.linalg import lapack
from threadpoolctl import ThreadpoolController

from . import _numeric

#: Whether the kernels were compiled with OpenMP; without it they run on one thread.
OPENMP = bool(_numeric.OPENMP)


def available_cores():
    """Cores this process may run on: its affinity mask's."""
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return os.cpu_count() or 1


def default_threads():
    """The threads of ``threads=None``, every entry point's default: what the process's
    environment says, as numpy, scipy, CHOLMOD and MKL read it.

    The limit of the OpenMP runtime in force (``OMP_NUM_THREADS`` as it read it at
    start, or a threadpoolctl limit on it: ``threadpool_limits(1)``), where one is
    loaded; else ``OMP_NUM_THREADS`` itself; never more than the affinity mask's
    cores (:func:`available_cores`). Users who run many processes (multiprocessing,
    job arrays, MPI ranks) set these to keep each on its share of the cores; the
    threads counted include the analysis's forked METIS runs (:class:`Allowance`).
    """
    cores = available_cores()
    limits = [lib.num_threads for lib in _openmp_runtimes()]
    limits = [n for n in limits if isinstance(n, int) and n > 0]
    if not limits:
        limits = [n for n in [_env_threads("OMP_NUM_THREADS")] if n]
    return max(1, min([cores, *limits]))


def _env_threads(name):
    """The thread count an OMP_NUM_THREADS-like variable sets (its first level's), or
    None where it is unset or not a positive integer."""
    value = os.environ.get(name, "").split(",")[0].strip()
    return int(value) if value.isdigit() and int(value) > 0 else None


@dataclass(frozen=True)
class Allowance:
    """What a process may do: the cores it may use and whether it may fork helpers.

    Made by :meth:`process` or :meth:`mpi_rank` (the module's rule).

    Attributes
    ----------
    cores : int
        Cores this process may keep busy (threads, or forked children beside itself).
    may_fork : bool
        Whether it may fork helper processes.
    """

    cores: int
    may_fork: bool

    @classmethod
    def process(cls, threads=None):
        """An ordinary process's allowance: ``threads`` cores (None: the environment's,
        :func:`default_threads`); it may fork on Linux when it has more than one."""
        cores = default_threads() if threads is None else threads
        return cls(cores, cores > 1 and sys.platform.startswith("linux"))

    @classmethod
    def mpi_rank(cls, threads=None):
        """An MPI rank's allowance: ``threads`` cores (None: one); it never forks."""
        return cls(1 if threads is None else threads, False)

    @property
    def children(self):
        """Forked children this process may run beside itself: one per core beyond
        its own where it may fork, else none."""
        return self.cores - 1 if self.may_fork else 0


# ---------------------------------------------------------------------------- threads

#: GNU OpenMP's thread pool does not survive fork(): in the child of a process that
#: ran threaded kernels, another OpenMP region would hang, so it runs them on one.
_openmp = {"used": False, "forked": False}


def _after_fork_in_child():
    _openmp["forked"] = _openmp["forked"] or _openmp["used"]


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def kernel_threads(threads):
    """The OpenMP threads kernels may run on: ``threads``, or 1 in a build without
    OpenMP (:data:`OPENMP`) and in a forked child of a process that ran threaded
    kernels. Marks the pool used when more than one."""
    if not OPENMP or _openmp["forked"]:
        return 1
    if threads > 1:
        _openmp["used"] = True
    return threads


@contextmanager
def blas_threads(limit):
    """Limit the BLAS to ``limit`` threads inside a ``with`` block (None: leave it).

    One threadpoolctl controller serves the process: building one scans the
    loaded libraries, milliseconds that small solves would pay each time.
    """
    if limit is None:
        yield
        return
    with _controller().limit(limits=int(limit), user_api="blas"):
        yield


@functools.cache
def _controller():
    """The process's threadpoolctl controller, made at the first call."""
    return ThreadpoolController()


@functools.cache
def _openmp_runtimes():
    """threadpoolctl's controllers of the OpenMP runtimes loaded (ours among them),
    found once: each reads its runtime's limit at every call."""
    return tuple(_controller().select(user_api="openmp").lib_controllers)


# ---------------------------------------------------------------------------- memory


def _find_malloc_trim():
    """glibc's ``malloc_trim``, or None (other C libraries, other systems)."""
    name = ctypes.util.find_library("c")
    try:
        return ctypes.CDLL(name).malloc_trim if name else None
    except (OSError, AttributeError):
        return None


_malloc_trim = _find_malloc_trim()


def release_free_memory():
    """Give the memory that freed temporaries left in the C heap back to the system.

    glibc keeps freed blocks for reuse; after an analysis (METIS, sorts) they would
    count in the process's peak on top of the factors allocated next. A no-op where
    glibc is not used.
    """
    if _malloc_trim is not None:
        _malloc_trim(0)


def _find_hugepage_switch():
    """numpy's switch for asking transparent huge pages of its large allocations
    (``_set_madvise_hugepage``, which returns the previous setting), or None."""
    for name in ("numpy._core.multiarray", "numpy.core.multiarray"):  # numpy 2, numpy 1
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue
        switch = getattr(module, "_set_madvise_hugepage", None)
        if switch is not None:
            return switch
    return None


_hugepage_switch = _find_hugepage_switch()
_hugepage_lock = threading.Lock()
_hugepage_state = {"depth": 0, "saved": True}


@contextmanager
def without_huge_pages():
    """numpy's allocations inside the block are not advised as transparent huge pages.

    numpy asks the kernel for huge pages on every allocation of 4 MiB or more
    (``madvise(MADV_HUGEPAGE)``); where the system's THP defrag setting is ``madvise``
    (the default of common Linux distributions), a fault in such memory compacts
    memory first when no huge page is free, a stall of milliseconds per page once the
    machine's memory is fragmented. The factors' panels, faulted in at once before the
    factorization, spent up to 40% of a 3D Laplacian 40³'s numeric phase in the
    kernel there, varying from run to run, where plain pages cost the same every time.
    The setting is numpy's, process-wide: nested and concurrent blocks restore it when
    the last one leaves.
    """
    switch = _hugepage_switch
    if switch is None:
        yield
        return
    with _hugepage_lock:
        if _hugepage_state["depth"] == 0:
            _hugepage_state["saved"] = switch(False)
        _hugepage_state["depth"] += 1
    try:
        yield
    finally:
        with _hugepage_lock:
            _hugepage_state["depth"] -= 1
            if _hugepage_state["depth"] == 0:
                switch(_hugepage_state["saved"])


def map_blas_buffers(numpy_too):
    """Have scipy's OpenBLAS (and with ``numpy_too`` numpy's) map the calling thread's
    buffer now (a 1 x 1 Cholesky each; nothing where it exists), while the room checked
    for it is there: mapped later, after the factors took that room, OpenBLAS would
    retry forever or end the process."""
    one = np.ones((1, 1))
    lapack.dpotrf(one)
    if numpy_too:
        np.linalg.cholesky(one)


def peak_memory():
    """This process's peak resident memory in bytes, or None where the system does not say.

    Linux's ``VmHWM``; elsewhere ``getrusage``'s ``ru_maxrss`` (bytes on macOS,
    KiB on the other systems that have it; Windows has neither).
    """
    try:
        with open(f"/proc/{os.getpid()}/status") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        import resource
    except ImportError:  # not on Windows
        return None
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return int(peak) * (1 if sys.platform == "darwin" else 1024)


# ---------------------------------------------------------------------------- forked children


class ForkedChild:
    """A forked process computing an int64 array, sent back through a pipe
    (:func:`fork_child`)."""

    def __init__(self, pid, pipe):
        self.pid, self.pipe = pid, pipe

    def wait(self):
        """The array, or None if the child failed."""
        try:
            with os.fdopen(self.pipe, "rb") as pipe:
                data = pipe.read()
        except BaseException:  # Ctrl-C while waiting: do not wait for the child to finish
            os.kill(self.pid, signal.SIGKILL)
            raise
        finally:
            _, status = os.waitpid(self.pid, 0)
        ok = status == 0 and len(data) % 8 == 0
        return np.frombuffer(data, dtype=np.int64) if ok else None

    def kill(self):
        """Stop a child that will not be waited for (an exception in the parent)."""
        os.kill(self.pid, signal.SIGKILL)
        os.close(self.pipe)
        os.waitpid(self.pid, 0)


def fork_child(compute):
    """Fork a child that writes ``compute()``'s int64 array to a pipe and exits.

    Only where the process's :class:`Allowance` says it may fork. ``compute`` runs in
    the child of a process that may have threads alive (BLAS, OpenMP pools): it must
    take no lock they may hold (METIS's C code takes none).

    Returns
    -------
    ForkedChild

    Raises
    ------
    OSError
        No process to spare (limits, memory).
    """
    read_fd, write_fd = os.pipe()
    try:
        with warnings.catch_warnings():
            # Python 3.12+ warns on fork with threads alive (BLAS, OpenMP pools), and so
            # does JAX's fork hook once JAX is imported (pastixpy.jax): the child runs
            # compute() and writes to the pipe, touching no lock those threads hold.
            warnings.simplefilter("ignore", DeprecationWarning)
            warnings.filterwarnings("ignore", r"os\.fork\(\) was called", RuntimeWarning)
            pid = os.fork()
    except OSError:
        os.close(read_fd)
        os.close(write_fd)
        raise
    if pid == 0:
        status = 1
        try:
            os.close(read_fd)
            data = memoryview(np.ascontiguousarray(compute(), dtype=np.int64)).cast("B")
            while data:
                data = data[os.write(write_fd, data) :]
            status = 0
        finally:
            os._exit(status)
    os.close(write_fd)
    return ForkedChild(pid, read_fd)
