"""Numeric phase: assemble A's values into the panels of the block structure, factor, solve.

Works in pivot order on an already preprocessed matrix B (scaled, rows matched);
:mod:`pastixpy.solve` maps user vectors to and from that space.

- :mod:`.layout`: the block structure as the kernels read it, the assembly map, the
  solves' split over threads;
- :mod:`.kernels`: the one place the factorization kernels are called from (a
  :class:`~.kernels.NumericTask`, its storage, its cblks factored);
- :mod:`.factorize`: the one-process factorization (memory check, then the kernels);
- :mod:`.factors`: the :class:`Factors` interface, the one-process :class:`LocalFactors`,
  the pivots, and the triangular :func:`~.factors.sweep` of every backend;
- :mod:`.backend`: the numeric phase as the pipeline's parameter (:data:`ONE_PROCESS`);
- :mod:`.forecast`: the memory a factorization will take, before it is allocated;
- :mod:`.schur`: the factors of a Schur complement factorization (:class:`SchurFactors`:
  every cblk factored but the last, S, and the partial solves).

Threads and memory release come from :mod:`pastixpy.runtime`.
"""

from .backend import ONE_PROCESS, NumericBackend, OneProcess
from .factorize import (
    PARALLEL_MIN_FLOPS,
    factorize_numeric,
    is_small,
    numeric_forecast,
    raise_if_failed,
)
from .factors import Factors, Footprint, LocalFactors, Pivots, storage_footprint, sweep
from .kernels import NumericTask, allocate_storage, factor_cblks
from .layout import AssemblyMap, PanelLayout, SolvePlan
from .schur import SchurFactors

__all__ = [
    "SchurFactors",
    "ONE_PROCESS",
    "PARALLEL_MIN_FLOPS",
    "AssemblyMap",
    "Factors",
    "Footprint",
    "LocalFactors",
    "NumericBackend",
    "NumericTask",
    "OneProcess",
    "PanelLayout",
    "Pivots",
    "SolvePlan",
    "allocate_storage",
    "factor_cblks",
    "factorize_numeric",
    "is_small",
    "numeric_forecast",
    "raise_if_failed",
    "storage_footprint",
    "sweep",
]
