"""The multilevel cycle: smoothing, F-relaxation, coarse correction, recursively.

On a level with operator A and right-hand side b (zero initial guess)::

    x ← smoother(b, x)            pre-smoothing
    x ← F-relaxation(b, x)
    e_c ≈ A_c⁻¹ R (b − A x)       coarse correction (see below)
    x ← x + P e_c
    x ← F-relaxation(b, x)
    x ← smoother(b, x)            post-smoothing

The coarse problem is solved by the factorization on the coarsest level and otherwise by:

* ``"V"``: one cycle on the next level;
* ``"W"``: ``inner`` cycles on the next level (stationary iteration);
* ``"K"`` (default): up to ``inner`` iterations of flexible GMRES on the next level's
  operator, preconditioned by its cycle, stopped early when the residual has dropped by
  ``inner_rtol`` (Notay and Vassilevski's K-cycle). For indefinite problems this matters
  a lot: a coarse level's operator approximates the fine one's near-kernel only up to
  small phase errors, and its own cycle amplifies some errors where an inner Krylov
  iteration removes them.

V and W cycles are linear operators; the K-cycle changes with its input, hence the
flexible outer Krylov method of :meth:`MultilevelSolver.solve`.
"""

import numpy as np

from ..norms import norm2
from .options import nonnegative_float, parse, positive_int

__all__ = ["CYCLES", "Cycle"]

#: Cycle options: name → {parameter: (default, check)}.
CYCLES = {
    "V": {},
    "W": {"inner": (2, positive_int)},
    "K": {"inner": (3, positive_int), "inner_rtol": (0.0, nonnegative_float)},
}


def parse_cycle(option):
    return parse(option, CYCLES, "cycle")


class Cycle:
    """Apply the multilevel cycle to a vector: an approximation of A⁻¹ b.

    Parameters
    ----------
    levels : list of Level
    kind : {"V", "W", "K"}
    inner : int
        Coarse solves per level (W) or inner FGMRES iterations (K).
    inner_rtol : float
        K-cycle: stop the inner iteration once the residual has dropped by this factor.
    single : bool
        Run the coarse levels (1 and below) in single precision: the residual restricted
        from the finest level is rounded to complex64 (float32), and so is the
        correction until it is interpolated back. Their operators are stored so.

    Attributes
    ----------
    counts : list of int
        Cycles started on each level since the counters were last reset; on the
        coarsest level, factorization solves.
    """

    def __init__(self, levels, kind="K", inner=2, inner_rtol=0.0, single=False):
        self.levels = levels
        self.kind = kind
        self.inner = inner
        self.inner_rtol = inner_rtol
        self.single = single
        self.reset_counts()

    def reset_counts(self):
        self.counts = [0] * len(self.levels)

    @property
    def linear(self):
        """Whether the cycle is a fixed linear operator (V and W cycles are)."""
        return self.kind != "K"

    def __call__(self, b):
        b = np.asarray(b)
        shape = b.shape
        x = self.cycle(0, b.reshape(shape[0]))
        return x.reshape(shape)

    def cycle(self, number, b):
        level = self.levels[number]
        self.counts[number] += 1
        if level.coarse is not None:
            # In the cycle's precision: the factors may be of another.
            return np.asarray(level.coarse.solve(b), np.result_type(b.dtype, level.A.dtype))
        A = level.A
        dtype = np.result_type(b.dtype, A.dtype)
        x = np.zeros(b.shape, dtype)
        if level.smoother is not None:
            x = level.smoother.apply(A, b, x)
        if level.f_relaxation is not None:
            x = level.f_relaxation.apply(A, b, x)
        rc = level.restrict(b - A @ x)
        if self.single and number == 0:
            rc = rc.astype(np.complex64 if rc.dtype.kind == "c" else np.float32)
        x += level.P @ self.coarse_correction(number + 1, rc)
        if level.f_relaxation is not None:
            x = level.f_relaxation.apply(A, b, x)
        if level.smoother is not None:
            x = level.smoother.apply(A, b, x)
        return x

    def coarse_correction(self, number, r):
        """An approximate solution of the level ``number`` problem A e = r."""
        level = self.levels[number]
        if level.coarse is not None or self.kind == "V":
            return self.cycle(number, r)
        if self.kind == "W":
            e = self.cycle(number, r)
            for _ in range(self.inner - 1):
                e += self.cycle(number, r - level.A @ e)
            return e
        return self._inner_fgmres(number, r)

    def _inner_fgmres(self, number, r):
        """``inner`` steps of flexible GMRES on the level's A from zero, preconditioned by
        its cycle (no restart; the small least-squares problem is solved directly)."""
        A = self.levels[number].A
        m = self.inner
        beta = float(norm2(r))
        if beta == 0.0:
            return np.zeros_like(r)
        dtype = np.result_type(r.dtype, A.dtype)
        V = [r / beta]
        Z = []
        H = np.zeros((m + 1, m), dtype)
        e1 = np.zeros(m + 1, dtype)
        e1[0] = beta
        steps = 0
        for j in range(m):
            z = self.cycle(number, V[j])
            Z.append(z)
            w = A @ z
            for _ in range(2):  # classical Gram-Schmidt, twice
                for i in range(j + 1):
                    c = np.vdot(V[i], w)
                    H[i, j] += c
                    w = w - c * V[i]
            H[j + 1, j] = norm2(w)
            steps = j + 1
            if abs(H[j + 1, j]) <= 1e-14 * abs(H[: j + 1, j]).max():
                break
            if self.inner_rtol > 0 and j + 1 < m:
                y, *_ = np.linalg.lstsq(H[: j + 2, : j + 1], e1[: j + 2], rcond=None)
                if norm2(H[: j + 2, : j + 1] @ y - e1[: j + 2]) <= self.inner_rtol * beta:
                    break
            V.append(w / H[j + 1, j])
        y, *_ = np.linalg.lstsq(H[: steps + 1, :steps], e1[: steps + 1], rcond=None)
        e = np.zeros(r.shape, dtype)
        for zi, yi in zip(Z, y, strict=True):
            e += yi * zi
        return e
