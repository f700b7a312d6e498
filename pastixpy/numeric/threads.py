"""Threads of the numeric phase: the BLAS's thread count around the kernels, and the
OpenMP pool's state across ``fork()``."""

import os
from contextlib import contextmanager

from threadpoolctl import ThreadpoolController

#: GNU OpenMP's thread pool does not survive fork(): in the child of a process that
#: ran threaded kernels, another OpenMP region would hang, so it runs them on one.
_openmp = {"used": False, "forked": False}


def _after_fork_in_child():
    _openmp["forked"] = _openmp["forked"] or _openmp["used"]


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def kernel_threads(threads):
    """The OpenMP threads kernels may run on: ``threads``, or 1 in a forked child of a
    process that ran threaded kernels. Marks the pool used when more than one."""
    if _openmp["forked"]:
        return 1
    if threads > 1:
        _openmp["used"] = True
    return threads


_blas_controller = []


@contextmanager
def blas_threads(limit):
    """Limit the BLAS to ``limit`` threads inside a ``with`` block (None: leave it).

    One threadpoolctl controller serves the process: building one scans the
    loaded libraries, milliseconds that small solves would pay each time.
    """
    if limit is None:
        yield
        return
    if not _blas_controller:
        _blas_controller.append(ThreadpoolController())
    with _blas_controller[0].limit(limits=int(limit), user_api="blas"):
        yield
