"""The one place where Python calls the factorization kernels: the panels' storage
allocated, and cblks factored, for a one-process factorization and for a rank of a
distributed one alike.

A :class:`NumericTask` is what every caller hands the kernels: the block structure, the
kind, the pivot threshold, where B's entries go and their values, the compression
parameters. :func:`allocate_storage` makes the panels for it (all of them, or one rank's
and its fan-in panels), and :func:`factor_cblks` factors them (all, or the ones marked
in ``only``), BLAS threads set around the call.
"""

from dataclasses import dataclass

import numpy as np

from .. import _numeric
from ..runtime import blas_threads, without_huge_pages


@dataclass(frozen=True)
class NumericTask:
    """What the kernels factor: one try of one factorization.

    It pickles (its arrays and the layout's): a distributed factorization sends it to
    every rank.

    Attributes
    ----------
    layout : PanelLayout
    kind : Kind
    pivot_tol : float
        Static pivoting threshold.
    dtype : numpy dtype
        The factors' precision.
    amap : AssemblyMap
        Where B's entries go (:meth:`~.layout.AssemblyMap.placement` is enough: the
        kernels read the positions, the values come gathered).
    values : (ndarray, ndarray)
        B's entries in the map's order, in ``dtype``: L's and U's (empty but for LU).
    compression : mapping or None
        The kernels' block low-rank parameters (:meth:`Compression.kernel_params`).
    compress_mask : int8 ndarray or None
        The cblks to compress (:meth:`Compression.candidates`).
    """

    layout: object
    kind: object
    pivot_tol: float
    dtype: np.dtype
    amap: object
    values: tuple
    compression: dict | None = None
    compress_mask: np.ndarray | None = None

    @classmethod
    def build(cls, B, layout, amap, kind, pivot_tol, dtype, compression=None):
        """The task of factoring canonical B (preprocessed) with the layout and map of
        its analysis; ``compression``: a :class:`~pastixpy.compression.Compression`."""
        dtype = np.dtype(dtype)
        return cls(
            layout,
            kind,
            float(pivot_tol),
            dtype,
            amap,
            amap.values(B.data, dtype),
            None if compression is None else compression.kernel_params(B, layout),
            None if compression is None else compression.candidates(layout),
        )

    @property
    def n(self):
        return int(self.layout.fcol[-1])

    @property
    def code(self):
        """The kind's code for the kernels."""
        return _numeric.KIND_CODES[self.kind.name]


def allocate_storage(task, touch_threads, owner=None, rank=0, fanin=None):
    """Zeroed panels for ``task``: every cblk's, or (``owner`` given) rank ``rank``'s and
    the fan-in panels marked in ``fanin``; only the cblks of this rank in the task's
    ``compress_mask`` are compressed. ``touch_threads`` threads take the first-touch
    page faults (as the threads that will factor them). Raises MemoryError."""
    mask = task.compress_mask
    if owner is not None and mask is not None:
        mask = np.where(owner == rank, mask, 0).astype(np.int8)
    with without_huge_pages():  # faulted in at once: no compaction stalls (see there)
        return _numeric.Storage(
            task.layout.structure,
            task.dtype,
            task.kind.two_factors,
            owners=owner,
            rank=rank,
            compress=mask,
            fanin=fanin,
            touch_threads=touch_threads,
        )


def factor_cblks(task, storage, pivots, threads, *, only=None, progress=None, one_blas=False):
    """Factor the task's cblks in ``storage`` (all of them, or those marked 1 in ``only``)
    on ``threads`` OpenMP threads; ``pivots`` (:class:`~.factors.Pivots`) is written.

    The BLAS runs on one thread inside when the kernels run several (each cblk's calls
    then on its own thread), or where ``one_blas`` asks (small factorizations: a BLAS
    thread left spinning after them takes a core from the calls that follow).

    Returns the first column (pivot order) whose LLᵀ pivot is not positive, else -1.
    Raises MemoryError where a kernel could not allocate, and what ``progress`` raised.
    """
    values_l, values_u = task.values
    with blas_threads(1 if threads > 1 or one_blas else None):
        _, failed = _numeric.factorize(
            task.layout.structure,
            storage,
            task.code,
            task.pivot_tol,
            task.amap,
            values_l,
            values_u,
            pivots,
            threads,
            progress,
            task.compression,
            only,
        )
    return failed
