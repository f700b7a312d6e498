"""The distributed numeric backend: what rank 0's pipeline is handed instead of the
one-process kernels (:class:`~pastixpy.numeric.backend.NumericBackend`).

Rank 0 runs the pipeline (checks, preprocessing, analysis, retries, refinement); its
numeric phase is :meth:`DistributedBackend.factorize`: the cblks mapped onto the ranks
(:mod:`.mapping`), the :class:`~pastixpy.numeric.NumericTask` sent to the other ranks,
which serve it (:func:`.session.serve`), every rank factoring its own cblks
(:func:`.numeric.factor_rank`). The :class:`DistributedFactors` it returns are what the
pipeline and the solver read, as they read one process's factors; each solve is
collective.
"""

from dataclasses import replace

import numpy as np

from ..errors import OutOfMemoryError
from ..numeric import Footprint, NumericTask, raise_if_failed
from ..runtime import Allowance
from .mapping import proportional_mapping
from .numeric import factor_rank
from .session import FACTORIZE, SOLVE, command, exchange, gather_stats

#: Tile record fields (:meth:`pastixpy._numeric.Storage.tiles`), for ranks that hold none.
TILE_FIELDS = ("cblk", "blok", "factor", "rows", "cols", "rank", "cblks", "held", "seconds")


class DistributedBackend:
    """The numeric phase of rank 0's pipeline, spread over the :class:`~.session.Ranks`.

    ``factors``: rank 0's :class:`~.numeric.RankFactors` of the last factorization
    (None before one, or after one failed), as :func:`.session.serve` returns the other
    ranks' theirs.
    """

    def __init__(self, ranks):
        self.ranks = ranks
        self.factors = None

    def allowance(self, threads):
        """Rank 0's analysis runs as an MPI rank may: on the rank's own threads (one by
        default), as its numeric phase does, and never forks (see
        :mod:`pastixpy.runtime`)."""
        return Allowance.mpi_rank(threads)

    def factorize(
        self, B, analysis, layout, amap, kind, pivot_tol, dtype, progress, threads, compression
    ):
        """Factor B over the ranks, each on ``threads`` threads (default one); ``progress``
        is not reported. Raises as :func:`pastixpy.numeric.factorize_numeric`, and
        OutOfMemoryError where a rank could not allocate its part (the other ranks keep
        serving)."""
        ranks = self.ranks
        threads = threads or 1
        owner = proportional_mapping(layout, ranks.Get_size())
        task = NumericTask.build(B, layout, amap, kind, pivot_tol, dtype, compression)
        self.factors = None  # the previous try's memory first
        with exchange(ranks, "during a distributed factorization"):
            # The other ranks get the entries' places; their values come gathered.
            command(ranks, FACTORIZE, (replace(task, amap=amap.placement()), owner, threads))
            mine = factor_rank(ranks, task, owner, threads)
            parts = ranks.gather((mine.footprint(), mine.tiles()), root=0)
        if mine.error is not None:
            raise OutOfMemoryError(
                f"a rank could not allocate its part of the factors ({mine.error}); more "
                "ranks spread them thinner",
                needed=0,
                available=0,
            )
        raise_if_failed(mine.failed, analysis)
        self.factors = mine
        return DistributedFactors(ranks, mine, parts)

    def statistics(self, factors):
        """``"distributed"``: every rank's own statistics, and their extremes."""
        ranks = gather_stats(self.ranks, factors.mine)
        entries = [r["factor_entries_local"] for r in ranks]
        peaks = [r["peak_memory_bytes"] or 0 for r in ranks]
        return {
            "distributed": {
                "ranks": len(ranks),
                "per_rank": ranks,
                "max_entries_share": max(entries) / max(sum(entries), 1),
                "max_peak_memory_bytes": max(peaks),
                "sent_bytes": sum(r["sent_bytes"] for r in ranks),
            }
        }


class DistributedFactors:
    """The ranks' factors as rank 0's pipeline and solver read them: the
    :class:`~pastixpy.numeric.Factors` interface, by composition over rank 0's
    :class:`~.numeric.RankFactors` (``mine``) and what every rank reported.

    Solves are collective (every rank takes part in the sweeps); the diagonal and D's
    blocks are spread over the ranks and not offered.
    """

    def __init__(self, ranks, mine, parts):
        self.ranks = ranks
        self.mine = mine
        self._footprints = [footprint for footprint, _ in parts]
        self._tiles = [tiles for _, tiles in parts if tiles is not None]

    @property
    def kind(self):
        return self.mine.kind

    @property
    def layout(self):
        return self.mine.layout

    @property
    def pivots(self):
        return self.mine.pivots

    @property
    def threads(self):
        return self.mine.threads

    @property
    def dtype(self):
        return self.mine.dtype

    @property
    def perturbed(self):
        return self.mine.pivots.pert.astype(bool)

    @property
    def conj(self):
        return self.mine.kind.conj(self.dtype)

    def footprint(self):
        """Every rank's entries, bytes and compressed cblks, summed."""
        return Footprint(
            sum(f.entries for f in self._footprints),
            sum(f.nbytes for f in self._footprints),
            sum(f.compressed_cblks for f in self._footprints),
        )

    def tiles(self):
        """Every rank's compressed tiles (:meth:`pastixpy._numeric.Storage.tiles`)."""
        if not self._tiles:
            return {k: np.zeros(0, np.float64 if k == "seconds" else np.int64) for k in TILE_FIELDS}
        return {k: np.concatenate([t[k] for t in self._tiles]) for k in TILE_FIELDS}

    def solve_inplace(self, X, trans="N"):
        """As :meth:`pastixpy.numeric.LocalFactors.solve_inplace`, with every rank."""
        with exchange(self.ranks, "during a distributed solve"):
            command(self.ranks, SOLVE, (trans, X))
            return self.mine.sweep(X, trans)

    def diagonal(self):
        raise NotImplementedError("the diagonal of distributed factors is spread over the ranks")

    def d_blocks(self):
        raise NotImplementedError("the pivots of distributed factors are spread over the ranks")
