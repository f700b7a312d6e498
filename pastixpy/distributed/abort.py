"""Ending every rank of an MPI job when one of them fails.

The calls of a distributed factorization are collective, and so is the user's script
around them: a rank that stops in the middle (an exception, Ctrl-C) leaves the others
waiting for messages it will never send, and MPI offers no way to wake them but
``MPI_Abort``, which ends every process of the job. Two cases:

- Inside pastixpy's collective calls, an error that every rank raises (bad input,
  found by a check that all ranks make and compare; a failure of rank 0's pipeline,
  which it sends to the others) is raised on every rank, as a typed error the script
  may catch. Any other exception, on any rank, aborts the job at once
  (:func:`abort`): the other ranks are in the middle of an exchange with this one.
- Outside them, in the user's script, an exception that nothing catches ends only its
  own process: Python would print it and exit, MPI would wait for the others in
  ``MPI_Finalize``, and they for it. :func:`install_abort_handler` makes such an
  exception abort the job after its traceback is printed, as ``python -m mpi4py`` does.
  pastixpy installs it when a distributed factorization starts over MPI, and the
  command line installs it under ``mpiexec``.
"""

import signal
import sys
import traceback

__all__ = ["abort", "exit_status", "install_abort_handler"]


def exit_status(exc):
    """The exit status an abort for ``exc`` gives the job: 128 + SIGINT for Ctrl-C,
    SystemExit's own code, else 1 (those of ``python -m mpi4py``)."""
    if isinstance(exc, KeyboardInterrupt):
        return 128 + signal.SIGINT
    if isinstance(exc, SystemExit):
        code = exc.code
        if isinstance(code, int):
            return code or 1
        return 1
    return 1


def _flush():
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:  # a closed or broken stream: nothing more to save
            pass


def abort(comm, exc, what):
    """Print ``exc`` with this rank's traceback and why the job ends, then abort
    ``comm`` (``MPI_Abort``: every process of the job ends; it does not return).

    Parameters
    ----------
    comm : mpi4py communicator
    exc : BaseException
        What this rank raised.
    what : str
        Where it happened, for the message ("during a distributed solve").
    """
    _flush()
    traceback.print_exception(exc, file=sys.stderr)
    print(
        f"pastixpy: rank {comm.Get_rank()} of {comm.Get_size()} stopped ({type(exc).__name__}) "
        f"{what}; the other ranks would wait for it forever: aborting the MPI job",
        file=sys.stderr,
    )
    _flush()
    comm.Abort(exit_status(exc))


def install_abort_handler():
    """Make an exception that nothing catches on this rank (Ctrl-C included) abort the
    whole MPI job once its traceback is printed, as ``python -m mpi4py`` does.

    Called by :func:`pastixpy.factorize` when it starts a distributed factorization over
    MPI, and by the command line under ``mpiexec``; installing it again does nothing.
    It wraps ``sys.excepthook`` (the one in place is still called first); restore
    ``sys.__excepthook__`` to go without it. It acts only where mpi4py has initialized
    MPI (and not finalized it), in a job of more than one process, so that it may be
    installed before MPI starts.
    """
    if getattr(sys.excepthook, "pastixpy_abort", False):
        return
    previous = sys.excepthook

    def hook(exc_type, exc, tb):
        previous(exc_type, exc, tb)
        MPI = sys.modules.get("mpi4py.MPI")  # noqa: N806 (mpi4py's name); never imported here
        if MPI is None or MPI.Is_finalized() or not MPI.Is_initialized():
            return
        world = MPI.COMM_WORLD
        if world.Get_size() == 1:
            return
        _flush()
        print(
            f"pastixpy: rank {world.Get_rank()} of {world.Get_size()} ended on an uncaught "
            f"{exc_type.__name__}; the other ranks would wait for it forever: aborting the "
            "MPI job",
            file=sys.stderr,
        )
        _flush()
        world.Abort(exit_status(exc))

    hook.pastixpy_abort = True
    sys.excepthook = hook
