"""The numeric phase as a parameter of the pipeline.

The pipeline (:mod:`pastixpy.pipeline`) runs check → preprocess → analyze → numeric and
hands the numeric phase to a :class:`NumericBackend`: :data:`ONE_PROCESS`, the kernels
in this process (the default), or the distributed backend of
:mod:`pastixpy.distributed`, which spreads the cblks over the ranks of a communicator.
A backend also says what the analysis before it may do in this process (cores, forks:
:mod:`pastixpy.runtime`) and adds its own statistics. This layer never imports a
backend above it: the distributed one is passed in.
"""

from typing import Protocol

from ..runtime import Allowance
from .factorize import factorize_numeric
from .factors import Factors


class NumericBackend(Protocol):
    """What the pipeline asks of its numeric phase."""

    def allowance(self, threads):
        """What this process's analysis may use (:class:`pastixpy.runtime.Allowance`),
        for the ``threads`` option."""

    def factorize(
        self, B, analysis, layout, amap, kind, pivot_tol, dtype, progress, threads, compression
    ) -> Factors:
        """Factor preprocessed B (see :func:`~.factorize.factorize_numeric` for the
        parameters and what is raised); returns its :class:`~.factors.Factors`."""

    def statistics(self, factors) -> dict:
        """Statistics of this backend's own, merged into the factorization's."""


class OneProcess:
    """The kernels in this process, on its threads (:func:`factorize_numeric`)."""

    def allowance(self, threads):
        return Allowance.process(threads)

    def factorize(
        self, B, analysis, layout, amap, kind, pivot_tol, dtype, progress, threads, compression
    ):
        return factorize_numeric(
            B,
            analysis,
            layout,
            amap,
            kind,
            pivot_tol,
            dtype=dtype,
            progress=progress,
            threads=threads,
            compression=compression,
        )

    def statistics(self, factors):
        return {}


#: The default backend.
ONE_PROCESS = OneProcess()
